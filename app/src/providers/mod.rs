//! What hookbox knows about each webhook provider beyond its signature scheme: the preset that
//! configures a source for it in one line, and the handshakes a provider sends that are not
//! events.
//!
//! Every preset is a dedup source: these providers send no revisions, and their event ids are
//! unique per delivered event (a retry repeats the id).

mod handshake;

pub use handshake::{
    Handshake, MAX_CHALLENGE_BYTES, MAX_OFFERED_SECRET_BYTES, SecretOffer, get_challenge,
    handshake_answer, secret_offer,
};

use crate::envelope::{Field, FieldRef, Mapping, Mode};
use crate::schemes::Recipe;
use crate::schemes::Scheme;
use crate::schemes::recipe::{Algorithm, Encoding, Part, SecretEncoding};

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
    Resend,
    Intercom,
    Typeform,
    Vercel,
    Bitbucket,
    Razorpay,
    Pagerduty,
    Sentry,
    Notion,
    Woocommerce,
    Square,
    Hubspot,
    Gitlab,
    Discord,
    Sendgrid,
    Lemonsqueezy,
    Calendly,
    Postmark,
    Zoom,
    Twitch,
    Twilio,
    Mailgun,
    Linear,
    Dropbox,
    Asana,
}

pub const ALL_PRESETS: [Preset; 32] = [
    Preset::Stripe,
    Preset::Github,
    Preset::Paddle,
    Preset::Shopify,
    Preset::Slack,
    Preset::Clerk,
    Preset::Svix,
    Preset::Resend,
    Preset::Intercom,
    Preset::Typeform,
    Preset::Vercel,
    Preset::Bitbucket,
    Preset::Razorpay,
    Preset::Pagerduty,
    Preset::Sentry,
    Preset::Notion,
    Preset::Woocommerce,
    Preset::Square,
    Preset::Hubspot,
    Preset::Gitlab,
    Preset::Discord,
    Preset::Sendgrid,
    Preset::Lemonsqueezy,
    Preset::Calendly,
    Preset::Postmark,
    Preset::Zoom,
    Preset::Twitch,
    Preset::Twilio,
    Preset::Mailgun,
    Preset::Linear,
    Preset::Dropbox,
    Preset::Asana,
];

/// A recipe signing `signed` with `algorithm`, its signature in `header` after `prefix`: one
/// signature, no timestamp, the secret as UTF-8.
fn plain_recipe(
    algorithm: Algorithm,
    header: &str,
    prefix: &str,
    encoding: Encoding,
    signed: Vec<Part>,
) -> Recipe {
    Recipe {
        algorithm,
        signature_header: header.to_string(),
        signature_separator: None,
        signature_prefix: prefix.to_string(),
        signature_encoding: encoding,
        signed,
        timestamp: None,
        secret_encoding: SecretEncoding::Utf8,
        secret_prefix: String::new(),
    }
}

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
            Preset::Resend => "resend",
            Preset::Intercom => "intercom",
            Preset::Typeform => "typeform",
            Preset::Vercel => "vercel",
            Preset::Bitbucket => "bitbucket",
            Preset::Razorpay => "razorpay",
            Preset::Pagerduty => "pagerduty",
            Preset::Sentry => "sentry",
            Preset::Notion => "notion",
            Preset::Woocommerce => "woocommerce",
            Preset::Square => "square",
            Preset::Hubspot => "hubspot",
            Preset::Gitlab => "gitlab",
            Preset::Discord => "discord",
            Preset::Sendgrid => "sendgrid",
            Preset::Lemonsqueezy => "lemonsqueezy",
            Preset::Calendly => "calendly",
            Preset::Postmark => "postmark",
            Preset::Zoom => "zoom",
            Preset::Twitch => "twitch",
            Preset::Twilio => "twilio",
            Preset::Mailgun => "mailgun",
            Preset::Linear => "linear",
            Preset::Dropbox => "dropbox",
            Preset::Asana => "asana",
        }
    }

    pub fn scheme(self) -> Scheme {
        match self {
            Preset::Stripe => Scheme::Stripe,
            Preset::Github => Scheme::Github,
            Preset::Paddle => Scheme::Paddle,
            Preset::Shopify => Scheme::Shopify,
            Preset::Slack => Scheme::Slack,
            Preset::Clerk | Preset::Svix | Preset::Resend => Scheme::StandardWebhooks,
            Preset::Gitlab => Scheme::Token,
            Preset::Discord => Scheme::Discord,
            Preset::Sendgrid => Scheme::Sendgrid,
            Preset::Postmark => Scheme::Basic,
            Preset::Twilio => Scheme::Twilio,
            Preset::Mailgun => Scheme::Mailgun,
            _ => Scheme::Hmac,
        }
    }

    /// The timestamp window the provider documents, where it is not hookbox's 300 s: the source's
    /// `tolerance_secs` unless it sets its own.
    pub fn tolerance_secs(self) -> Option<u64> {
        match self {
            Preset::Twitch => Some(600),
            Preset::Calendly => Some(180),
            // Linear's SDK allows a minute either way.
            Preset::Linear => Some(60),
            _ => None,
        }
    }

    /// Whether the provider hands the signing secret over in an unsigned first request (see
    /// [`secret_offer`]): such a source may start with no secret, until `hookbox handshake`
    /// has collected it.
    pub fn captures_secret(self) -> bool {
        matches!(self, Preset::Asana | Preset::Notion)
    }

    /// The header of a preset whose scheme is [`Scheme::Token`].
    pub fn token_header(self) -> Option<&'static str> {
        match self {
            Preset::Gitlab => Some("x-gitlab-token"),
            _ => None,
        }
    }

    /// The recipe of a preset whose scheme is [`Scheme::Hmac`] (each checked against the
    /// provider's vectors in `app/tests/vectors/`, `docs/providers.md`).
    pub fn recipe(self) -> Option<Recipe> {
        use crate::schemes::recipe::TimeUnit::{Milliseconds, Rfc3339, Seconds};
        use crate::schemes::recipe::TimestampAt::{BodyField, Entry, Header};
        use Algorithm::{Sha1, Sha256};
        use Encoding::{Base64, Hex};
        let of = plain_recipe;
        let timed = |recipe: Recipe, at, unit| Recipe {
            timestamp: Some((at, unit)),
            ..recipe
        };
        let listed = |recipe: Recipe| Recipe {
            signature_separator: Some(','),
            ..recipe
        };
        let body = || vec![Part::Body];
        Some(match self {
            Preset::Intercom => of(Sha1, "x-hub-signature", "sha1=", Hex, body()),
            Preset::Typeform => of(Sha256, "typeform-signature", "sha256=", Base64, body()),
            Preset::Vercel => of(Sha1, "x-vercel-signature", "", Hex, body()),
            Preset::Bitbucket => of(Sha256, "x-hub-signature", "sha256=", Hex, body()),
            Preset::Razorpay => of(Sha256, "x-razorpay-signature", "", Hex, body()),
            Preset::Pagerduty => listed(of(Sha256, "x-pagerduty-signature", "v1=", Hex, body())),
            Preset::Sentry => of(Sha256, "sentry-hook-signature", "", Hex, body()),
            Preset::Notion => of(Sha256, "x-notion-signature", "sha256=", Hex, body()),
            Preset::Woocommerce => of(Sha256, "x-wc-webhook-signature", "", Base64, body()),
            Preset::Lemonsqueezy => of(Sha256, "x-signature", "", Hex, body()),
            Preset::Dropbox => of(Sha256, "x-dropbox-signature", "", Hex, body()),
            Preset::Asana => of(Sha256, "x-hook-signature", "", Hex, body()),
            Preset::Linear => timed(
                of(Sha256, "linear-signature", "", Hex, body()),
                BodyField("/webhookTimestamp".into()),
                Milliseconds,
            ),
            Preset::Twitch => timed(
                of(
                    Sha256,
                    "twitch-eventsub-message-signature",
                    "sha256=",
                    Hex,
                    vec![
                        Part::Header("twitch-eventsub-message-id".into()),
                        Part::Timestamp,
                        Part::Body,
                    ],
                ),
                Header("twitch-eventsub-message-timestamp".into()),
                Rfc3339,
            ),
            Preset::Zoom => timed(
                of(
                    Sha256,
                    "x-zm-signature",
                    "v0=",
                    Hex,
                    vec![
                        Part::Literal("v0:".into()),
                        Part::Timestamp,
                        Part::Literal(":".into()),
                        Part::Body,
                    ],
                ),
                Header("x-zm-request-timestamp".into()),
                Seconds,
            ),
            Preset::Calendly => timed(
                listed(of(
                    Sha256,
                    "calendly-webhook-signature",
                    "v1=",
                    Hex,
                    vec![Part::Timestamp, Part::Literal(".".into()), Part::Body],
                )),
                Entry("t=".into()),
                Seconds,
            ),
            Preset::Square => of(
                Sha256,
                "x-square-hmacsha256-signature",
                "",
                Base64,
                vec![Part::Url, Part::Body],
            ),
            Preset::Hubspot => timed(
                of(
                    Sha256,
                    "x-hubspot-signature-v3",
                    "",
                    Base64,
                    vec![Part::Method, Part::Url, Part::Body, Part::Timestamp],
                ),
                Header("x-hubspot-request-timestamp".into()),
                Milliseconds,
            ),
            _ => return None,
        })
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
            Preset::Resend => (
                header("svix-id").or(FieldRef::header("webhook-id")),
                Some(at("/data/email_id")),
                at("/type"),
            ),
            Preset::Intercom => (at("/id"), Some(at("/data/item/id")), at("/topic")),
            Preset::Typeform => (
                at("/event_id"),
                Some(at("/form_response/token")),
                at("/event_type"),
            ),
            Preset::Vercel => (at("/id"), Some(at("/payload/deployment/id")), at("/type")),
            Preset::Bitbucket => (
                header("x-request-uuid"),
                Some(at("/repository/uuid")),
                header("x-event-key"),
            ),
            Preset::Razorpay => (
                header("x-razorpay-event-id"),
                Some(at("/payload/payment/entity/id")),
                at("/event"),
            ),
            Preset::Pagerduty => (
                at("/event/id"),
                Some(at("/event/data/id")),
                at("/event/event_type"),
            ),
            // The object is under a key named by the resource (`/data/issue/id`, …).
            Preset::Sentry => (header("request-id"), None, header("sentry-hook-resource")),
            Preset::Notion => (at("/id"), Some(at("/entity/id")), at("/type")),
            Preset::Woocommerce => (
                header("x-wc-webhook-delivery-id"),
                Some(at("/id")),
                header("x-wc-webhook-topic"),
            ),
            Preset::Square => (at("/event_id"), Some(at("/data/id")), at("/type")),
            // `Idempotency-Key` (GitLab 17.4 and later) is the same on every retry; the event UUID
            // of older versions too.
            Preset::Gitlab => (
                header("idempotency-key").or(FieldRef::header("x-gitlab-event-uuid")),
                Some(at("/object_attributes/id")),
                header("x-gitlab-event"),
            ),
            Preset::Discord => (at("/id"), Some(at("/data/id")), at("/type")),
            // No event id is sent: the body's digest names the event, so a retry of the same
            // body is a duplicate.
            Preset::Lemonsqueezy => (
                Field::from(FieldRef::BodyDigest),
                Some(at("/data/id")),
                at("/meta/event_name"),
            ),
            Preset::Calendly => (
                Field::from(FieldRef::BodyDigest),
                Some(at("/payload/uri")),
                at("/event"),
            ),
            Preset::Twitch => (
                header("twitch-eventsub-message-id"),
                Some(at("/event/broadcaster_user_id")),
                at("/subscription/type"),
            ),
            Preset::Zoom => (
                Field::from(FieldRef::BodyDigest),
                Some(at("/payload/object/id")),
                at("/event"),
            ),
            Preset::Postmark => (
                Field::from(FieldRef::BodyDigest),
                Some(at("/MessageID")),
                at("/RecordType"),
            ),
            // A batch, as HubSpot's.
            Preset::Sendgrid => (
                at("/0/sg_event_id"),
                Some(at("/0/sg_message_id")),
                at("/0/event"),
            ),
            // A batch: the first event names the delivery.
            Preset::Hubspot => (
                at("/0/eventId"),
                Some(at("/0/objectId")),
                at("/0/subscriptionType"),
            ),
            // The idempotency token is the same on Twilio's retries of one callback; a message's
            // status callbacks share its SID, so without the token the body names the event.
            Preset::Twilio => (
                header("i-twilio-idempotency-token").or(FieldRef::BodyDigest),
                Some(at("/MessageSid").or(FieldRef::pointer("/CallSid"))),
                at("/MessageStatus")
                    .or(FieldRef::pointer("/SmsStatus"))
                    .or(FieldRef::pointer("/CallStatus")),
            ),
            Preset::Mailgun => (
                at("/event-data/id"),
                Some(at("/event-data/message/headers/message-id")),
                at("/event-data/event"),
            ),
            Preset::Linear => (header("linear-delivery"), Some(at("/data/id")), at("/type")),
            // A batch of events with no id: the body names the delivery.
            Preset::Asana => (
                Field::from(FieldRef::BodyDigest),
                Some(at("/events/0/resource/gid")),
                at("/events/0/action"),
            ),
            // No event id and no type are sent: every notification says "something changed"
            // for the accounts listed.
            Preset::Dropbox => (
                Field::from(FieldRef::BodyDigest),
                Some(at("/list_folder/accounts/0")),
                at("/list_folder"),
            ),
        };
        Mapping {
            mode: Mode::Dedup,
            event_id,
            object_id,
            revision: None,
            snapshot: None,
            event_type: (self != Preset::Dropbox).then_some(event_type),
        }
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
            assert!(
                mapping.event_type.is_some() || preset == Preset::Dropbox,
                "{preset:?}"
            );
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
}
