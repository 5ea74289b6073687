//! Slack: `X-Slack-Signature: v0=<hex>` over `v0:{X-Slack-Request-Timestamp}:{body}`.
//!
//! Keyed with the app's signing secret as UTF-8. The whole `v0=…` value is compared, as
//! slack_sdk does; Slack sends one signature, so rotation means configuring both secrets. The
//! timestamp is in its own header and is checked in both directions, as slack_sdk does.

use http::{HeaderMap, HeaderName};

use super::shared::{check_tolerance, hmac_sha256, match_any, parse_unix, required_header};
use super::{AuthError, SecretKey};

const TIMESTAMP: &str = "x-slack-request-timestamp";
const SIGNATURE: &str = "x-slack-signature";

pub(super) fn verify(
    headers: &HeaderMap,
    body: &[u8],
    keys: &[SecretKey],
    tolerance_secs: u64,
    now: i64,
) -> Result<(), AuthError> {
    let timestamp_text = required_header(headers, TIMESTAMP)?;
    let signature = required_header(headers, SIGNATURE)?;
    let timestamp = parse_unix(timestamp_text).ok_or(AuthError::Malformed(
        "X-Slack-Request-Timestamp is not an integer",
    ))?;
    check_tolerance(timestamp, now, tolerance_secs)?;
    match_any(keys, &[signature], |key| {
        hmac_sha256(key, &[b"v0:", timestamp_text.as_bytes(), b":", body])
            .map(|mac| format!("v0={}", hex::encode(mac)))
    })
}

pub(super) fn sign(key: &[u8], body: &[u8], now: i64) -> Vec<(HeaderName, String)> {
    let timestamp = now.to_string();
    let Some(mac) = hmac_sha256(key, &[b"v0:", timestamp.as_bytes(), b":", body]) else {
        return Vec::new();
    };
    vec![
        (HeaderName::from_static(TIMESTAMP), timestamp),
        (
            HeaderName::from_static(SIGNATURE),
            format!("v0={}", hex::encode(mac)),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::testkit::*;
    use super::*;

    const SCHEME: Scheme = Scheme::Slack;
    const NAMES: [&str; 2] = [TIMESTAMP, SIGNATURE];

    #[test]
    fn vectors() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/slack.json");
        assert!(run_vectors(SCHEME, path, 300) > 0);
    }

    scheme_tests!(SCHEME, &NAMES);

    #[test]
    fn sign_sends_both_headers() {
        let key = SCHEME
            .parse_secret("8f742231b10e8888abcd99yyyzzz85a5")
            .expect("secret");
        let signed = SCHEME.sign(&key, "ignored", b"token=x", 1_531_420_618);
        let names: Vec<_> = signed.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["x-slack-request-timestamp", "x-slack-signature"]);
        assert_eq!(signed[0].1, "1531420618");
        assert!(signed[1].1.starts_with("v0=") && signed[1].1.len() == 3 + 64);
    }
}
