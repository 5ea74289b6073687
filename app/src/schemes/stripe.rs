//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…][,v0=…]`.
//!
//! The MAC is lowercase hex HMAC-SHA256 of `{t}.{body}`, keyed with the whole endpoint secret
//! (`whsec_…` included; unlike Standard Webhooks nothing is decoded). Several `v1` entries
//! appear while a secret is being rolled. Only `v1` is checked: Stripe tells receivers to
//! ignore other schemes (test mode adds a fake `v0`) so that no downgrade is possible.

use http::{HeaderMap, HeaderName};

use super::shared::{check_tolerance, hmac_sha256, match_any, parse_stamped, required_header};
use super::{AuthError, SecretKey};

const SIGNATURE: &str = "stripe-signature";

pub(super) fn verify(
    headers: &HeaderMap,
    body: &[u8],
    keys: &[SecretKey],
    tolerance_secs: u64,
    now: i64,
) -> Result<(), AuthError> {
    let parsed = parse_stamped(required_header(headers, SIGNATURE)?, ',', "t", "v1")?;
    check_tolerance(parsed.timestamp, now, tolerance_secs)?;
    match_any(keys, &parsed.signatures, |key| {
        hmac_sha256(key, &[parsed.timestamp_text.as_bytes(), b".", body]).map(hex::encode)
    })
}

pub(super) fn sign(key: &[u8], body: &[u8], now: i64) -> Vec<(HeaderName, String)> {
    let timestamp = now.to_string();
    match hmac_sha256(key, &[timestamp.as_bytes(), b".", body]) {
        Some(mac) => vec![(
            HeaderName::from_static(SIGNATURE),
            format!("t={timestamp},v1={}", hex::encode(mac)),
        )],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::testkit::*;
    use super::*;

    const SCHEME: Scheme = Scheme::Stripe;
    const NAMES: [&str; 1] = [SIGNATURE];

    #[test]
    fn vectors() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/stripe.json");
        assert!(run_vectors(SCHEME, path, 300) > 0);
    }

    scheme_tests!(SCHEME, &NAMES);

    #[test]
    fn sign_matches_the_stripe_format() {
        // The dotnet fixture's recipe (its secret and t) on a short body.
        let key = SCHEME.parse_secret("webhook_secret").expect("secret");
        let signed = SCHEME.sign(&key, "ignored", b"{}", 1_533_204_620);
        assert_eq!(signed.len(), 1);
        assert_eq!(signed[0].0, "stripe-signature");
        // printf '1533204620.{}' | openssl sha256 -hmac webhook_secret
        assert_eq!(
            signed[0].1,
            "t=1533204620,v1=ce7c8ae9028c255f3569f6bc3149d2ee7025705423b340b062ceba8081df3f7f"
        );
    }
}
