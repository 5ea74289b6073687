//! Standard Webhooks, and Svix, which is the same algorithm under `svix-*` header names.
//!
//! `webhook-signature` is a space-separated list of `v1,<base64 HMAC-SHA256>` entries over
//! `{webhook-id}.{webhook-timestamp}.{body}`; a sender rotating its secret sends one entry per
//! key. The secret is `whsec_<base64>` and only the decoded bytes are the key. The id and the
//! timestamp are signed, so a replayed delivery cannot be re-dated or given another id.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use http::{HeaderMap, HeaderName};

use super::public_key::{PublicKey, ed25519_verifies};
use super::shared::{check_tolerance, header, hmac_sha256, match_any, parse_unix};
use super::{AuthError, SecretKey};

const ID: &str = "webhook-id";
const TIMESTAMP: &str = "webhook-timestamp";
const SIGNATURE: &str = "webhook-signature";
const SVIX_ID: &str = "svix-id";
const SVIX_TIMESTAMP: &str = "svix-timestamp";
const SVIX_SIGNATURE: &str = "svix-signature";

const SECRET_PREFIX: &str = "whsec_";

/// The most `v1a` entries one request may carry (each is checked against every public key).
pub(super) const MAX_V1A_ENTRIES: usize = 8;

/// Standard base64 that also takes a secret without its `=` padding, as the Python reference
/// library does: a secret copied without its padding is still unambiguous.
const SECRET_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

pub(super) fn parse_secret(secret: &str) -> Result<SecretKey, String> {
    if secret.starts_with("whsk_") || secret.starts_with("whpk_") {
        return Err(
            "asymmetric (whsk_/whpk_) Standard Webhooks keys are not supported; use a whsec_ secret"
                .to_owned(),
        );
    }
    let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    if encoded.is_empty() {
        return Err("secret is empty".to_owned());
    }
    let key = SECRET_BASE64
        .decode(encoded)
        .map_err(|_| "secret is not whsec_ followed by standard base64".to_owned())?;
    if key.is_empty() {
        return Err("secret decodes to an empty key".to_owned());
    }
    Ok(SecretKey(key))
}

/// The `webhook-*` header, else its `svix-*` twin; missing is reported under the unbranded name.
///
/// When both are present they must agree: the signature covers only one of them, and identity
/// mappings may read the other (the svix and clerk presets take the event id from `svix-id`),
/// so a request carrying two different ids could pass a signed id and have another one stored.
fn either<'a>(
    headers: &'a HeaderMap,
    name: &'static str,
    svix_name: &'static str,
    mismatch: &'static str,
) -> Result<&'a str, AuthError> {
    match (header(headers, name)?, header(headers, svix_name)?) {
        (Some(value), Some(twin)) if value != twin => Err(AuthError::Malformed(mismatch)),
        (Some(value), _) | (None, Some(value)) => Ok(value),
        (None, None) => Err(AuthError::MissingHeader(name.into())),
    }
}

pub(super) fn verify(
    headers: &HeaderMap,
    body: &[u8],
    keys: &[SecretKey],
    tolerance_secs: u64,
    now: i64,
) -> Result<(), AuthError> {
    verify_with(headers, body, keys, &[], tolerance_secs, now)
}

/// [`verify`] with the source's public keys too: a `v1` entry is checked against the secrets
/// only, a `v1a` entry (Ed25519, base64) against the public keys only; one match is enough.
pub(super) fn verify_with(
    headers: &HeaderMap,
    body: &[u8],
    keys: &[SecretKey],
    public_keys: &[PublicKey],
    tolerance_secs: u64,
    now: i64,
) -> Result<(), AuthError> {
    let id = either(headers, ID, SVIX_ID, "webhook-id and svix-id differ")?;
    let timestamp_text = either(
        headers,
        TIMESTAMP,
        SVIX_TIMESTAMP,
        "webhook-timestamp and svix-timestamp differ",
    )?;
    let signatures = either(
        headers,
        SIGNATURE,
        SVIX_SIGNATURE,
        "webhook-signature and svix-signature differ",
    )?;

    // The spec forbids '.' in the id: with one, the boundary between id and timestamp in the
    // signed content would be ambiguous.
    if id.is_empty() || id.contains('.') {
        return Err(AuthError::Malformed("webhook-id is empty or contains '.'"));
    }
    let timestamp = parse_unix(timestamp_text)
        .ok_or(AuthError::Malformed("webhook-timestamp is not an integer"))?;
    check_tolerance(timestamp, now, tolerance_secs)?;

    // Entries are `version,signature`: v1 is HMAC-SHA256, v1a Ed25519. Other versions and
    // entries without a comma are skipped, as the reference libraries do.
    let entries = |wanted: &'static str| {
        signatures
            .split(' ')
            .filter_map(|entry| entry.split_once(','))
            .filter(move |(version, _)| *version == wanted)
            .map(|(_, signature)| signature)
    };
    let candidates: Vec<&str> = entries("v1").collect();
    let hmac = match_any(keys, &candidates, |key| {
        let mac = hmac_sha256(
            key,
            &[id.as_bytes(), b".", timestamp_text.as_bytes(), b".", body],
        )?;
        Some(STANDARD.encode(mac))
    });
    if hmac.is_ok() || public_keys.is_empty() {
        return hmac;
    }
    // Each v1a entry costs a hash of the whole body per key: a header may not make hookbox
    // spend more than a sender rotating its keys needs.
    let v1a: Vec<&str> = entries("v1a").collect();
    if v1a.len() > MAX_V1A_ENTRIES {
        return Err(AuthError::Malformed(
            "more than 8 v1a signatures in webhook-signature",
        ));
    }
    let signed = [id.as_bytes(), b".", timestamp_text.as_bytes(), b".", body].concat();
    let mut tried = candidates.len();
    for signature in v1a {
        tried += 1;
        let Ok(signature) = STANDARD.decode(signature) else {
            continue;
        };
        if ed25519_verifies(public_keys, &signed, &signature) {
            return Ok(());
        }
    }
    let count = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    Err(AuthError::NoMatchingSignature {
        signatures: count(tried),
        secrets: count(keys.len() + public_keys.len()),
    })
}

pub(super) fn sign(key: &[u8], msg_id: &str, body: &[u8], now: i64) -> Vec<(HeaderName, String)> {
    let timestamp = now.to_string();
    let Some(mac) = hmac_sha256(
        key,
        &[msg_id.as_bytes(), b".", timestamp.as_bytes(), b".", body],
    ) else {
        return Vec::new();
    };
    vec![
        (HeaderName::from_static(ID), msg_id.to_owned()),
        (HeaderName::from_static(TIMESTAMP), timestamp),
        (
            HeaderName::from_static(SIGNATURE),
            format!("v1,{}", STANDARD.encode(mac)),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::super::Scheme;
    use super::super::testkit::*;
    use super::*;

    const SCHEME: Scheme = Scheme::StandardWebhooks;
    const NAMES: [&str; 3] = [ID, TIMESTAMP, SIGNATURE];

    #[test]
    fn vectors_standard_webhooks() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/vectors/standard-webhooks.json"
        );
        assert!(run_vectors(SCHEME, path, 300) > 0);
    }

    #[test]
    fn vectors_svix() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/svix.json");
        assert!(run_vectors(SCHEME, path, 300) > 0);
    }

    #[test]
    fn vectors_svix_large() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/svix-large.json");
        assert!(run_vectors(SCHEME, path, 300) > 0);
    }

    scheme_tests!(SCHEME, &NAMES);

    #[test]
    fn svix_header_names_verify() {
        let key = SCHEME
            .parse_secret(&secret_for(SCHEME, "svix"))
            .expect("secret");
        let signed = signed_headers(SCHEME, &key, b"{}", NOW);
        let mut svix = HeaderMap::new();
        for (name, value) in &signed {
            let renamed = name.as_str().replacen("webhook-", "svix-", 1);
            let renamed = HeaderName::from_bytes(renamed.as_bytes()).expect("name");
            svix.insert(renamed, value.clone());
        }
        assert_eq!(SCHEME.verify(&svix, b"{}", &[key], 300, NOW), Ok(()));
    }

    #[test]
    fn several_entries_from_a_rotating_sender() {
        let old = SCHEME
            .parse_secret(&secret_for(SCHEME, "old"))
            .expect("old");
        let new = SCHEME
            .parse_secret(&secret_for(SCHEME, "new"))
            .expect("new");
        let from_old = signed_headers(SCHEME, &old, b"{}", NOW);
        let from_new = signed_headers(SCHEME, &new, b"{}", NOW);
        let both = format!(
            "v1a,ignored {}  {}",
            from_old[SIGNATURE].to_str().expect("ascii"),
            from_new[SIGNATURE].to_str().expect("ascii")
        );
        let mut headers = from_old.clone();
        headers.insert(SIGNATURE, HeaderValue::from_str(&both).expect("value"));
        for key in [old, new] {
            assert_eq!(SCHEME.verify(&headers, b"{}", &[key], 300, NOW), Ok(()));
        }
    }

    #[test]
    fn a_svix_twin_header_that_differs_from_the_signed_one_is_refused() {
        let key = SCHEME
            .parse_secret(&secret_for(SCHEME, "twin"))
            .expect("secret");
        let signed = signed_headers(SCHEME, &key, b"{}", NOW);
        let mut headers = signed.clone();
        headers.insert(SVIX_ID, HeaderValue::from_static("msg_forged"));
        assert_eq!(
            SCHEME.verify(&headers, b"{}", std::slice::from_ref(&key), 300, NOW),
            Err(AuthError::Malformed("webhook-id and svix-id differ"))
        );
        let mut timestamps = signed.clone();
        timestamps.insert(SVIX_TIMESTAMP, HeaderValue::from_static("1"));
        assert!(matches!(
            SCHEME.verify(&timestamps, b"{}", std::slice::from_ref(&key), 300, NOW),
            Err(AuthError::Malformed(_))
        ));
        // The same value under both names is what some senders send: it verifies.
        let mut twins = signed.clone();
        for (name, twin) in [
            (ID, SVIX_ID),
            (TIMESTAMP, SVIX_TIMESTAMP),
            (SIGNATURE, SVIX_SIGNATURE),
        ] {
            twins.insert(twin, signed[name].clone());
        }
        assert_eq!(SCHEME.verify(&twins, b"{}", &[key], 300, NOW), Ok(()));
    }

    #[test]
    fn id_with_a_dot_is_refused() {
        let key = SCHEME
            .parse_secret(&secret_for(SCHEME, "dot"))
            .expect("secret");
        let mut headers = HeaderMap::new();
        for (name, value) in SCHEME.sign(&key, "msg.1", b"{}", NOW) {
            headers.insert(name, HeaderValue::from_str(&value).expect("value"));
        }
        assert!(matches!(
            SCHEME.verify(&headers, b"{}", &[key], 300, NOW),
            Err(AuthError::Malformed(_))
        ));
    }

    #[test]
    fn secrets() {
        let padded = SCHEME
            .parse_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .expect("published secret");
        assert_eq!(padded.0.len(), 24);
        // Unpadded base64 decodes to the same key; the prefix is optional.
        let a = SCHEME.parse_secret("whsec_dGVzdC1rZXk=").expect("padded");
        let b = SCHEME.parse_secret("whsec_dGVzdC1rZXk").expect("unpadded");
        let c = SCHEME.parse_secret("dGVzdC1rZXk=").expect("no prefix");
        assert_eq!(a.0, b"test-key");
        assert_eq!(a.0, b.0);
        assert_eq!(a.0, c.0);
        for bad in [
            "",
            "whsec_",
            "whsec_not base64!",
            "whsec_dGVzdC1rZXk=\n",
            "whsec_secret-with-url-safe_chars",
            "whsk_AAAA",
            "whpk_AAAA",
            "whsec_====",
        ] {
            let err = SCHEME.parse_secret(bad).expect_err(bad);
            assert!(
                !err.contains("base64!") && !err.contains("url-safe"),
                "{err}"
            );
        }
    }
}
