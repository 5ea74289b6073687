//! GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`.
//!
//! The whole header value, prefix included, is compared, as octokit does. GitHub signs no
//! timestamp, so this scheme gives no replay protection beyond hookbox's idempotent ingest;
//! rotation means configuring both secrets. The legacy SHA-1 `X-Hub-Signature` is not accepted.

use http::{HeaderMap, HeaderName};

use super::shared::{hmac_sha256, match_any, required_header};
use super::{AuthError, SecretKey};

const SIGNATURE: &str = "x-hub-signature-256";

pub(super) fn verify(
    headers: &HeaderMap,
    body: &[u8],
    keys: &[SecretKey],
) -> Result<(), AuthError> {
    let signature = required_header(headers, SIGNATURE)?;
    match_any(keys, &[signature], |key| {
        hmac_sha256(key, &[body]).map(|mac| format!("sha256={}", hex::encode(mac)))
    })
}

pub(super) fn sign(key: &[u8], body: &[u8]) -> Vec<(HeaderName, String)> {
    match hmac_sha256(key, &[body]) {
        Some(mac) => vec![(
            HeaderName::from_static(SIGNATURE),
            format!("sha256={}", hex::encode(mac)),
        )],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scheme;
    use super::super::testkit::*;
    use super::*;

    const SCHEME: Scheme = Scheme::Github;
    const NAMES: [&str; 1] = [SIGNATURE];

    #[test]
    fn vectors() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/github.json");
        assert!(run_vectors(SCHEME, path, 300) > 0);
    }

    scheme_tests!(SCHEME, &NAMES);

    #[test]
    fn sign_reproduces_the_docs_example() {
        let key = SCHEME
            .parse_secret("It's a Secret to Everybody")
            .expect("secret");
        let signed = SCHEME.sign(&key, "ignored", b"Hello, World!", NOW);
        assert_eq!(signed.len(), 1, "no delivery id header is added");
        assert_eq!(signed[0].0, "x-hub-signature-256");
        assert_eq!(
            signed[0].1,
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }
}
