//! Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of the body>`.
//!
//! Keyed with the app's API secret as UTF-8. Shopify signs no timestamp and sends one
//! signature, so rotation means configuring both secrets. The other `X-Shopify-*` headers
//! (topic, shop domain, webhook id) are not covered by the HMAC and are not checked here.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName};

use super::shared::{hmac_sha256, match_any, required_header};
use super::{AuthError, SecretKey};

const SIGNATURE: &str = "x-shopify-hmac-sha256";

pub(super) fn verify(
    headers: &HeaderMap,
    body: &[u8],
    keys: &[SecretKey],
) -> Result<(), AuthError> {
    let signature = required_header(headers, SIGNATURE)?;
    match_any(keys, &[signature], |key| {
        hmac_sha256(key, &[body]).map(|mac| STANDARD.encode(mac))
    })
}

pub(super) fn sign(key: &[u8], body: &[u8]) -> Vec<(HeaderName, String)> {
    match hmac_sha256(key, &[body]) {
        Some(mac) => vec![(HeaderName::from_static(SIGNATURE), STANDARD.encode(mac))],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::testkit::*;
    use super::*;

    const SCHEME: Scheme = Scheme::Shopify;
    const NAMES: [&str; 1] = [SIGNATURE];

    #[test]
    fn vectors() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/shopify.json");
        assert!(run_vectors(SCHEME, path, 300) > 0);
    }

    scheme_tests!(SCHEME, &NAMES);

    #[test]
    fn sign_reproduces_the_shopify_api_js_example() {
        let key = SCHEME.parse_secret("test_secret_key").expect("secret");
        let signed = SCHEME.sign(&key, "ignored", br#"{"foo": "bar"}"#, NOW);
        assert_eq!(signed.len(), 1);
        assert_eq!(signed[0].0, "x-shopify-hmac-sha256");
        assert_eq!(signed[0].1, "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g=");
    }
}
