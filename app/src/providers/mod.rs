//! What hookbox knows about each webhook provider beyond its signature scheme: the preset that
//! configures a source for it in one line, and the handshakes a provider sends that are not
//! events.
//!
//! Every preset is a dedup source: these providers send no revisions, and their event ids are
//! unique per delivered event (a retry repeats the id). Each provider is one row of
//! [`presets!`]'s table, written in the keys a source would write (`docs/configuration.md`) and
//! read by the same readers: adding a provider is adding its row.

mod handshake;

pub use handshake::{
    Handshake, MAX_CHALLENGE_BYTES, MAX_OFFERED_SECRET_BYTES, SecretOffer, get_challenge,
    handshake_answer, secret_offer,
};

use crate::envelope::{Field, FieldRef, Mapping, Mode};
use crate::schemes::Recipe;
use crate::schemes::Scheme;

/// One provider, in a source's own keys.
struct Row {
    /// `preset = "…"`.
    name: &'static str,
    scheme: Scheme,
    /// The places of `event_id`, `object_id` and `event_type` (none: not mapped), each a list of
    /// alternatives as the config spells them.
    event_id: &'static [&'static str],
    object_id: &'static [&'static str],
    event_type: &'static [&'static str],
    /// `scheme = "hmac"`: the recipe's keys but `signed` (a recipe's defaults apply to the rest).
    recipe: &'static [(&'static str, &'static str)],
    signed: &'static [&'static str],
    /// The timestamp window the provider documents, where it is not hookbox's 300 s.
    tolerance_secs: Option<u64>,
    /// `scheme = "token"`: the header the token is in.
    token_header: Option<&'static str>,
    /// The provider hands the signing secret over in an unsigned first request.
    captures_secret: bool,
}

/// A row's defaults.
const ROW: Row = Row {
    name: "",
    scheme: Scheme::Hmac,
    event_id: &[],
    object_id: &[],
    event_type: &[],
    recipe: &[],
    signed: &[],
    tolerance_secs: None,
    token_header: None,
    captures_secret: false,
};

/// The table: `Variant => Row { … }` declares the preset and its row, in the order the presets
/// are listed.
macro_rules! presets {
    ($($variant:ident => $row:expr,)+) => {
        /// `preset = "…"` in a source: the scheme, the mode and the identity mapping of one
        /// provider.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Preset {
            $($variant),+
        }

        pub const ALL_PRESETS: [Preset; [$(stringify!($variant)),+].len()] =
            [$(Preset::$variant),+];

        impl Preset {
            fn row(self) -> &'static Row {
                match self {
                    $(Preset::$variant => &$row),+
                }
            }
        }
    };
}

presets! {
    Stripe => Row { name: "stripe", scheme: Scheme::Stripe,
        event_id: &["/id"], object_id: &["/data/object/id"], event_type: &["/type"], ..ROW },
    Github => Row { name: "github", scheme: Scheme::Github,
        event_id: &["header:x-github-delivery"], event_type: &["header:x-github-event"], ..ROW },
    Paddle => Row { name: "paddle", scheme: Scheme::Paddle,
        event_id: &["/event_id"], object_id: &["/data/id"], event_type: &["/event_type"], ..ROW },
    Shopify => Row { name: "shopify", scheme: Scheme::Shopify,
        event_id: &["header:x-shopify-event-id", "header:x-shopify-webhook-id"],
        event_type: &["header:x-shopify-topic"], ..ROW },
    Slack => Row { name: "slack", scheme: Scheme::Slack,
        event_id: &["/event_id"], event_type: &["/event/type"], ..ROW },
    // The scheme accepts the svix-* and the unbranded webhook-* headers; so does the id.
    Clerk => Row { name: "clerk", scheme: Scheme::StandardWebhooks,
        event_id: &["header:svix-id", "header:webhook-id"], object_id: &["/data/id"],
        event_type: &["/type"], ..ROW },
    Svix => Row { name: "svix", scheme: Scheme::StandardWebhooks,
        event_id: &["header:svix-id", "header:webhook-id"], object_id: &["/data/id"],
        event_type: &["/type"], ..ROW },
    Resend => Row { name: "resend", scheme: Scheme::StandardWebhooks,
        event_id: &["header:svix-id", "header:webhook-id"], object_id: &["/data/email_id"],
        event_type: &["/type"], ..ROW },
    Intercom => Row { name: "intercom",
        recipe: &[("algorithm", "sha1"), ("signature_header", "x-hub-signature"),
            ("signature_prefix", "sha1=")],
        signed: &["body"],
        event_id: &["/id"], object_id: &["/data/item/id"], event_type: &["/topic"], ..ROW },
    Typeform => Row { name: "typeform",
        recipe: &[("algorithm", "sha256"), ("signature_header", "typeform-signature"),
            ("signature_prefix", "sha256="), ("signature_encoding", "base64")],
        signed: &["body"],
        event_id: &["/event_id"], object_id: &["/form_response/token"],
        event_type: &["/event_type"], ..ROW },
    Vercel => Row { name: "vercel",
        recipe: &[("algorithm", "sha1"), ("signature_header", "x-vercel-signature")],
        signed: &["body"],
        event_id: &["/id"], object_id: &["/payload/deployment/id"], event_type: &["/type"],
        ..ROW },
    Bitbucket => Row { name: "bitbucket",
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-hub-signature"),
            ("signature_prefix", "sha256=")],
        signed: &["body"],
        event_id: &["header:x-request-uuid"], object_id: &["/repository/uuid"],
        event_type: &["header:x-event-key"], ..ROW },
    Razorpay => Row { name: "razorpay",
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-razorpay-signature")],
        signed: &["body"],
        event_id: &["header:x-razorpay-event-id"], object_id: &["/payload/payment/entity/id"],
        event_type: &["/event"], ..ROW },
    Pagerduty => Row { name: "pagerduty",
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-pagerduty-signature"),
            ("signature_prefix", "v1="), ("signature_separator", ",")],
        signed: &["body"],
        event_id: &["/event/id"], object_id: &["/event/data/id"],
        event_type: &["/event/event_type"], ..ROW },
    // The object is under a key named by the resource (`/data/issue/id`, …).
    Sentry => Row { name: "sentry",
        recipe: &[("algorithm", "sha256"), ("signature_header", "sentry-hook-signature")],
        signed: &["body"],
        event_id: &["header:request-id"], event_type: &["header:sentry-hook-resource"], ..ROW },
    Notion => Row { name: "notion", captures_secret: true,
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-notion-signature"),
            ("signature_prefix", "sha256=")],
        signed: &["body"],
        event_id: &["/id"], object_id: &["/entity/id"], event_type: &["/type"], ..ROW },
    Woocommerce => Row { name: "woocommerce",
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-wc-webhook-signature"),
            ("signature_encoding", "base64")],
        signed: &["body"],
        event_id: &["header:x-wc-webhook-delivery-id"], object_id: &["/id"],
        event_type: &["header:x-wc-webhook-topic"], ..ROW },
    Square => Row { name: "square",
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-square-hmacsha256-signature"),
            ("signature_encoding", "base64")],
        signed: &["url", "body"],
        event_id: &["/event_id"], object_id: &["/data/id"], event_type: &["/type"], ..ROW },
    // A batch: the first event names the delivery.
    Hubspot => Row { name: "hubspot",
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-hubspot-signature-v3"),
            ("signature_encoding", "base64"),
            ("timestamp_header", "x-hubspot-request-timestamp"), ("timestamp_unit", "ms")],
        signed: &["method", "url", "body", "timestamp"],
        event_id: &["/0/eventId"], object_id: &["/0/objectId"],
        event_type: &["/0/subscriptionType"], ..ROW },
    // `Idempotency-Key` (GitLab 17.4 and later) is the same on every retry; the event UUID of
    // older versions too.
    Gitlab => Row { name: "gitlab", scheme: Scheme::Token, token_header: Some("x-gitlab-token"),
        event_id: &["header:idempotency-key", "header:x-gitlab-event-uuid"],
        object_id: &["/object_attributes/id"], event_type: &["header:x-gitlab-event"], ..ROW },
    Discord => Row { name: "discord", scheme: Scheme::Discord,
        event_id: &["/id"], object_id: &["/data/id"], event_type: &["/type"], ..ROW },
    // A batch, as HubSpot's.
    Sendgrid => Row { name: "sendgrid", scheme: Scheme::Sendgrid,
        event_id: &["/0/sg_event_id"], object_id: &["/0/sg_message_id"],
        event_type: &["/0/event"], ..ROW },
    // No event id is sent: the body's digest names the event, so a retry of the same body is a
    // duplicate.
    Lemonsqueezy => Row { name: "lemonsqueezy",
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-signature")],
        signed: &["body"],
        event_id: &["body:sha256"], object_id: &["/data/id"], event_type: &["/meta/event_name"],
        ..ROW },
    Calendly => Row { name: "calendly", tolerance_secs: Some(180),
        recipe: &[("algorithm", "sha256"), ("signature_header", "calendly-webhook-signature"),
            ("signature_prefix", "v1="), ("signature_separator", ","),
            ("timestamp_prefix", "t=")],
        signed: &["timestamp", "literal:.", "body"],
        event_id: &["body:sha256"], object_id: &["/payload/uri"], event_type: &["/event"],
        ..ROW },
    Postmark => Row { name: "postmark", scheme: Scheme::Basic,
        event_id: &["body:sha256"], object_id: &["/MessageID"], event_type: &["/RecordType"],
        ..ROW },
    Zoom => Row { name: "zoom",
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-zm-signature"),
            ("signature_prefix", "v0="), ("timestamp_header", "x-zm-request-timestamp")],
        signed: &["literal:v0:", "timestamp", "literal::", "body"],
        event_id: &["body:sha256"], object_id: &["/payload/object/id"], event_type: &["/event"],
        ..ROW },
    Twitch => Row { name: "twitch", tolerance_secs: Some(600),
        recipe: &[("algorithm", "sha256"),
            ("signature_header", "twitch-eventsub-message-signature"),
            ("signature_prefix", "sha256="),
            ("timestamp_header", "twitch-eventsub-message-timestamp"),
            ("timestamp_unit", "rfc3339")],
        signed: &["header:twitch-eventsub-message-id", "timestamp", "body"],
        event_id: &["header:twitch-eventsub-message-id"],
        object_id: &["/event/broadcaster_user_id"], event_type: &["/subscription/type"],
        ..ROW },
    // The idempotency token is the same on Twilio's retries of one callback; a message's status
    // callbacks share its SID, so without the token the body names the event.
    Twilio => Row { name: "twilio", scheme: Scheme::Twilio,
        event_id: &["header:i-twilio-idempotency-token", "body:sha256"],
        object_id: &["/MessageSid", "/CallSid"],
        event_type: &["/MessageStatus", "/SmsStatus", "/CallStatus"], ..ROW },
    Mailgun => Row { name: "mailgun", scheme: Scheme::Mailgun,
        event_id: &["/event-data/id"], object_id: &["/event-data/message/headers/message-id"],
        event_type: &["/event-data/event"], ..ROW },
    // Linear's SDK allows a minute either way.
    Linear => Row { name: "linear", tolerance_secs: Some(60),
        recipe: &[("algorithm", "sha256"), ("signature_header", "linear-signature"),
            ("timestamp_field", "/webhookTimestamp"), ("timestamp_unit", "ms")],
        signed: &["body"],
        event_id: &["header:linear-delivery"], object_id: &["/data/id"], event_type: &["/type"],
        ..ROW },
    // No event id and no type are sent: every notification says "something changed" for the
    // accounts listed.
    Dropbox => Row { name: "dropbox",
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-dropbox-signature")],
        signed: &["body"],
        event_id: &["body:sha256"], object_id: &["/list_folder/accounts/0"], ..ROW },
    // A batch of events with no id: the body names the delivery.
    Asana => Row { name: "asana", captures_secret: true,
        recipe: &[("algorithm", "sha256"), ("signature_header", "x-hook-signature")],
        signed: &["body"],
        event_id: &["body:sha256"], object_id: &["/events/0/resource/gid"],
        event_type: &["/events/0/action"], ..ROW },
}

/// A row's places, read as the config reads them; none for an empty list.
fn places(spelled: &[&str]) -> Option<Field> {
    let mut refs = spelled.iter().map(|place| {
        FieldRef::parse(place).unwrap_or_else(|e| panic!("the providers' table: {e}"))
    });
    let first = Field::from(refs.next()?);
    Some(refs.fold(first, Field::or))
}

impl Preset {
    pub fn from_name(name: &str) -> Option<Preset> {
        ALL_PRESETS.into_iter().find(|preset| preset.name() == name)
    }

    /// The config spelling.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    pub fn scheme(self) -> Scheme {
        self.row().scheme
    }

    /// The timestamp window the provider documents, where it is not hookbox's 300 s: the source's
    /// `tolerance_secs` unless it sets its own.
    pub fn tolerance_secs(self) -> Option<u64> {
        self.row().tolerance_secs
    }

    /// Whether the provider hands the signing secret over in an unsigned first request (see
    /// [`secret_offer`]): such a source may start with no secret, until `hookbox handshake`
    /// has collected it.
    pub fn captures_secret(self) -> bool {
        self.row().captures_secret
    }

    /// The header of a preset whose scheme is [`Scheme::Token`].
    pub fn token_header(self) -> Option<&'static str> {
        self.row().token_header
    }

    /// The recipe of a preset whose scheme is [`Scheme::Hmac`] (each checked against the
    /// provider's vectors in `app/tests/vectors/`, `docs/providers.md`), read from its row's
    /// keys by the reader of a source's.
    pub fn recipe(self) -> Option<Recipe> {
        let row = self.row();
        if row.scheme != Scheme::Hmac {
            return None;
        }
        let text = |key: &str| {
            row.recipe
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        };
        let signed = row.signed.iter().map(|part| part.to_string()).collect();
        let recipe = Recipe::read(text, Some(signed))
            .unwrap_or_else(|problems| panic!("the providers' table, {}: {problems:?}", row.name));
        Some(recipe)
    }

    /// Where the provider puts an event's identity.
    ///
    /// Object ids are mapped only where every event has one, as a string: GitHub and Slack
    /// events are about many kinds of object, and Shopify's `id` is a JSON number.
    pub fn mapping(self) -> Mapping {
        let row = self.row();
        Mapping {
            mode: Mode::Dedup,
            event_id: places(row.event_id)
                .unwrap_or_else(|| panic!("the providers' table, {}: no event_id", row.name)),
            object_id: places(row.object_id),
            revision: None,
            snapshot: None,
            event_type: places(row.event_type),
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
