//! Public-key signatures: keys come from the configuration (`public_keys_env`), never from a
//! request, and are parsed once at start-up; a key that does not decode stops start-up naming
//! its variable. Verification is the curve crates' (ed25519-dalek, p256), not code of ours.
//!
//! - Standard Webhooks `v1a`: Ed25519, keys `whpk_<base64 of 32 bytes>` (`standard_webhooks.rs`);
//! - Discord: Ed25519 over `X-Signature-Timestamp` + body, hex, keys of 64 hex characters;
//! - SendGrid: ECDSA P-256 with SHA-256 over `X-Twilio-Email-Event-Webhook-Timestamp` + body,
//!   base64 DER, keys as SendGrid shows them (base64 DER SubjectPublicKeyInfo) or PEM.

use std::fmt;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use http::HeaderMap;

use super::shared::{check_tolerance, header, parse_unix};
use super::{AuthError, Scheme};

/// A configured public key.
#[derive(Clone, PartialEq, Eq)]
pub enum PublicKey {
    Ed25519(ed25519_dalek::VerifyingKey),
    P256(p256::ecdsa::VerifyingKey),
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublicKey::Ed25519(_) => f.write_str("PublicKey(Ed25519)"),
            PublicKey::P256(_) => f.write_str("PublicKey(P-256)"),
        }
    }
}

/// Base64 with or without its `=` padding.
const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Whether `scheme` verifies public-key signatures (and so reads `public_keys_env`).
pub fn takes_public_keys(scheme: Scheme) -> bool {
    matches!(
        scheme,
        Scheme::StandardWebhooks | Scheme::Discord | Scheme::Sendgrid
    )
}

/// A public key as the operator configures it for `scheme`; the error says what is wrong.
pub fn parse_public_key(scheme: Scheme, text: &str) -> Result<PublicKey, String> {
    let text = text.trim();
    let ed25519 = |bytes: Vec<u8>| {
        let bytes: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| {
            format!("decodes to {} bytes, not the 32 of an Ed25519 key", b.len())
        })?;
        ed25519_dalek::VerifyingKey::from_bytes(&bytes)
            .map(PublicKey::Ed25519)
            .map_err(|_| "is not an Ed25519 public key".to_string())
    };
    match scheme {
        Scheme::StandardWebhooks => {
            let encoded = text
                .strip_prefix("whpk_")
                .ok_or("is not whpk_ followed by base64")?;
            ed25519(
                LENIENT_BASE64
                    .decode(encoded)
                    .map_err(|_| "is not whpk_ followed by base64".to_string())?,
            )
        }
        Scheme::Discord => ed25519(hex::decode(text).map_err(|_| "is not hex".to_string())?),
        Scheme::Sendgrid => {
            use p256::pkcs8::DecodePublicKey;
            // PEM is read leniently (any line width): its base64 between the armour lines.
            let base64: String = match text.strip_prefix("-----BEGIN PUBLIC KEY-----") {
                Some(rest) => rest
                    .trim_end()
                    .strip_suffix("-----END PUBLIC KEY-----")
                    .ok_or("is PEM without its END line")?
                    .split_whitespace()
                    .collect(),
                None => text.to_string(),
            };
            let der = STANDARD
                .decode(base64)
                .map_err(|_| "is neither base64 nor PEM".to_string())?;
            p256::ecdsa::VerifyingKey::from_public_key_der(&der)
                .map(PublicKey::P256)
                .map_err(|_| "is not a P-256 public key".to_string())
        }
        other => Err(format!("scheme {} takes no public keys", other.name())),
    }
}

/// Whether `signature` is Ed25519 over `message` by any of `keys`.
pub(super) fn ed25519_verifies(keys: &[PublicKey], message: &[u8], signature: &[u8]) -> bool {
    let Ok(signature) = ed25519_dalek::Signature::from_slice(signature) else {
        return false;
    };
    keys.iter().any(|key| match key {
        PublicKey::Ed25519(key) => key.verify_strict(message, &signature).is_ok(),
        PublicKey::P256(_) => false,
    })
}

/// [`AuthError::NoMatchingSignature`] for one signature and `keys`.
fn no_match(keys: usize) -> AuthError {
    AuthError::NoMatchingSignature {
        signatures: 1,
        secrets: u16::try_from(keys).unwrap_or(u16::MAX),
    }
}

/// The timestamp header's text, checked within `tolerance_secs` of `now`.
fn timestamp<'a>(
    headers: &'a HeaderMap,
    name: &'static str,
    tolerance_secs: u64,
    now: i64,
) -> Result<&'a str, AuthError> {
    let text = header(headers, name)?.ok_or(AuthError::MissingHeader(name.into()))?;
    let stamp = parse_unix(text).ok_or(AuthError::Malformed("the timestamp is not an integer"))?;
    check_tolerance(stamp, now, tolerance_secs)?;
    Ok(text)
}

/// Discord: `X-Signature-Ed25519` (hex) over `X-Signature-Timestamp` + body.
pub(super) fn verify_discord(
    headers: &HeaderMap,
    body: &[u8],
    keys: &[PublicKey],
    tolerance_secs: u64,
    now: i64,
) -> Result<(), AuthError> {
    let signature = header(headers, "x-signature-ed25519")?
        .ok_or(AuthError::MissingHeader("x-signature-ed25519".into()))?;
    let stamp = timestamp(headers, "x-signature-timestamp", tolerance_secs, now)?;
    let signature = hex::decode(signature)
        .map_err(|_| AuthError::Malformed("x-signature-ed25519 is not hex"))?;
    if ed25519_verifies(keys, &[stamp.as_bytes(), body].concat(), &signature) {
        Ok(())
    } else {
        Err(no_match(keys.len()))
    }
}

/// SendGrid: `X-Twilio-Email-Event-Webhook-Signature` (base64 DER ECDSA P-256, SHA-256) over
/// `X-Twilio-Email-Event-Webhook-Timestamp` + body.
pub(super) fn verify_sendgrid(
    headers: &HeaderMap,
    body: &[u8],
    keys: &[PublicKey],
    tolerance_secs: u64,
    now: i64,
) -> Result<(), AuthError> {
    use p256::ecdsa::signature::Verifier;
    const SIGNATURE: &str = "x-twilio-email-event-webhook-signature";
    let signature =
        header(headers, SIGNATURE)?.ok_or(AuthError::MissingHeader(SIGNATURE.into()))?;
    let stamp = timestamp(
        headers,
        "x-twilio-email-event-webhook-timestamp",
        tolerance_secs,
        now,
    )?;
    let der = STANDARD
        .decode(signature.trim())
        .map_err(|_| AuthError::Malformed("the signature is not base64"))?;
    let signature = p256::ecdsa::Signature::from_der(&der)
        .map_err(|_| AuthError::Malformed("the signature is not a DER ECDSA signature"))?;
    let message = [stamp.as_bytes(), body].concat();
    let verifies = keys.iter().any(|key| match key {
        PublicKey::P256(key) => key.verify(&message, &signature).is_ok(),
        PublicKey::Ed25519(_) => false,
    });
    if verifies {
        Ok(())
    } else {
        Err(no_match(keys.len()))
    }
}
