//! The answers to providers' handshake requests: requests that prove the endpoint to the
//! provider and are not events. Each is answered only after its signature has been verified,
//! and is never archived.
//!
//! - Slack (the scheme, so a source configured key by key answers it too): saving an Events API
//!   request URL sends `{"type":"url_verification","challenge":"…"}`, which expects
//!   `{"challenge":"…"}` back.
//! - Discord (the scheme): an interactions endpoint is checked with a PING, `{"type":1}`, which
//!   expects `{"type":1}` back.
//! - Zoom (the preset): `endpoint.url_validation` carries `/payload/plainToken` and expects
//!   `{"plainToken": …, "encryptedToken": hex HMAC-SHA256(secret token, plainToken)}`, with the
//!   source's first secret.
//! - Twitch (the preset): `Twitch-Eventsub-Message-Type: webhook_callback_verification` expects
//!   the body's `/challenge` back as plain text.
//! - Asana and Notion (the presets) hand the source's signing secret over in an unsigned first
//!   request ([`secret_offer`]): Asana's `X-Hook-Secret` header, which it expects echoed,
//!   Notion's `{"verification_token": …}`. Nothing can verify it, so it is taken only while an
//!   operator waits for it (`hookbox handshake SOURCE`), and sealed to that operator.
//! - Dropbox (the preset): `GET /hooks/{source}?challenge=…`, unsigned, expects the challenge
//!   back as plain text ([`get_challenge`]). Echoing it proves only that the endpoint is
//!   hookbox's, so no signature is needed; it is bounded and answered as inert text.

use super::Preset;
use crate::schemes::{Scheme, SecretKey};

/// What a handshake is answered with (200).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handshake {
    Json(serde_json::Value),
    Text(String),
}

/// The answer to a provider's handshake request, if `body` is one; `None` for everything else.
/// `keys` are the source's secrets, the first one current.
pub fn handshake_answer(
    scheme: Scheme,
    preset: Option<Preset>,
    keys: &[SecretKey],
    headers: &http::HeaderMap,
    body: &[u8],
) -> Option<Handshake> {
    #[derive(serde::Deserialize)]
    struct Challenge {
        challenge: String,
    }
    if preset == Some(Preset::Twitch) {
        let kind = headers.get("twitch-eventsub-message-type")?;
        if kind.as_bytes() != b"webhook_callback_verification" {
            return None;
        }
        let request: Challenge = serde_json::from_slice(body).ok()?;
        return Some(Handshake::Text(request.challenge));
    }
    #[derive(serde::Deserialize)]
    struct UrlVerification {
        #[serde(rename = "type")]
        kind: String,
        challenge: String,
    }
    #[derive(serde::Deserialize)]
    struct Interaction {
        #[serde(rename = "type")]
        kind: i64,
    }
    #[derive(serde::Deserialize)]
    struct ZoomValidation {
        event: String,
        payload: ZoomToken,
    }
    #[derive(serde::Deserialize)]
    struct ZoomToken {
        #[serde(rename = "plainToken")]
        plain_token: String,
    }
    let json = match (scheme, preset) {
        (Scheme::Slack, _) => {
            let request: UrlVerification = serde_json::from_slice(body).ok()?;
            (request.kind == "url_verification")
                .then(|| serde_json::json!({ "challenge": request.challenge }))
        }
        (Scheme::Discord, _) => {
            let request: Interaction = serde_json::from_slice(body).ok()?;
            (request.kind == 1).then(|| serde_json::json!({ "type": 1 }))
        }
        (_, Some(Preset::Zoom)) => {
            let request: ZoomValidation = serde_json::from_slice(body).ok()?;
            if request.event != "endpoint.url_validation" {
                return None;
            }
            let token = request.payload.plain_token;
            let encrypted = keys.first()?.hmac_sha256_hex(token.as_bytes());
            Some(serde_json::json!({ "plainToken": token, "encryptedToken": encrypted }))
        }
        _ => None,
    }?;
    Some(Handshake::Json(json))
}

/// The longest secret a provider's first request may hand over.
pub const MAX_OFFERED_SECRET_BYTES: usize = 512;

/// A signing secret a provider hands over in its unsigned first request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretOffer {
    pub secret: String,
    /// The header the answer echoes the secret in (Asana's `X-Hook-Secret`).
    pub echo_header: Option<&'static str>,
}

/// The secret `headers` and `body` hand over, for a preset whose provider does so: `None` when
/// the request is not such a handshake, an error naming what is wrong with one.
pub fn secret_offer(
    preset: Option<Preset>,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Option<Result<SecretOffer, &'static str>> {
    let fits = |secret: &str| {
        !secret.is_empty()
            && secret.len() <= MAX_OFFERED_SECRET_BYTES
            && secret.bytes().all(|b| b.is_ascii_graphic())
    };
    match preset? {
        Preset::Asana => {
            let value = headers.get("x-hook-secret")?;
            let secret = value.to_str().unwrap_or_default();
            Some(if fits(secret) {
                Ok(SecretOffer {
                    secret: secret.to_string(),
                    echo_header: Some("x-hook-secret"),
                })
            } else {
                Err("X-Hook-Secret is not 1 to 512 visible ASCII characters")
            })
        }
        Preset::Notion => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Verification {
                verification_token: String,
            }
            let offer: Verification = serde_json::from_slice(body).ok()?;
            Some(if fits(&offer.verification_token) {
                Ok(SecretOffer {
                    secret: offer.verification_token,
                    echo_header: None,
                })
            } else {
                Err("verification_token is not 1 to 512 visible ASCII characters")
            })
        }
        _ => None,
    }
}

/// The longest challenge a GET verification echoes (Dropbox's are a few dozen characters).
pub const MAX_CHALLENGE_BYTES: usize = 256;

/// The answer to `GET /hooks/{source}` with `query`: `None` when the source's provider verifies
/// no endpoint that way (405), else the text to echo or the 400's reason.
pub fn get_challenge(
    preset: Option<Preset>,
    query: Option<&str>,
) -> Option<Result<String, String>> {
    if preset != Some(Preset::Dropbox) {
        return None;
    }
    let challenge = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(name, _)| name == "challenge")
        .map(|(_, value)| value.into_owned());
    Some(match challenge {
        None => Err("the challenge query parameter is missing".into()),
        Some(text) if text.is_empty() => Err("the challenge query parameter is empty".into()),
        Some(text) if text.len() > MAX_CHALLENGE_BYTES => Err(format!(
            "the challenge is longer than {MAX_CHALLENGE_BYTES} bytes"
        )),
        Some(text) => Ok(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asana_and_notion_hand_their_secret_over_in_their_first_request() {
        let mut headers = http::HeaderMap::new();
        headers.insert("x-hook-secret", http::HeaderValue::from_static("a1b2c3"));
        assert_eq!(
            secret_offer(Some(Preset::Asana), &headers, b""),
            Some(Ok(SecretOffer {
                secret: "a1b2c3".into(),
                echo_header: Some("x-hook-secret")
            }))
        );
        assert_eq!(secret_offer(Some(Preset::Github), &headers, b""), None);
        assert_eq!(
            secret_offer(Some(Preset::Asana), &http::HeaderMap::new(), b"{}"),
            None
        );
        let long = "x".repeat(MAX_OFFERED_SECRET_BYTES + 1);
        headers.insert("x-hook-secret", long.parse().expect("a header value"));
        assert!(matches!(
            secret_offer(Some(Preset::Asana), &headers, b""),
            Some(Err(_))
        ));
        let none = http::HeaderMap::new();
        let token =
            br#"{"verification_token":"secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl"}"#;
        assert_eq!(
            secret_offer(Some(Preset::Notion), &none, token),
            Some(Ok(SecretOffer {
                secret: "secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl".into(),
                echo_header: None
            }))
        );
        // An event is no handshake.
        let event = br#"{"id":"e1","type":"page.created","verification_token":"x"}"#;
        assert_eq!(secret_offer(Some(Preset::Notion), &none, event), None);
    }

    #[test]
    fn dropbox_alone_answers_a_get_with_its_bounded_challenge() {
        let dropbox = Some(Preset::Dropbox);
        assert_eq!(
            get_challenge(dropbox, Some("challenge=a%20b&x=1")),
            Some(Ok("a b".to_string()))
        );
        for query in [None, Some("x=1"), Some("challenge=")] {
            assert!(
                matches!(get_challenge(dropbox, query), Some(Err(_))),
                "{query:?}"
            );
        }
        let long = format!("challenge={}", "a".repeat(MAX_CHALLENGE_BYTES + 1));
        assert!(matches!(get_challenge(dropbox, Some(&long)), Some(Err(_))));
        assert_eq!(
            get_challenge(Some(Preset::Github), Some("challenge=a")),
            None
        );
        assert_eq!(get_challenge(None, Some("challenge=a")), None);
    }

    fn answer(scheme: Scheme, body: &[u8]) -> Option<serde_json::Value> {
        match handshake_answer(scheme, None, &[], &http::HeaderMap::new(), body) {
            Some(Handshake::Json(json)) => Some(json),
            _ => None,
        }
    }

    #[test]
    fn slack_url_verification_is_answered_with_its_challenge() {
        let body = br#"{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
        assert_eq!(
            answer(Scheme::Slack, body),
            Some(serde_json::json!({
                "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
            }))
        );
    }

    #[test]
    fn zooms_url_validation_is_answered_with_the_token_signed_by_the_current_secret() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/zoom.json");
        let vectors: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(path).expect("zoom.json"))
                .expect("vectors");
        let challenge = vectors
            .iter()
            .find(|v| v.get("challenge_response").is_some())
            .expect("a challenge vector");
        let secret = challenge["secret"].as_str().expect("its secret");
        let key = Scheme::Hmac.parse_secret(secret).expect("a key");
        let other = Scheme::Hmac.parse_secret("an older secret").expect("a key");
        let body = challenge["body"].as_str().expect("its body").as_bytes();
        let none = http::HeaderMap::new();
        let answered =
            handshake_answer(Scheme::Hmac, Some(Preset::Zoom), &[key, other], &none, body);
        assert_eq!(
            answered,
            Some(Handshake::Json(challenge["challenge_response"].clone()))
        );
        // Another preset's source, and a Zoom event that is no validation, are not answered.
        assert_eq!(
            handshake_answer(Scheme::Hmac, Some(Preset::Lemonsqueezy), &[], &none, body),
            None
        );
        let event = br#"{"event":"meeting.started","payload":{"plainToken":"x"}}"#;
        assert_eq!(
            handshake_answer(Scheme::Hmac, Some(Preset::Zoom), &[], &none, event),
            None
        );
    }

    #[test]
    fn twitchs_callback_verification_is_answered_with_its_challenge_as_text() {
        let mut headers = http::HeaderMap::new();
        let body = br#"{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"type":"channel.follow"}}"#;
        headers.insert(
            "twitch-eventsub-message-type",
            http::HeaderValue::from_static("webhook_callback_verification"),
        );
        assert_eq!(
            handshake_answer(Scheme::Hmac, Some(Preset::Twitch), &[], &headers, body),
            Some(Handshake::Text("pogchamp-kappa-360noscope-vohiyo".into()))
        );
        headers.insert(
            "twitch-eventsub-message-type",
            http::HeaderValue::from_static("notification"),
        );
        assert_eq!(
            handshake_answer(Scheme::Hmac, Some(Preset::Twitch), &[], &headers, body),
            None
        );
    }

    #[test]
    fn everything_else_is_not_a_handshake() {
        let challenge = br#"{"type":"url_verification","challenge":"c"}"#;
        assert_eq!(answer(Scheme::Stripe, challenge), None);
        assert_eq!(answer(Scheme::StandardWebhooks, challenge), None);
        for body in [
            &br#"{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}"#[..],
            br#"{"type":"url_verification"}"#,
            br#"{"type":"url_verification","challenge":7}"#,
            b"not json",
            b"\xff",
        ] {
            assert_eq!(answer(Scheme::Slack, body), None);
        }
    }
}
