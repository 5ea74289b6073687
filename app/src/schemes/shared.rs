//! Helpers shared by the scheme files: raw secrets, HMAC-SHA256, constant-time matching against
//! every key, strict header and timestamp reading, and `t=…,v1=…` style signature headers.

use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::{AuthError, SecretKey};

/// A secret used as raw UTF-8 key bytes (every scheme but Standard Webhooks).
pub(super) fn raw_secret(secret: &str) -> Result<SecretKey, String> {
    if secret.is_empty() {
        return Err("secret is empty".to_owned());
    }
    if secret.trim() != secret {
        return Err("secret has leading or trailing white space".to_owned());
    }
    Ok(SecretKey(secret.as_bytes().to_vec()))
}

/// HMAC-SHA256 of the concatenation of `parts`, so no caller has to build the signed string.
/// `None` cannot happen (HMAC takes keys of any length) but is not worth a panic.
pub(super) fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> Option<[u8; 32]> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).ok()?;
    for part in parts {
        mac.update(part);
    }
    Some(mac.finalize().into_bytes().into())
}

/// Constant-time equality (the length is not secret and may leak).
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    bool::from(a.ct_eq(b))
}

/// Ok if any candidate equals the signature `expected` computes for any key.
///
/// All pairs are compared, without stopping at the first match, so the time taken does not say
/// which key or entry matched. Signatures are compared in their encoded form (hex, base64, with
/// any prefix), exactly as the reference libraries do.
pub(super) fn match_any(
    keys: &[SecretKey],
    candidates: &[&str],
    expected: impl Fn(&[u8]) -> Option<String>,
) -> Result<(), AuthError> {
    let mut matched = false;
    for key in keys {
        let Some(expected) = expected(&key.0) else {
            continue;
        };
        for candidate in candidates {
            matched |= ct_eq(expected.as_bytes(), candidate.as_bytes());
        }
    }
    if matched {
        Ok(())
    } else {
        Err(no_match(candidates.len(), keys.len()))
    }
}

/// [`AuthError::NoMatchingSignature`] for `signatures` tried against `secrets` keys.
fn no_match(signatures: usize, secrets: usize) -> AuthError {
    let count = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    AuthError::NoMatchingSignature {
        signatures: count(signatures),
        secrets: count(secrets),
    }
}

/// The value of header `name` (looked up case-insensitively), if present.
///
/// A repeated authentication header is refused rather than guessing which copy counts, and a
/// value that is not visible ASCII cannot be one any scheme produces.
pub(super) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, AuthError> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(AuthError::Malformed("an authentication header is repeated"));
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| AuthError::Malformed("an authentication header is not visible ASCII"))
}

/// Like [`header`], but absence is an error.
pub(super) fn required_header<'a>(
    headers: &'a HeaderMap,
    name: &'static str,
) -> Result<&'a str, AuthError> {
    header(headers, name)?.ok_or(AuthError::MissingHeader(name.into()))
}

/// Unix seconds as senders write them: ASCII digits, no sign, spaces or leading zeros.
///
/// Being this strict means the text in the header is the canonical decimal form, so signing the
/// header text (Slack, Paddle) and signing the re-serialised integer (Standard Webhooks, Stripe)
/// are the same bytes, and a timestamp has exactly one spelling.
pub(super) fn parse_unix(text: &str) -> Option<i64> {
    let digits_only = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let canonical = text == "0" || !text.starts_with('0');
    if digits_only && canonical {
        text.parse().ok()
    } else {
        None
    }
}

/// Fails if `ts` is more than `tolerance_secs` away from `now`, in either direction.
/// Computed in i128 so no `now`, timestamp or tolerance can overflow.
pub(super) fn check_tolerance(ts: i64, now: i64, tolerance_secs: u64) -> Result<(), AuthError> {
    let age = i128::from(now) - i128::from(ts);
    if age.unsigned_abs() > u128::from(tolerance_secs) {
        Err(AuthError::TimestampOutOfTolerance {
            age_secs: i64::try_from(age).unwrap_or(if age < 0 { i64::MIN } else { i64::MAX }),
            tolerance_secs,
        })
    } else {
        Ok(())
    }
}

/// A `t=…,v1=…` style header (Stripe, Paddle, hookbox's own), split into its parts.
pub(super) struct StampedSignatures<'a> {
    /// The timestamp as written (canonical, see [`parse_unix`]): what the signature covers.
    pub(super) timestamp_text: &'a str,
    pub(super) timestamp: i64,
    /// Every value of the signature key, in order; possibly empty strings.
    pub(super) signatures: Vec<&'a str>,
}

/// Parses `<ts_key>=<unix>{sep}<sig_key>=<mac>[{sep}<sig_key>=<mac>…]`.
///
/// Items are `key=value` split at the first `=`; unknown keys (Stripe's `v0`, Paddle's `h2`) and
/// items without `=` are ignored, so a new signature version cannot break verification and a
/// downgrade to a weaker one is impossible. Exactly one timestamp and at least one signature of
/// the expected version are required.
pub(super) fn parse_stamped<'a>(
    value: &'a str,
    sep: char,
    ts_key: &str,
    sig_key: &str,
) -> Result<StampedSignatures<'a>, AuthError> {
    let mut timestamp_text = None;
    let mut signatures = Vec::new();
    for (key, val) in value.split(sep).filter_map(|item| item.split_once('=')) {
        if key == ts_key {
            if timestamp_text.replace(val).is_some() {
                return Err(AuthError::Malformed("the timestamp is given twice"));
            }
        } else if key == sig_key {
            signatures.push(val);
        }
    }
    let timestamp_text = timestamp_text.ok_or(AuthError::Malformed("no timestamp"))?;
    let timestamp = parse_unix(timestamp_text)
        .ok_or(AuthError::Malformed("the timestamp is not an integer"))?;
    if signatures.is_empty() {
        return Err(AuthError::Malformed("no signature of the expected version"));
    }
    Ok(StampedSignatures {
        timestamp_text,
        timestamp,
        signatures,
    })
}
