//! URL pieces both halves build: the dashboard's links and the server's redirects. (URLs shown
//! to people, without their credentials, are `config::settings::redact_url`'s.)

/// Percent-encodes a query value or path segment.
pub fn urlencode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
