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

mod github;
mod hmac_sha256;
mod paddle;
mod shopify;
mod slack;
mod standard_webhooks;
mod stripe;

use std::fmt;

use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderName};
use sha2::Sha256;
use subtle::ConstantTimeEq;

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
    None,
}

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
        ALL_SCHEMES.into_iter().find(|scheme| scheme.name() == name)
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
            Scheme::None => &[],
        }
    }

    /// Whether the signature covers a timestamp, i.e. whether `tolerance_secs` means anything.
    pub fn has_timestamp(&self) -> bool {
        match self {
            Scheme::StandardWebhooks
            | Scheme::Stripe
            | Scheme::Paddle
            | Scheme::Slack
            | Scheme::HmacSha256 => true,
            Scheme::Github | Scheme::Shopify | Scheme::None => false,
        }
    }

    /// Whether the signature covers the body alone: no timestamp, no delivery id (GitHub,
    /// Shopify). A captured request of such a scheme verifies again under any delivery id, so
    /// ingest recognises a signed body it has seen before (see `ingest::Received`).
    pub fn signs_body_only(&self) -> bool {
        matches!(self, Scheme::Github | Scheme::Shopify)
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
            | Scheme::HmacSha256 => raw_secret(secret),
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
            Scheme::None => Vec::new(),
        }
    }
}

/// The key bytes of one configured secret. Deliberately has no `Display`, and its `Debug` is
/// redacted, so a secret cannot reach a log by accident. No `PartialEq` either: comparing keys
/// is never needed and would not be constant-time.
#[derive(Clone)]
pub struct SecretKey(Vec<u8>);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

/// Why a request failed authentication. The messages are fixed strings: they never carry
/// secret material or request content, so they are safe to log and to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthError {
    /// A header the scheme needs is absent (its lower-case name).
    MissingHeader(&'static str),
    /// A header is present but cannot be parsed (what is wrong with it).
    Malformed(&'static str),
    /// The signed timestamp is too far from now, in either direction: `age_secs` is now minus
    /// the timestamp (negative: from the future), saturated at the bounds of `i64`.
    TimestampOutOfTolerance { age_secs: i64, tolerance_secs: u64 },
    /// The headers parse, but none of their `signatures` matches any of the `secrets`
    /// configured (counts only, saturated at `u16::MAX`).
    NoMatchingSignature { signatures: u16, secrets: u16 },
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::MissingHeader(name) => write!(f, "missing header {name}"),
            AuthError::Malformed(why) => write!(f, "malformed signature header: {why}"),
            AuthError::TimestampOutOfTolerance {
                age_secs,
                tolerance_secs,
            } => {
                let side = if *age_secs >= 0 { "older" } else { "newer" };
                let beyond = age_secs.unsigned_abs().saturating_sub(*tolerance_secs);
                write!(
                    f,
                    "timestamp {beyond} s {side} than the tolerance of {tolerance_secs} s allows"
                )
            }
            AuthError::NoMatchingSignature {
                signatures,
                secrets,
            } => {
                let plural =
                    |n: u16, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
                if *signatures == 1 {
                    write!(
                        f,
                        "the signature matches none of {}",
                        plural(*secrets, "secret")
                    )
                } else {
                    write!(
                        f,
                        "none of {} matches any of {}",
                        plural(*signatures, "signature"),
                        plural(*secrets, "secret")
                    )
                }
            }
        }
    }
}

impl std::error::Error for AuthError {}

// ---- helpers shared by the scheme files ----

/// A secret used as raw UTF-8 key bytes (every scheme but Standard Webhooks).
fn raw_secret(secret: &str) -> Result<SecretKey, String> {
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
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> Option<[u8; 32]> {
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
fn match_any(
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
fn header<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<Option<&'a str>, AuthError> {
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
fn required_header<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, AuthError> {
    header(headers, name)?.ok_or(AuthError::MissingHeader(name))
}

/// Unix seconds as senders write them: ASCII digits, no sign, spaces or leading zeros.
///
/// Being this strict means the text in the header is the canonical decimal form, so signing the
/// header text (Slack, Paddle) and signing the re-serialised integer (Standard Webhooks, Stripe)
/// are the same bytes, and a timestamp has exactly one spelling.
fn parse_unix(text: &str) -> Option<i64> {
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
fn check_tolerance(ts: i64, now: i64, tolerance_secs: u64) -> Result<(), AuthError> {
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
struct StampedSignatures<'a> {
    /// The timestamp as written (canonical, see [`parse_unix`]): what the signature covers.
    timestamp_text: &'a str,
    timestamp: i64,
    /// Every value of the signature key, in order; possibly empty strings.
    signatures: Vec<&'a str>,
}

/// Parses `<ts_key>=<unix>{sep}<sig_key>=<mac>[{sep}<sig_key>=<mac>…]`.
///
/// Items are `key=value` split at the first `=`; unknown keys (Stripe's `v0`, Paddle's `h2`) and
/// items without `=` are ignored, so a new signature version cannot break verification and a
/// downgrade to a weaker one is impossible. Exactly one timestamp and at least one signature of
/// the expected version are required.
fn parse_stamped<'a>(
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

#[cfg(test)]
mod testkit;

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use super::*;

    #[test]
    fn names_round_trip() {
        for scheme in ALL_SCHEMES {
            assert_eq!(Scheme::from_name(scheme.name()), Some(scheme));
        }
        assert_eq!(
            Scheme::from_name("standard-webhooks"),
            Some(Scheme::StandardWebhooks)
        );
        assert_eq!(Scheme::from_name("hmac-sha256"), Some(Scheme::HmacSha256));
        assert_eq!(Scheme::from_name("none"), Some(Scheme::None));
        for unknown in ["", "Stripe", "svix", "twilio", "github-sha1", " stripe"] {
            assert_eq!(Scheme::from_name(unknown), None, "{unknown:?}");
        }
    }

    #[test]
    fn timestamped_schemes() {
        let timestamped: Vec<_> = ALL_SCHEMES
            .into_iter()
            .filter(Scheme::has_timestamp)
            .collect();
        assert_eq!(
            timestamped,
            [
                Scheme::StandardWebhooks,
                Scheme::Stripe,
                Scheme::Paddle,
                Scheme::Slack,
                Scheme::HmacSha256
            ]
        );
    }

    #[test]
    fn none_scheme_accepts_everything_and_signs_nothing() {
        let key = Scheme::None
            .parse_secret("")
            .expect("none takes any secret");
        assert!(Scheme::None.sign(&key, "id", b"body", NOW).is_empty());
        assert_eq!(
            Scheme::None.verify(&HeaderMap::new(), b"body", &[], 0, i64::MIN),
            Ok(())
        );
    }

    #[test]
    fn raw_secrets_are_validated() {
        for scheme in ALL_SCHEMES {
            if matches!(scheme, Scheme::StandardWebhooks | Scheme::None) {
                continue;
            }
            assert!(scheme.parse_secret("").is_err(), "{scheme:?}");
            let err = scheme
                .parse_secret(" hunter2-secret\n")
                .expect_err("white space is refused");
            assert!(!err.contains("hunter2"), "{err}");
            // The whole string is the key, whsec_ included (Stripe).
            assert!(scheme.parse_secret("whsec_dGVzdA==").is_ok());
        }
    }

    #[test]
    fn secret_debug_is_redacted() {
        for scheme in ALL_SCHEMES {
            let secret = secret_for(scheme, "correct-horse-battery");
            let key = scheme.parse_secret(&secret).expect("valid secret");
            let shown = format!("{key:?} {key:#?} {:?}", std::slice::from_ref(&key));
            assert!(!shown.contains("correct-horse"), "{shown}");
            assert!(!shown.contains("99, 111"), "{shown}"); // the bytes of "co"
            assert_eq!(format!("{key:?}"), "SecretKey(..)");
        }
    }

    #[test]
    fn errors_display_fixed_text() {
        let errors = [
            AuthError::MissingHeader("webhook-id"),
            AuthError::Malformed("no timestamp"),
            AuthError::TimestampOutOfTolerance {
                age_secs: -5,
                tolerance_secs: 0,
            },
            AuthError::NoMatchingSignature {
                signatures: 3,
                secrets: 1,
            },
        ];
        for err in errors {
            let text = err.to_string();
            assert!(!text.is_empty());
            let _: &dyn std::error::Error = &err;
        }
        assert_eq!(
            AuthError::MissingHeader("webhook-id").to_string(),
            "missing header webhook-id"
        );
        // The refused-requests log's precise causes.
        assert_eq!(
            errors[2].to_string(),
            "timestamp 5 s newer than the tolerance of 0 s allows"
        );
        assert_eq!(
            errors[3].to_string(),
            "none of 3 signatures matches any of 1 secret"
        );
        assert_eq!(
            AuthError::TimestampOutOfTolerance {
                age_secs: i64::MIN,
                tolerance_secs: u64::MAX,
            }
            .to_string(),
            "timestamp 0 s newer than the tolerance of 18446744073709551615 s allows"
        );
    }

    #[test]
    fn unix_timestamps_are_strict() {
        assert_eq!(parse_unix("1614265330"), Some(1_614_265_330));
        assert_eq!(parse_unix("0"), Some(0));
        assert_eq!(parse_unix("9223372036854775807"), Some(i64::MAX));
        for bad in [
            "",
            " 1",
            "1 ",
            "+1",
            "-1",
            "01",
            "1e9",
            "1.0",
            "0x10",
            "9223372036854775808",
            "99999999999999999999999999",
            "١٢",
        ] {
            assert_eq!(parse_unix(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn tolerance_is_symmetric_inclusive_and_overflow_free() {
        assert!(check_tolerance(100, 400, 300).is_ok());
        assert!(check_tolerance(700, 400, 300).is_ok());
        assert!(check_tolerance(99, 400, 300).is_err());
        assert!(check_tolerance(701, 400, 300).is_err());
        assert!(check_tolerance(i64::MAX, i64::MIN, u64::MAX).is_ok());
        assert!(check_tolerance(i64::MAX, i64::MIN, 300).is_err());
        assert!(check_tolerance(0, i64::MIN, 0).is_err());
    }

    #[test]
    fn stamped_header_parsing() {
        let parsed = parse_stamped("t=5,v1=a,v0=b,,x,v1=", ',', "t", "v1").expect("parses");
        assert_eq!(parsed.timestamp, 5);
        assert_eq!(parsed.timestamp_text, "5");
        assert_eq!(parsed.signatures, ["a", ""]);
        for bad in [
            "",
            "t",
            "t=",
            "t=1",
            "v1=a",
            "t=1,t=1,v1=a",
            "t=x,v1=a",
            "t=-1,v1=a",
        ] {
            assert!(
                matches!(
                    parse_stamped(bad, ',', "t", "v1"),
                    Err(AuthError::Malformed(_))
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn missing_or_odd_keys_never_match() {
        for scheme in ALL_SCHEMES {
            if scheme == Scheme::None {
                continue;
            }
            let key = scheme
                .parse_secret(&secret_for(scheme, "k1"))
                .expect("valid");
            let headers = signed_headers(scheme, &key, b"{}", NOW);
            let got = scheme.verify(&headers, b"{}", &[], 300, NOW);
            assert!(
                matches!(got, Err(AuthError::NoMatchingSignature { secrets: 0, .. })),
                "{scheme:?} with no keys: {got:?}"
            );
        }
    }
}
