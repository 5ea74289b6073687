//! Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>…]`.
//!
//! The MAC is lowercase hex HMAC-SHA256 of `{ts}:{body}` (a colon, not a full stop), keyed with
//! the whole `pdl_ntf…` endpoint secret. Any `h1` may match; unknown keys such as `h2` are
//! ignored, as the Node SDK does, so a future hash version does not break delivery.
//!
//! Timestamp: Paddle's SDKs allow only 5 s of age (and do not check the future). hookbox applies
//! the source's `tolerance_secs` in both directions like every other scheme, so an operator who
//! wants the SDKs' rule sets `tolerance_secs = 5`; the vector test runs with 5.

use http::{HeaderMap, HeaderName};

use super::shared::{check_tolerance, hmac_sha256, match_any, parse_stamped, required_header};
use super::{AuthError, SecretKey};

const SIGNATURE: &str = "paddle-signature";

pub(super) fn verify(
    headers: &HeaderMap,
    body: &[u8],
    keys: &[SecretKey],
    tolerance_secs: u64,
    now: i64,
) -> Result<(), AuthError> {
    let parsed = parse_stamped(required_header(headers, SIGNATURE)?, ';', "ts", "h1")?;
    check_tolerance(parsed.timestamp, now, tolerance_secs)?;
    match_any(keys, &parsed.signatures, |key| {
        hmac_sha256(key, &[parsed.timestamp_text.as_bytes(), b":", body]).map(hex::encode)
    })
}

pub(super) fn sign(key: &[u8], body: &[u8], now: i64) -> Vec<(HeaderName, String)> {
    let timestamp = now.to_string();
    match hmac_sha256(key, &[timestamp.as_bytes(), b":", body]) {
        Some(mac) => vec![(
            HeaderName::from_static(SIGNATURE),
            format!("ts={timestamp};h1={}", hex::encode(mac)),
        )],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::testkit::*;
    use super::*;

    const SCHEME: Scheme = Scheme::Paddle;
    const NAMES: [&str; 1] = [SIGNATURE];

    /// The Paddle SDKs' drift limit, which the vectors' time-drift cases test
    /// (`app/tests/vectors/README.md`).
    const PADDLE_SDK_TOLERANCE: u64 = 5;

    #[test]
    fn vectors() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/paddle.json");
        assert!(run_vectors(SCHEME, path, PADDLE_SDK_TOLERANCE) > 0);
    }

    scheme_tests!(SCHEME, &NAMES);

    #[test]
    fn sign_reproduces_the_node_sdk_example() {
        let key = SCHEME.parse_secret("VALID_SECRET").expect("secret");
        let signed = SCHEME.sign(&key, "ignored", br#"{"data": ["1", "2"]}"#, 1_698_796_800);
        assert_eq!(signed.len(), 1);
        assert_eq!(signed[0].0, "paddle-signature");
        assert_eq!(
            signed[0].1,
            "ts=1698796800;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9"
        );
    }
}
