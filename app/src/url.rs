//! URL pieces both halves build: the dashboard's links and the server's redirects.

/// A URL as pages and logs show it: credentials and the query (which may carry a token) left
/// out. `https://user:pass@host/path?token=…` → `https://host/path?…`.
pub fn shown_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let path = match path.split_once(['?', '#']) {
        Some((path, _)) => format!("{path}?…"),
        None => path.to_string(),
    };
    format!("{scheme}://{host}{path}")
}

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

#[cfg(test)]
mod tests {
    use super::shown_url;

    #[test]
    fn a_shown_url_leaves_out_credentials_and_the_query() {
        assert_eq!(
            shown_url("https://user:pa@ss@app.example:8443/hooks/in?token=s3cret#x"),
            "https://app.example:8443/hooks/in?…"
        );
        assert_eq!(
            shown_url("http://127.0.0.1:9000/hookbox"),
            "http://127.0.0.1:9000/hookbox"
        );
        assert_eq!(shown_url("http://host?key=1"), "http://host?…");
        assert_eq!(shown_url("http://u:p@host"), "http://host");
    }
}
