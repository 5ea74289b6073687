//! Shared secrets sent as they are, not signatures: `token` (a named header whose value is the
//! secret, GitLab's `X-Gitlab-Token`) and `basic` (HTTP Basic authentication, RFC 7617, with
//! secrets of the form `user:password`, as Postmark sends them). Nothing of the request is
//! covered, so a captured request verifies again with any body; the provider's own TLS is what
//! protects the secret on the way.
//!
//! Every configured secret is compared in constant time; the secret never reaches a log or an
//! answer, and the header carrying it is a credential that the archive redacts.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName};
use subtle::ConstantTimeEq;

use super::shared::{header, raw_secret};
use super::{AuthError, SecretKey};

/// `token`: the value of `token_header` equals one of the secrets.
pub(super) fn verify_token(
    headers: &HeaderMap,
    token_header: &str,
    keys: &[SecretKey],
) -> Result<(), AuthError> {
    let value = header(headers, token_header)?
        .ok_or_else(|| AuthError::MissingHeader(token_header.to_string().into()))?;
    matches_any(value.as_bytes(), keys)
}

/// `basic`: `Authorization: Basic base64(user:password)` equals one of the secrets.
pub(super) fn verify_basic(headers: &HeaderMap, keys: &[SecretKey]) -> Result<(), AuthError> {
    let value = header(headers, "authorization")?
        .ok_or(AuthError::MissingHeader("authorization".into()))?;
    let (scheme, credentials) = value.split_once(' ').ok_or(AuthError::Malformed(
        "authorization is not \"Basic <credentials>\"",
    ))?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(AuthError::Malformed("authorization is not Basic"));
    }
    let decoded = STANDARD
        .decode(credentials.trim())
        .map_err(|_| AuthError::Malformed("the Basic credentials are not base64"))?;
    matches_any(&decoded, keys)
}

/// Ok if `given` equals any key; every key is compared, without stopping at a match.
pub(super) fn matches_any(given: &[u8], keys: &[SecretKey]) -> Result<(), AuthError> {
    let mut matched = false;
    for key in keys {
        matched |= bool::from(key.0.ct_eq(given));
    }
    if matched {
        Ok(())
    } else {
        Err(AuthError::NoMatchingCredential {
            secrets: u16::try_from(keys.len()).unwrap_or(u16::MAX),
        })
    }
}

/// A `basic` secret: `user:password`, as the provider is given it.
pub(super) fn parse_basic_secret(secret: &str) -> Result<SecretKey, String> {
    let key = raw_secret(secret)?;
    if !secret.contains(':') {
        return Err("secret is not user:password".into());
    }
    Ok(key)
}

/// What a sender sends: the token in its header, or the Basic credentials.
pub(super) fn sign_token(key: &SecretKey, token_header: &str) -> Vec<(HeaderName, String)> {
    match (
        HeaderName::from_bytes(token_header.as_bytes()),
        std::str::from_utf8(&key.0),
    ) {
        (Ok(name), Ok(token)) => vec![(name, token.to_string())],
        _ => Vec::new(),
    }
}

pub(super) fn sign_basic(key: &SecretKey) -> Vec<(HeaderName, String)> {
    vec![(
        http::header::AUTHORIZATION,
        format!("Basic {}", STANDARD.encode(&key.0)),
    )]
}
