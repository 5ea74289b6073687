//! Twilio: `X-Twilio-Signature` is the base64 HMAC-SHA1 (HMAC-SHA256 when the request carries
//! `X-Twilio-Webhooks-Signature-Settings: …,algorithm=HMAC_SHA256`, a SharedKey's signature) of
//! the URL Twilio requested, followed for a form body by each parameter name in sorted order
//! with each of its distinct values in sorted order. A JSON body is signed through the URL: it
//! carries `bodySHA256=<hex SHA-256 of the body>`, and the signature covers the URL alone.
//!
//! The URL is `{public_url}/hooks/{source}?{query}` (hookbox sits behind a proxy, so the
//! configured origin stands for what Twilio saw). Twilio's signing is inconsistent about the
//! default port, so the URL is tried with and without it, as twilio-python does. No timestamp
//! is signed. The algorithm follows twilio-python's `RequestValidator` (vectors in
//! `app/tests/vectors/twilio.json`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderName};
use sha2::{Digest, Sha256};

use super::recipe::Request;
use super::shared::{header, match_any, required_header};
use super::{AuthError, SecretKey};

const SIGNATURE: &str = "x-twilio-signature";

/// The most fields of a form whose signature is checked.
pub const MAX_SIGNED_FIELDS: usize = 10_000;
const SETTINGS: &str = "x-twilio-webhooks-signature-settings";

/// The HMAC a request is signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Sha1,
    Sha256,
}

/// The algorithm `X-Twilio-Webhooks-Signature-Settings` names (absent: the Auth Token's SHA-1).
fn algorithm(headers: &HeaderMap) -> Result<Algorithm, AuthError> {
    let Some(settings) = header(headers, SETTINGS)? else {
        return Ok(Algorithm::Sha1);
    };
    let named = settings.split(',').find_map(|part| {
        let (name, value) = part.split_once('=')?;
        (name.trim() == "algorithm" && !value.trim().is_empty()).then(|| value.trim())
    });
    match named.map(str::to_ascii_uppercase).as_deref() {
        None | Some("HMAC_SHA1") => Ok(Algorithm::Sha1),
        Some("HMAC_SHA256") => Ok(Algorithm::Sha256),
        Some(_) => Err(AuthError::Malformed(
            "X-Twilio-Webhooks-Signature-Settings names an unknown algorithm",
        )),
    }
}

/// The string after the URL: for a form, each name (sorted) with each distinct value (sorted).
fn sorted_params(body: &[u8]) -> String {
    let mut pairs: Vec<(String, String)> = form_urlencoded::parse(body)
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs
        .into_iter()
        .map(|(name, value)| name + &value)
        .collect()
}

/// What identifies a verified request's signature, for ingest to remember (see
/// `Auth::replay_digest`): for a form, the SHA-256 of what is signed after the URL, so the same
/// parameters reordered, re-encoded or repeated are the same signed delivery; for any other body
/// the body's own SHA-256 (its hash is in the signed URL).
pub(super) fn replay_digest(headers: &HeaderMap, body: &[u8]) -> [u8; 32] {
    if crate::envelope::is_form(headers) {
        return Sha256::new()
            .chain_update(b"twilio form:")
            .chain_update(sorted_params(body))
            .finalize()
            .into();
    }
    Sha256::digest(body).into()
}

/// The URL as given and with its default port toggled: `https://a/x` and `https://a:443/x`.
fn url_variants(url: &str) -> [String; 2] {
    let other = (|| {
        let (scheme, rest) = url.split_once("://")?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        // A port is what follows the last `:` outside an IPv6 literal's brackets.
        let port_at = authority
            .rfind(':')
            .filter(|at| !authority[*at..].contains(']'));
        let host = match port_at {
            Some(at) => authority[..at].to_string(),
            None => {
                let port = if scheme.eq_ignore_ascii_case("https") {
                    443
                } else {
                    80
                };
                format!("{authority}:{port}")
            }
        };
        Some(format!("{scheme}://{host}{tail}"))
    })();
    let other = other.unwrap_or_else(|| url.to_string());
    [url.to_string(), other]
}

/// The value of `bodySHA256` in the URL's query, if it has one.
fn body_sha256(url: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or(query);
    form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "bodySHA256")
        .map(|(_, value)| value.into_owned())
}

/// What is signed after the URL, or why the request cannot be checked: a form's parameters; for
/// any other body nothing, once the URL's `bodySHA256` is the body's.
fn signed_tail(request: &Request<'_>, url: &str) -> Result<String, AuthError> {
    if crate::envelope::is_form(request.headers) {
        // Counted before anything is allocated: sorting a form of a hundred thousand fields
        // costs tens of megabytes, and Twilio's callbacks hold a few dozen.
        let fields = request.body.split(|b| *b == b'&').count();
        if fields > MAX_SIGNED_FIELDS {
            return Err(AuthError::TooManySignedFields {
                most: MAX_SIGNED_FIELDS,
            });
        }
        return Ok(sorted_params(request.body));
    }
    let declared = body_sha256(url).ok_or(AuthError::Malformed(
        "a body that is not a form needs bodySHA256 in the URL",
    ))?;
    let actual = hex::encode(Sha256::digest(request.body));
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        declared.to_ascii_lowercase().as_bytes(),
        actual.as_bytes(),
    )) {
        return Err(AuthError::BodyHashMismatch);
    }
    Ok(String::new())
}

fn mac(algorithm: Algorithm, key: &[u8], message: &[&[u8]]) -> Option<String> {
    fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Option<Vec<u8>> {
        let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key).ok()?;
        for part in parts {
            mac.update(part);
        }
        Some(mac.finalize().into_bytes().to_vec())
    }
    let bytes = match algorithm {
        Algorithm::Sha1 => run::<Hmac<sha1::Sha1>>(key, message)?,
        Algorithm::Sha256 => run::<Hmac<Sha256>>(key, message)?,
    };
    Some(STANDARD.encode(bytes))
}

pub(super) fn verify(request: &Request<'_>, keys: &[SecretKey]) -> Result<(), AuthError> {
    let url = request
        .url
        .ok_or(AuthError::Malformed("the signed URL is not configured"))?;
    let signature = required_header(request.headers, SIGNATURE)?.trim();
    let algorithm = algorithm(request.headers)?;
    let tail = signed_tail(request, url)?;
    let [as_given, toggled] = url_variants(url);
    match_any(keys, &[signature], |key| {
        mac(algorithm, key, &[as_given.as_bytes(), tail.as_bytes()])
    })
    .or_else(|_| {
        match_any(keys, &[signature], |key| {
            mac(algorithm, key, &[toggled.as_bytes(), tail.as_bytes()])
        })
    })
}

/// The `X-Twilio-Signature` Twilio sends for `request` (Auth Token signing, SHA-1). A body that
/// is not a form must already carry its `bodySHA256` in the URL.
pub(super) fn sign(key: &SecretKey, request: &Request<'_>) -> Vec<(HeaderName, String)> {
    let Some(url) = request.url else {
        return Vec::new();
    };
    let Ok(tail) = signed_tail(request, url) else {
        return Vec::new();
    };
    mac(Algorithm::Sha1, &key.0, &[url.as_bytes(), tail.as_bytes()])
        .map(|signature| vec![(HeaderName::from_static(SIGNATURE), signature)])
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_port_is_toggled_whatever_the_url_holds() {
        assert_eq!(
            url_variants("https://a.example/hooks/t?x=1"),
            [
                "https://a.example/hooks/t?x=1".to_string(),
                "https://a.example:443/hooks/t?x=1".to_string()
            ]
        );
        assert_eq!(url_variants("http://a:8080/x")[1], "http://a/x");
        assert_eq!(url_variants("http://[::1]/x")[1], "http://[::1]:80/x");
        assert_eq!(url_variants("http://[::1]:9/x")[1], "http://[::1]/x");
    }

    #[test]
    fn parameters_are_sorted_by_name_then_value_and_repeats_count_once() {
        assert_eq!(sorted_params(b"b=2&a=z&a=y&a=y&c=%2B1+2"), "ayazb2c+1 2");
    }

    #[test]
    fn a_form_reordered_or_re_encoded_has_the_digest_of_the_form_signed() {
        let mut form = HeaderMap::new();
        form.insert(
            http::header::CONTENT_TYPE,
            crate::envelope::FORM_MEDIA_TYPE.parse().expect("a value"),
        );
        let sent = replay_digest(&form, b"MessageSid=SM1&Body=Hi+there&To=%2B1555");
        for variant in [
            &b"To=%2B1555&MessageSid=SM1&Body=Hi+there"[..],
            b"Body=Hi%20there&To=%2b1555&MessageSid=SM1",
            b"MessageSid=SM1&MessageSid=SM1&Body=Hi+there&To=%2B1555",
            b"Message%53id=SM1&Body=Hi+there&To=%2B1555",
        ] {
            assert_eq!(replay_digest(&form, variant), sent, "{variant:?}");
        }
        assert_ne!(
            replay_digest(&form, b"MessageSid=SM2&Body=Hi+there&To=%2B1555"),
            sent
        );
        // A body that is not a form is signed through its hash in the URL: its own digest.
        assert_eq!(
            replay_digest(&HeaderMap::new(), b"{}"),
            <[u8; 32]>::from(Sha256::digest(b"{}"))
        );
    }

    #[test]
    fn a_form_of_more_fields_than_twilio_sends_is_refused_before_it_is_sorted() {
        let mut form = HeaderMap::new();
        form.insert(
            http::header::CONTENT_TYPE,
            crate::envelope::FORM_MEDIA_TYPE.parse().expect("a value"),
        );
        let body: String = (0..=MAX_SIGNED_FIELDS)
            .map(|i| format!("f{i}=v"))
            .collect::<Vec<_>>()
            .join("&");
        let request = Request {
            method: "POST",
            query: None,
            url: Some("https://a.example/hooks/t"),
            headers: &form,
            body: body.as_bytes(),
        };
        assert!(matches!(
            signed_tail(&request, "https://a.example/hooks/t"),
            Err(AuthError::TooManySignedFields { most: 10_000 })
        ));
        let within = body
            .rsplit_once('&')
            .map(|(head, _)| head)
            .unwrap_or_default();
        let request = Request {
            body: within.as_bytes(),
            ..request
        };
        assert!(signed_tail(&request, "https://a.example/hooks/t").is_ok());
    }

    #[test]
    fn body_sha256_is_read_from_the_query() {
        assert_eq!(
            body_sha256("https://a/x?bodySHA256=ab%43&y=1").as_deref(),
            Some("abC")
        );
        assert_eq!(body_sha256("https://a/x?y=1"), None);
    }
}
