//! One classification of request headers, used everywhere a delivery's headers are kept or
//! shown: the archive (`server::hooks`), the event page and its copy-as-curl, and the
//! refused-requests log (`server::rejected_log`).
//!
//! - [`HeaderClass::Safe`]: a fixed allowlist of standard headers that carry nothing secret
//!   ([`SAFE_HEADERS`]), the providers' id, event and timestamp headers ([`PROVIDER_HEADERS`]),
//!   and the headers the source's own mapping reads (`header:` fields, needed again by a replay).
//! - [`HeaderClass::Signature`]: what the source's scheme reads as its signature
//!   ([`Scheme::signature_headers`]); with no source, what any scheme reads. With the body, a
//!   valid signature lets whoever holds it resend the delivery as the sender.
//! - [`HeaderClass::Secret`]: everything else. An allowlist, not a list of suspicious name
//!   parts: `authorization`, `x-api-key`, `x-gitlab-token`, `x-pwd`, `verif-hash`, `x-jwt` and
//!   whatever a sender invents next are all secret, stored and shown as `[redacted, N bytes]`.
//!
//! What each place does with the classes:
//!
//! | class     | archive           | event page, curl: operator | viewer       | refused log |
//! |-----------|-------------------|----------------------------|--------------|-------------|
//! | Safe      | kept (bounded)    | shown                      | shown        | kept (cut)  |
//! | Signature | kept (bounded)    | shown                      | `[redacted]` | redacted    |
//! | Secret    | redacted          | redacted                   | redacted     | redacted    |
//!
//! The event page classifies at display time too, so an archive row written before this
//! classification (which may hold an `x-api-key`) shows no more than a new one.

use crate::config::Source;
use crate::envelope::FieldRef;
use crate::model::Role;
use crate::schemes::Scheme;

/// How a header is kept and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderClass {
    /// Harmless: kept and shown as received (values bounded).
    Safe,
    /// A signature the source's scheme checks: kept for operators, `[redacted]` for viewers.
    Signature,
    /// Anything else (a credential, or unknown): only its size is ever kept or shown.
    Secret,
}

/// Standard request headers that carry no credential.
pub const SAFE_HEADERS: &[&str] = &[
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "cache-control",
    "cdn-loop",
    "connection",
    "content-encoding",
    "content-language",
    "content-length",
    "content-type",
    "date",
    "expect",
    "forwarded",
    "host",
    "keep-alive",
    "pragma",
    "te",
    "traceparent",
    "tracestate",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "via",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-port",
    "x-forwarded-proto",
    "x-real-ip",
    "x-request-id",
];

/// What the providers send to identify, type and time a delivery: never a signature.
pub const PROVIDER_HEADERS: &[&str] = &[
    // GitHub
    "x-github-delivery",
    "x-github-event",
    "x-github-hook-id",
    "x-github-hook-installation-target-id",
    "x-github-hook-installation-target-type",
    // Shopify
    "x-shopify-api-version",
    "x-shopify-event-id",
    "x-shopify-shop-domain",
    "x-shopify-sub-topic",
    "x-shopify-topic",
    "x-shopify-triggered-at",
    "x-shopify-webhook-id",
    // Standard Webhooks (Clerk, Svix…)
    "webhook-id",
    "webhook-timestamp",
    "svix-id",
    "svix-timestamp",
    // Slack
    "x-slack-request-timestamp",
    "x-slack-retry-num",
    "x-slack-retry-reason",
];

/// `name`'s class for a delivery to `source` (`None`: a source no longer or never configured).
pub fn classify(name: &str, source: Option<&Source>) -> HeaderClass {
    let name = name.trim();
    let is = |known: &&str| known.eq_ignore_ascii_case(name);
    let signature = match source {
        Some(source) => source.auth().signature_headers().iter().any(is),
        None => Scheme::all().any(|scheme| scheme.signature_headers().iter().any(is)),
    };
    if signature {
        return HeaderClass::Signature;
    }
    if SAFE_HEADERS.iter().any(is) || PROVIDER_HEADERS.iter().any(is) {
        return HeaderClass::Safe;
    }
    if source.is_some_and(|source| mapped_headers(source).any(|h| h.eq_ignore_ascii_case(name))) {
        return HeaderClass::Safe;
    }
    HeaderClass::Secret
}

/// The headers `source`'s mapping reads (`header:` fields): its identity, which a replay reads
/// again from the archive.
fn mapped_headers(source: &Source) -> impl Iterator<Item = &str> {
    let mapping = &source.mapping;
    std::iter::once(&mapping.event_id)
        .chain(mapping.object_id.as_ref())
        .chain(mapping.revision.as_ref())
        .chain(mapping.snapshot.as_ref())
        .chain(mapping.event_type.as_ref())
        .flat_map(|field| field.places())
        .filter_map(|place| match place {
            FieldRef::Header(name) => Some(name.as_str()),
            FieldRef::Pointer(_) | FieldRef::BodyDigest => None,
        })
}

/// A secret header's value as it is stored and shown: its size only.
pub fn redacted(bytes: usize) -> String {
    format!("[redacted, {bytes} bytes]")
}

/// A signature as a viewer sees it.
pub const SIGNATURE_REDACTED: &str = "[redacted]";

/// Whether a stored value is already a redaction (`[redacted]`, `[redacted, N bytes]`).
pub fn is_redacted(value: &str) -> bool {
    value == SIGNATURE_REDACTED
        || value
            .strip_prefix("[redacted, ")
            .and_then(|rest| rest.strip_suffix(" bytes]"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// What a stored header value of `class` is shown as to `role`, whatever the archive kept.
pub fn shown_value(class: HeaderClass, role: Role, value: &str) -> String {
    match class {
        HeaderClass::Safe => value.to_string(),
        HeaderClass::Signature if role >= Role::Operator => value.to_string(),
        HeaderClass::Signature => SIGNATURE_REDACTED.to_string(),
        HeaderClass::Secret if is_redacted(value) => value.to_string(),
        HeaderClass::Secret => redacted(value.len()),
    }
}

/// Whether a header of `class` may go into `role`'s copy-as-curl (a redacted one never does).
pub fn resent(class: HeaderClass, role: Role) -> bool {
    match class {
        HeaderClass::Safe => true,
        HeaderClass::Signature => role >= Role::Operator,
        HeaderClass::Secret => false,
    }
}

/// Header pairs as the text of a JSON object, in the pairs' order, each name and value a JSON
/// string: how the archive and the refused-requests log store headers ([`stored_headers`]
/// reads them back).
pub fn headers_json<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    for (i, (name, value)) in pairs.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, name);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, value);
    }
    out.push(b'}');
    // Only JSON's own bytes and escaped strings were written.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A stored header object (the archive's `headers`, the refused-requests log's) as name/value
/// pairs in stored order. Anything but a JSON object is nothing.
pub fn stored_headers(headers_json: &str) -> Vec<(String, String)> {
    match serde_json::from_str::<serde_json::Value>(headers_json) {
        Ok(serde_json::Value::Object(map)) => map
            .into_iter()
            .map(|(name, value)| {
                let value = match value {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                (name, value)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A stored header object (the archive's `headers`) as `role` may see it: `(name, value, may
/// be resent)` in stored order, each classified now. Anything but a JSON object is nothing.
pub fn shown_headers(
    headers_json: &str,
    source: Option<&Source>,
    role: Role,
) -> Vec<(String, String, bool)> {
    stored_headers(headers_json)
        .into_iter()
        .map(|(name, value)| {
            let class = classify(&name, source);
            let shown = shown_value(class, role, &value);
            let resend = resent(class, role) && !is_redacted(&shown);
            (name, shown, resend)
        })
        .collect()
}

/// At most `max_bytes` bytes of `text` (cut at a character boundary, `…` included where it was
/// cut), control characters (NUL among them, which PostgreSQL's text refuses) replaced by `�`.
pub fn cut(text: &str, max_bytes: usize) -> String {
    const ELLIPSIS: char = '…';
    let clean = |c: char| if c.is_control() { '\u{fffd}' } else { c };
    let whole: usize = text.chars().map(|c| clean(c).len_utf8()).sum();
    let marked = whole > max_bytes && max_bytes >= ELLIPSIS.len_utf8();
    let budget = if marked {
        max_bytes - ELLIPSIS.len_utf8()
    } else {
        max_bytes
    };
    let mut out = String::with_capacity(budget.min(whole) + 3);
    for c in text.chars().map(clean) {
        if out.len() + c.len_utf8() > budget {
            break;
        }
        out.push(c);
    }
    if marked {
        out.push(ELLIPSIS);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::path::Path;

    fn config() -> Config {
        let text = r#"
[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["S"]

[[sources]]
name = "gh"
preset = "github"
secrets_env = ["S"]

[[sources]]
name = "mapped"
scheme = "hmac-sha256"
secrets_env = ["S"]
mode = "dedup"
event_id = "header:X-Delivery-Id"
object_id = "/id"
event_type = "header:X-Event"
"#;
        Config::parse(text, Path::new("t.toml"), &|_| Some("s3cret".into())).expect("config")
    }

    #[test]
    fn secrets_are_everything_not_known_to_be_harmless() {
        let config = config();
        for source in [config.source("shop"), config.source("gh"), None] {
            for name in [
                "authorization",
                "proxy-authorization",
                "cookie",
                "x-api-key",
                "x-gitlab-token",
                "x-pwd",
                "verif-hash",
                "x-jwt",
                "x-auth",
                "api-key",
                "x-custom",
                "x-delivery-id",
            ] {
                assert_eq!(classify(name, source), HeaderClass::Secret, "{name}");
            }
            for name in ["content-type", "User-Agent", " host ", "x-request-id"] {
                assert_eq!(classify(name, source), HeaderClass::Safe, "{name}");
            }
        }
        let mapped = config.source("mapped");
        assert_eq!(classify("x-delivery-id", mapped), HeaderClass::Safe);
        assert_eq!(classify("X-Event", mapped), HeaderClass::Safe);
    }

    #[test]
    fn a_signature_is_what_the_source_s_scheme_reads() {
        let config = config();
        let (shop, gh) = (config.source("shop"), config.source("gh"));
        assert_eq!(
            classify("x-hookbox-signature", shop),
            HeaderClass::Signature
        );
        assert_eq!(classify("x-hub-signature-256", gh), HeaderClass::Signature);
        // Another scheme's signature is nothing this source checks: a secret of unknown use.
        assert_eq!(classify("x-hub-signature-256", shop), HeaderClass::Secret);
        assert_eq!(classify("stripe-signature", gh), HeaderClass::Secret);
        // Without a source (no longer configured): any scheme's.
        for scheme in Scheme::all() {
            for name in scheme.signature_headers() {
                assert_eq!(classify(name, None), HeaderClass::Signature, "{name}");
            }
        }
    }

    /// Every scheme's own headers, as its sender sends them and as it requires them, are
    /// either harmless stamps or its signature: a new scheme must declare its signature
    /// headers ([`Scheme::signature_headers`] is an exhaustive match) and this test checks them.
    #[test]
    fn every_header_each_scheme_sends_or_requires_is_classified() {
        for scheme in Scheme::all() {
            let source = Source {
                name: "s".into(),
                preset: None,
                scheme,
                recipe: None,
                token_header: None,
                token_query: None,
                public_keys_env: Vec::new(),
                public_keys: Vec::new(),
                secrets_env: Vec::new(),
                keys: Vec::new(),
                tolerance_secs: 300,
                rate_limit_per_sec: None,
                retention_days: None,
                body_retention_days: None,
                mapping: crate::envelope::Mapping::snapshot_envelope(),
                forward: Vec::new(),
                routes: Vec::new(),
            };
            let secret = match scheme {
                Scheme::StandardWebhooks => "whsec_c3RhbmRhcmQtd2ViaG9va3MtdGVzdC1rZXkh",
                _ => "a-secret",
            };
            let key = scheme.parse_secret(secret).expect("secret");
            let sent: Vec<String> = scheme
                .sign(&key, "msg_1", b"{}", 1_700_000_000)
                .into_iter()
                .map(|(name, _)| name.as_str().to_string())
                .collect();
            // The headers verification asks for, one at a time.
            let mut required = Vec::new();
            let mut headers = http::HeaderMap::new();
            while let Err(crate::schemes::AuthError::MissingHeader(name)) = scheme.verify(
                &headers,
                b"{}",
                std::slice::from_ref(&key),
                300,
                1_700_000_000,
            ) {
                assert!(
                    !required.iter().any(|r: &String| *r == name),
                    "{scheme:?} asks for {name} twice"
                );
                let name = name.into_owned();
                headers.insert(
                    http::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                    http::HeaderValue::from_static("1"),
                );
                required.push(name);
            }
            for name in sent.iter().chain(required.iter()).map(String::as_str) {
                let class = classify(name, Some(&source));
                assert_ne!(class, HeaderClass::Secret, "{scheme:?}: {name}");
                assert_eq!(
                    class == HeaderClass::Signature,
                    scheme.signature_headers().contains(&name),
                    "{scheme:?}: {name}"
                );
            }
            if scheme != Scheme::None {
                assert!(
                    sent.iter()
                        .any(|n| classify(n, Some(&source)) == HeaderClass::Signature),
                    "{scheme:?} sends a signature"
                );
            }
        }
    }

    #[test]
    fn viewers_see_safe_headers_operators_signatures_too_and_nobody_a_secret() {
        let config = config();
        let shop = config.source("shop");
        let stored = r#"{"content-type":"application/json","x-api-key":"k-123","x-hookbox-signature":"t=1,v1=ab","authorization":"[redacted]"}"#;
        let as_viewer = shown_headers(stored, shop, Role::Viewer);
        let as_operator = shown_headers(stored, shop, Role::Operator);
        let find = |shown: &[(String, String, bool)], name: &str| {
            shown
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, v, r)| (v.clone(), *r))
                .expect(name)
        };
        assert_eq!(
            find(&as_viewer, "content-type"),
            ("application/json".into(), true)
        );
        assert_eq!(
            find(&as_viewer, "x-api-key"),
            ("[redacted, 5 bytes]".into(), false)
        );
        assert_eq!(
            find(&as_operator, "x-api-key"),
            ("[redacted, 5 bytes]".into(), false)
        );
        assert_eq!(
            find(&as_viewer, "x-hookbox-signature"),
            ("[redacted]".into(), false)
        );
        assert_eq!(
            find(&as_operator, "x-hookbox-signature"),
            ("t=1,v1=ab".into(), true)
        );
        assert_eq!(
            find(&as_operator, "authorization"),
            ("[redacted]".into(), false)
        );
        assert!(shown_headers("[1]", shop, Role::Operator).is_empty());
    }

    #[test]
    fn redactions_are_recognised() {
        assert!(is_redacted("[redacted]"));
        assert!(is_redacted("[redacted, 14 bytes]"));
        assert!(!is_redacted("[redacted, x bytes]"));
        assert!(!is_redacted("[redacted, bytes]"));
        assert!(!is_redacted("Bearer x"));
    }

    #[test]
    fn cut_is_bounded_in_bytes_replaces_control_characters_and_marks_the_cut() {
        assert_eq!(cut("a\0b\nc", 20), "a\u{fffd}b\u{fffd}c");
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdef", 5), "ab…");
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcdef", 2), "ab");
        for max in 0..40 {
            let text = "é€😀x\u{1}".repeat(7);
            let out = cut(&text, max);
            assert!(out.len() <= max, "{max}: {out:?}");
        }
    }
}
