//! Mailgun: the signature is inside the JSON body, `{"signature": {"timestamp", "token",
//! "signature"}, "event-data": {…}}`, where `signature` is the hex HMAC-SHA256, under the HTTP
//! webhook signing key, of `timestamp` followed by `token`; the timestamp is Unix seconds.
//!
//! The event data is not signed. A captured delivery's signature object could be put beside
//! other event data while its timestamp is fresh, so the token is what is remembered: ingest
//! keeps its digest as the delivery's signed digest (see [`replay_digest`]), and a second
//! delivery with the same token under another event id is refused as a replayed signature.
//! Vectors: `app/tests/vectors/mailgun.json`.

use super::shared::{check_tolerance, hmac_sha256, match_any, parse_unix};
use super::{AuthError, SecretKey};

/// The signature object of a body: (timestamp, token, signature) as sent.
fn signature_object(body: &[u8]) -> Result<(String, String, String), AuthError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| AuthError::MalformedBody("the body is not UTF-8 JSON"))?;
    let doc =
        crate::json::parse(text).map_err(|_| AuthError::MalformedBody("the body is not JSON"))?;
    let field = |name: &'static str| {
        doc.pointer(&format!("/signature/{name}"))
            .and_then(|node| node.as_str())
            .map(str::to_string)
            .ok_or(AuthError::MalformedBody(match name {
                "timestamp" => "the body has no signature.timestamp",
                "token" => "the body has no signature.token",
                _ => "the body has no signature.signature",
            }))
    };
    Ok((field("timestamp")?, field("token")?, field("signature")?))
}

pub(super) fn verify(
    body: &[u8],
    keys: &[SecretKey],
    tolerance_secs: u64,
    now: i64,
) -> Result<(), AuthError> {
    let (timestamp, token, signature) = signature_object(body)?;
    let secs = parse_unix(&timestamp).ok_or(AuthError::MalformedBody(
        "signature.timestamp is not an integer",
    ))?;
    check_tolerance(secs, now, tolerance_secs)?;
    let signature = signature.to_ascii_lowercase();
    match_any(keys, &[signature.as_str()], |key| {
        hmac_sha256(key, &[timestamp.as_bytes(), token.as_bytes()]).map(hex::encode)
    })
}

/// What identifies a signature, for ingest to remember: the SHA-256 of the token (unique per
/// delivery Mailgun signs). `None` when the body has none (it did not verify).
pub(super) fn replay_digest(body: &[u8]) -> Option<[u8; 32]> {
    use sha2::{Digest, Sha256};
    let (_, token, _) = signature_object(body).ok()?;
    Some(
        Sha256::new()
            .chain_update(b"mailgun token:")
            .chain_update(token)
            .finalize()
            .into(),
    )
}
