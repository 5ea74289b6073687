//! What hookbox knows about each webhook provider beyond its signature scheme: the preset that
//! configures a source for it in one line, and the handshakes a provider sends that are not
//! events.
//!
//! Every preset is a dedup source: these providers send no revisions, and their event ids are
//! unique per delivered event (a retry repeats the id).

use crate::envelope::{Field, FieldRef, Mapping, Mode};
use crate::schemes::Scheme;

/// `preset = "…"` in a source: the scheme, the mode and the identity mapping of one provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    Stripe,
    Github,
    Paddle,
    Shopify,
    Slack,
    Clerk,
    Svix,
}

pub const ALL_PRESETS: [Preset; 7] = [
    Preset::Stripe,
    Preset::Github,
    Preset::Paddle,
    Preset::Shopify,
    Preset::Slack,
    Preset::Clerk,
    Preset::Svix,
];

impl Preset {
    pub fn from_name(name: &str) -> Option<Preset> {
        ALL_PRESETS.into_iter().find(|preset| preset.name() == name)
    }

    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Stripe => "stripe",
            Preset::Github => "github",
            Preset::Paddle => "paddle",
            Preset::Shopify => "shopify",
            Preset::Slack => "slack",
            Preset::Clerk => "clerk",
            Preset::Svix => "svix",
        }
    }

    pub fn scheme(self) -> Scheme {
        match self {
            Preset::Stripe => Scheme::Stripe,
            Preset::Github => Scheme::Github,
            Preset::Paddle => Scheme::Paddle,
            Preset::Shopify => Scheme::Shopify,
            Preset::Slack => Scheme::Slack,
            Preset::Clerk | Preset::Svix => Scheme::StandardWebhooks,
        }
    }

    /// Where the provider puts an event's identity.
    ///
    /// Object ids are mapped only where every event has one, as a string: GitHub and Slack
    /// events are about many kinds of object, and Shopify's `id` is a JSON number.
    pub fn mapping(self) -> Mapping {
        let at = |pointer| Field::from(FieldRef::pointer(pointer));
        let header = |name| Field::from(FieldRef::header(name));
        let (event_id, object_id, event_type) = match self {
            Preset::Stripe => (at("/id"), Some(at("/data/object/id")), at("/type")),
            Preset::Github => (header("x-github-delivery"), None, header("x-github-event")),
            Preset::Paddle => (at("/event_id"), Some(at("/data/id")), at("/event_type")),
            Preset::Shopify => (
                header("x-shopify-event-id").or(FieldRef::header("x-shopify-webhook-id")),
                None,
                header("x-shopify-topic"),
            ),
            Preset::Slack => (at("/event_id"), None, at("/event/type")),
            // The scheme accepts the svix-* and the unbranded webhook-* headers; so does the id.
            Preset::Clerk | Preset::Svix => (
                header("svix-id").or(FieldRef::header("webhook-id")),
                Some(at("/data/id")),
                at("/type"),
            ),
        };
        Mapping {
            mode: Mode::Dedup,
            event_id,
            object_id,
            revision: None,
            snapshot: None,
            event_type: Some(event_type),
        }
    }
}

/// The answer to a provider's handshake request, if `body` is one; `None` for everything else.
///
/// A handshake proves the endpoint to the provider and is not an event: it is answered only
/// after its signature has been verified, and it is not archived. The scheme, not the preset,
/// decides, so a Slack source configured key by key answers it too.
///
/// Slack: saving an Events API request URL sends `{"type":"url_verification","challenge":"…"}`,
/// which expects `{"challenge":"…"}` back.
pub fn handshake_answer(scheme: Scheme, body: &[u8]) -> Option<serde_json::Value> {
    #[derive(serde::Deserialize)]
    struct UrlVerification {
        #[serde(rename = "type")]
        kind: String,
        challenge: String,
    }
    match scheme {
        Scheme::Slack => {
            let request: UrlVerification = serde_json::from_slice(body).ok()?;
            (request.kind == "url_verification")
                .then(|| serde_json::json!({ "challenge": request.challenge }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_every_preset_is_dedup() {
        for preset in ALL_PRESETS {
            assert_eq!(Preset::from_name(preset.name()), Some(preset));
            let mapping = preset.mapping();
            assert_eq!(mapping.mode, Mode::Dedup, "{preset:?}");
            assert_eq!((mapping.revision, mapping.snapshot), (None, None));
            assert!(mapping.event_type.is_some(), "{preset:?}");
        }
        assert_eq!(Preset::from_name("Stripe"), None);
        assert_eq!(Preset::from_name("standard-webhooks"), None);
    }

    #[test]
    fn identity_lives_where_each_provider_puts_it() {
        let spelled = |preset: Preset| {
            let m = preset.mapping();
            let show = |f: Option<Field>| f.map(|f| f.to_string()).unwrap_or_default();
            (
                m.event_id.to_string(),
                show(m.object_id),
                show(m.event_type),
            )
        };
        let row = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        assert_eq!(
            spelled(Preset::Stripe),
            row("/id", "/data/object/id", "/type")
        );
        assert_eq!(
            spelled(Preset::Github),
            row("header:x-github-delivery", "", "header:x-github-event")
        );
        assert_eq!(
            spelled(Preset::Paddle),
            row("/event_id", "/data/id", "/event_type")
        );
        assert_eq!(
            spelled(Preset::Shopify),
            row(
                r#"["header:x-shopify-event-id", "header:x-shopify-webhook-id"]"#,
                "",
                "header:x-shopify-topic"
            )
        );
        assert_eq!(spelled(Preset::Slack), row("/event_id", "", "/event/type"));
        for preset in [Preset::Svix, Preset::Clerk] {
            assert_eq!(preset.scheme(), Scheme::StandardWebhooks);
            assert_eq!(
                spelled(preset),
                row(
                    r#"["header:svix-id", "header:webhook-id"]"#,
                    "/data/id",
                    "/type"
                )
            );
        }
    }

    #[test]
    fn slack_url_verification_is_answered_with_its_challenge() {
        let body = br#"{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;

        let answer = handshake_answer(Scheme::Slack, body);

        assert_eq!(
            answer,
            Some(serde_json::json!({
                "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
            }))
        );
    }

    #[test]
    fn everything_else_is_not_a_handshake() {
        let challenge = br#"{"type":"url_verification","challenge":"c"}"#;
        assert_eq!(handshake_answer(Scheme::Stripe, challenge), None);
        assert_eq!(handshake_answer(Scheme::StandardWebhooks, challenge), None);
        for body in [
            &br#"{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}"#[..],
            br#"{"type":"url_verification"}"#,
            br#"{"type":"url_verification","challenge":7}"#,
            b"not json",
            b"\xff",
        ] {
            assert_eq!(handshake_answer(Scheme::Slack, body), None);
        }
    }
}
