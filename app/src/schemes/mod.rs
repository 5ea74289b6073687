//! How hookbox authenticates a delivery, one file per signing scheme (the schemes table of
//! `docs/webhooks.md`).
//!
//! A configured secret is turned into key bytes once, at start-up ([`Scheme::parse_secret`]), so a
//! bad secret stops the process instead of failing every request. [`Scheme::verify`] then checks a
//! request against every key, which is how secret rotation works. Everything in a request is
//! parsed without panicking, and signatures are compared in constant time so a forger cannot
//! learn how close a guess came. [`Scheme::sign`] is the sender's side, for `hookbox send` and tests.
//!
//! The vectors the tests run, their format, their sources and the points where the providers'
//! own libraries differ are in `app/tests/vectors/README.md`.
//!
//! Here: [`Scheme`] and [`SecretKey`]. Why a request fails: [`AuthError`] (`error.rs`). What
//! the scheme files share (headers, timestamps, HMAC, constant-time matching): `shared.rs`.

mod auth;
mod error;
mod shared;

mod github;
mod hmac_sha256;
mod mailgun;
mod paddle;
pub mod public_key;
pub mod recipe;
mod shared_secret;
mod shopify;
mod slack;
mod standard_webhooks;
mod stripe;
mod twilio;

pub use auth::Auth;
pub use error::AuthError;
pub use public_key::PublicKey;
pub use recipe::{Recipe, Request};

use std::fmt;

use http::{HeaderMap, HeaderName};
use shared::raw_secret;

/// A way a sender signs its webhooks, named in a source's `scheme` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    StandardWebhooks,
    Stripe,
    Github,
    Paddle,
    Shopify,
    Slack,
    HmacSha256,
    /// A recipe of the source's own keys (`recipe.rs`): everything it does is the recipe's, so
    /// it is used through [`Auth`], never alone, and is not among [`Scheme::all`].
    Hmac,
    /// A named header whose value is one of the secrets (`token_header`, through [`Auth`]).
    Token,
    /// HTTP Basic authentication with secrets `user:password`.
    Basic,
    /// Discord's Ed25519 signatures, with the application's public keys (through [`Auth`]).
    Discord,
    /// SendGrid's ECDSA P-256 signatures, with its verification keys (through [`Auth`]).
    Sendgrid,
    /// Twilio's signature of the URL and the form's sorted parameters (through [`Auth`], which
    /// has the URL).
    Twilio,
    /// Mailgun's signature object inside the JSON body.
    Mailgun,
    None,
}

/// The schemes written as code, whose every property is known without a source (Twilio's
/// needs the source's URL, Mailgun's reads the body, the public-key schemes need keys).
const ALL_SCHEMES: [Scheme; 8] = [
    Scheme::StandardWebhooks,
    Scheme::Stripe,
    Scheme::Github,
    Scheme::Paddle,
    Scheme::Shopify,
    Scheme::Slack,
    Scheme::HmacSha256,
    Scheme::None,
];

impl Scheme {
    /// The scheme a config file names, e.g. `"standard-webhooks"`; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Scheme> {
        ALL_SCHEMES
            .into_iter()
            .chain([
                Scheme::Hmac,
                Scheme::Token,
                Scheme::Basic,
                Scheme::Discord,
                Scheme::Sendgrid,
                Scheme::Twilio,
                Scheme::Mailgun,
            ])
            .find(|scheme| scheme.name() == name)
    }

    /// The name used in config files, the inverse of [`Scheme::from_name`].
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::StandardWebhooks => "standard-webhooks",
            Scheme::Stripe => "stripe",
            Scheme::Github => "github",
            Scheme::Paddle => "paddle",
            Scheme::Shopify => "shopify",
            Scheme::Slack => "slack",
            Scheme::HmacSha256 => "hmac-sha256",
            Scheme::Hmac => "hmac",
            Scheme::Token => "token",
            Scheme::Basic => "basic",
            Scheme::Discord => "discord",
            Scheme::Sendgrid => "sendgrid",
            Scheme::Twilio => "twilio",
            Scheme::Mailgun => "mailgun",
            Scheme::None => "none",
        }
    }

    /// Every scheme, for whatever must cover them all (the header classification).
    pub fn all() -> impl Iterator<Item = Scheme> {
        ALL_SCHEMES.into_iter()
    }

    /// The headers this scheme reads a signature from (lower case): what `app::headers`
    /// classifies as a signature, kept for operators and redacted for viewers. The ids and
    /// timestamps it reads besides are harmless (`app::headers::PROVIDER_HEADERS`).
    pub fn signature_headers(&self) -> &'static [&'static str] {
        match self {
            Scheme::StandardWebhooks => &["webhook-signature", "svix-signature"],
            Scheme::Stripe => &["stripe-signature"],
            Scheme::Github => &["x-hub-signature-256"],
            Scheme::Paddle => &["paddle-signature"],
            Scheme::Shopify => &["x-shopify-hmac-sha256"],
            Scheme::Slack => &["x-slack-signature"],
            Scheme::HmacSha256 => &["x-hookbox-signature"],
            Scheme::Discord => &["x-signature-ed25519"],
            Scheme::Sendgrid => &["x-twilio-email-event-webhook-signature"],
            Scheme::Twilio => &["x-twilio-signature"],
            // Mailgun's signature is in the body, not a header.
            Scheme::Mailgun => &[],
            // The source's recipe names it ([`Auth::signature_headers`]); a token or Basic
            // credentials are the secret itself, redacted as credentials, never kept.
            Scheme::Hmac | Scheme::Token | Scheme::Basic | Scheme::None => &[],
        }
    }

    /// Whether the signature covers a timestamp, i.e. whether `tolerance_secs` means anything.
    pub fn has_timestamp(&self) -> bool {
        match self {
            Scheme::StandardWebhooks
            | Scheme::Stripe
            | Scheme::Paddle
            | Scheme::Slack
            | Scheme::HmacSha256
            | Scheme::Discord
            | Scheme::Sendgrid
            | Scheme::Mailgun => true,
            Scheme::Github
            | Scheme::Twilio
            | Scheme::Shopify
            | Scheme::Hmac
            | Scheme::Token
            | Scheme::Basic
            | Scheme::None => false,
        }
    }

    /// Whether the signature covers the body alone: no timestamp, no delivery id (GitHub,
    /// Shopify). A captured request of such a scheme verifies again under any delivery id, so
    /// ingest recognises a signed body it has seen before (see `ingest::Received`).
    /// Twilio signs the body with the URL, which is the same for every delivery: alike.
    pub fn signs_body_only(&self) -> bool {
        matches!(self, Scheme::Github | Scheme::Shopify | Scheme::Twilio)
    }

    /// Whether the signature covers the URL the sender posted to, which only `[server]
    /// public_url` can say behind a proxy.
    pub fn signs_url(&self) -> bool {
        matches!(self, Scheme::Twilio)
    }

    /// What the scheme checks, in words, for the sources page: what is signed, where the
    /// signature is, and for a timestamped scheme the tolerance (`tolerance_secs`).
    pub fn describe(&self, tolerance_secs: u64) -> String {
        let within = || {
            format!(
                ", its timestamp within {} of hookbox's clock",
                span(tolerance_secs)
            )
        };
        match self {
            Scheme::StandardWebhooks => format!(
                "Standard Webhooks (and Svix): HMAC-SHA256 of the message id, timestamp and body, \
                 base64, in webhook-signature (or svix-signature){}",
                within()
            ),
            Scheme::Stripe => format!(
                "Stripe: HMAC-SHA256 of the timestamp and body, hex, as v1 in Stripe-Signature{}",
                within()
            ),
            Scheme::Github => "GitHub: HMAC-SHA256 of the body, hex, in X-Hub-Signature-256; \
                 no timestamp is signed, so a captured request stays valid"
                .to_string(),
            Scheme::Paddle => format!(
                "Paddle: HMAC-SHA256 of the timestamp and body, hex, as h1 in Paddle-Signature{}",
                within()
            ),
            Scheme::Shopify => {
                "Shopify: HMAC-SHA256 of the body, base64, in X-Shopify-Hmac-Sha256; \
                 no timestamp is signed, so a captured request stays valid"
                    .to_string()
            }
            Scheme::Slack => format!(
                "Slack: HMAC-SHA256 of X-Slack-Request-Timestamp and the body, hex, as v0 in \
                 X-Slack-Signature{}",
                within()
            ),
            Scheme::HmacSha256 => format!(
                "HMAC-SHA256 of the timestamp and body, hex, in X-Hookbox-Signature (t=…,v1=…){}",
                within()
            ),
            Scheme::Hmac => "a recipe of the source's own keys".to_string(),
            Scheme::Token => "a shared token in a header, equal to a secret; nothing is signed, \
                 so a captured request stays valid"
                .to_string(),
            Scheme::Discord => format!(
                "Discord: Ed25519 of X-Signature-Timestamp and the body, hex, in \
                 X-Signature-Ed25519, with the application's public keys{}",
                within()
            ),
            Scheme::Sendgrid => format!(
                "SendGrid: ECDSA P-256 with SHA-256 of the timestamp and the body, base64 DER, in \
                 X-Twilio-Email-Event-Webhook-Signature, with its verification keys{}",
                within()
            ),
            Scheme::Twilio => "Twilio: HMAC-SHA1 (HMAC-SHA256 for a SharedKey) of the URL and the \
                 form's sorted parameters (a JSON body: its SHA-256 in the URL), base64, in \
                 X-Twilio-Signature; no timestamp is signed, so a captured request stays valid"
                .to_string(),
            Scheme::Mailgun => format!(
                "Mailgun: HMAC-SHA256 of the timestamp and token of the body's signature object, \
                 hex, in that object; the event data is not signed, and each token is accepted \
                 for one event only{}",
                within()
            ),
            Scheme::Basic => "HTTP Basic authentication, user:password equal to a secret; \
                 nothing is signed, so a captured request stays valid"
                .to_string(),
            Scheme::None => {
                "none: unsigned requests are accepted (local development only)".to_string()
            }
        }
    }

    /// Validates and decodes a configured secret string.
    ///
    /// Standard Webhooks: `whsec_<base64>` (the prefix is optional, padding too); the key is the
    /// decoded bytes. Every other scheme: the whole string, as UTF-8, is the key; it must be
    /// non-empty and without surrounding white space (a stray newline from an env file would
    /// otherwise fail every request). `None` takes any string and never uses it.
    /// The error names what is wrong and never contains the secret.
    pub fn parse_secret(&self, secret: &str) -> Result<SecretKey, String> {
        match self {
            Scheme::StandardWebhooks => standard_webhooks::parse_secret(secret),
            Scheme::None => Ok(SecretKey(secret.as_bytes().to_vec())),
            Scheme::Stripe
            | Scheme::Github
            | Scheme::Paddle
            | Scheme::Shopify
            | Scheme::Slack
            | Scheme::HmacSha256
            | Scheme::Hmac
            | Scheme::Token
            | Scheme::Twilio
            | Scheme::Mailgun => raw_secret(secret),
            Scheme::Basic => shared_secret::parse_basic_secret(secret),
            Scheme::Discord | Scheme::Sendgrid => Err(format!(
                "scheme {} verifies public keys: give them in public_keys_env, not secrets",
                self.name()
            )),
        }
    }

    /// Verifies a request: `body` is the raw request bytes, `now` is Unix seconds.
    ///
    /// Every signature in the header is tried against every key, in constant time; signature
    /// versions other than the scheme's own are ignored. For timestamped schemes a timestamp more
    /// than `tolerance_secs` before or after `now` fails (exactly `tolerance_secs` passes).
    /// The `None` scheme accepts everything.
    pub fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        keys: &[SecretKey],
        tolerance_secs: u64,
        now: i64,
    ) -> Result<(), AuthError> {
        match self {
            Scheme::StandardWebhooks => {
                standard_webhooks::verify(headers, body, keys, tolerance_secs, now)
            }
            Scheme::Stripe => stripe::verify(headers, body, keys, tolerance_secs, now),
            Scheme::Github => github::verify(headers, body, keys),
            Scheme::Paddle => paddle::verify(headers, body, keys, tolerance_secs, now),
            Scheme::Shopify => shopify::verify(headers, body, keys),
            Scheme::Slack => slack::verify(headers, body, keys, tolerance_secs, now),
            Scheme::HmacSha256 => hmac_sha256::verify(headers, body, keys, tolerance_secs, now),
            // Only with its recipe ([`Auth::verify`]): alone it verifies nothing.
            Scheme::Hmac => Err(AuthError::Malformed("the source has no recipe")),
            Scheme::Token => Err(AuthError::Malformed("the source names no token header")),
            Scheme::Basic => shared_secret::verify_basic(headers, keys),
            Scheme::Mailgun => mailgun::verify(body, keys, tolerance_secs, now),
            // Only with the URL ([`Auth::verify`]).
            Scheme::Twilio => Err(AuthError::Malformed("the signed URL is not configured")),
            Scheme::Discord | Scheme::Sendgrid => {
                Err(AuthError::Malformed("the source has no public keys"))
            }
            Scheme::None => Ok(()),
        }
    }

    /// The authentication headers a real sender of this scheme would send for `body` at `now`.
    ///
    /// `msg_id` is the Standard Webhooks `webhook-id`; other schemes ignore it (delivery id
    /// headers such as `X-GitHub-Delivery` are the caller's business). `None` returns no headers.
    pub fn sign(
        &self,
        key: &SecretKey,
        msg_id: &str,
        body: &[u8],
        now: i64,
    ) -> Vec<(HeaderName, String)> {
        let key = key.0.as_slice();
        match self {
            Scheme::StandardWebhooks => standard_webhooks::sign(key, msg_id, body, now),
            Scheme::Stripe => stripe::sign(key, body, now),
            Scheme::Github => github::sign(key, body),
            Scheme::Paddle => paddle::sign(key, body, now),
            Scheme::Shopify => shopify::sign(key, body),
            Scheme::Slack => slack::sign(key, body, now),
            Scheme::HmacSha256 => hmac_sha256::sign(key, body, now),
            Scheme::Basic => shared_secret::sign_basic(&SecretKey(key.to_vec())),
            // A public-key scheme signs with a private key hookbox never has.
            // Twilio signs the URL ([`Auth::sign`]); Mailgun signs inside the body, which is the
            // sender's to write.
            Scheme::Hmac
            | Scheme::Token
            | Scheme::Discord
            | Scheme::Sendgrid
            | Scheme::Twilio
            | Scheme::Mailgun
            | Scheme::None => Vec::new(),
        }
    }
}

/// `300` → "5 minutes", `5` → "5 seconds", `3600` → "1 hour".
fn span(secs: u64) -> String {
    let (n, unit) = match secs {
        s if s > 0 && s.is_multiple_of(3600) => (s / 3600, "hour"),
        s if s > 0 && s.is_multiple_of(60) => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// The key bytes of one configured secret. Deliberately has no `Display`, and its `Debug` is
/// redacted, so a secret cannot reach a log by accident. No `PartialEq` either: comparing keys
/// is never needed and would not be constant-time.
#[derive(Clone)]
pub struct SecretKey(Vec<u8>);

impl SecretKey {
    /// Lower-case hex HMAC-SHA256 of `message` under this key: what a provider's handshake
    /// expects back (Zoom's `encryptedToken`), never a verification.
    pub fn hmac_sha256_hex(&self, message: &[u8]) -> String {
        shared::hmac_sha256(&self.0, &[message])
            .map(hex::encode)
            .unwrap_or_default()
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

#[cfg(test)]
mod testkit;

#[cfg(test)]
mod tests;
