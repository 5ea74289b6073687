//! `scheme = "hmac"`: a signature described by a recipe instead of written as code: which HMAC,
//! what is signed (an ordered template of parts), where the signature sits and how it is
//! encoded, where the timestamp is, and how the secret becomes key bytes.
//!
//! A recipe is read once, at start-up, from the source's keys (each value by the `parse`
//! function of its type here, [`Recipe::check`] for the rules between keys), so a bad recipe
//! stops the process naming the key instead of failing every request. [`Recipe::verify`] then
//! reads the request strictly and compares every signature of the header with every key in
//! constant time, as the built-in schemes do.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderName};

use super::shared::{check_tolerance, header, match_any, parse_unix};
use super::{AuthError, SecretKey};

/// The hash of the HMAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha512,
}

impl Algorithm {
    /// `sha1`, `sha256` or `sha512`.
    pub fn parse(name: &str) -> Result<Algorithm, String> {
        match name {
            "sha1" => Ok(Algorithm::Sha1),
            "sha256" => Ok(Algorithm::Sha256),
            "sha512" => Ok(Algorithm::Sha512),
            other => Err(format!(
                "unknown algorithm {other:?}: sha1, sha256 or sha512"
            )),
        }
    }

    fn words(self) -> &'static str {
        match self {
            Algorithm::Sha1 => "HMAC-SHA1",
            Algorithm::Sha256 => "HMAC-SHA256",
            Algorithm::Sha512 => "HMAC-SHA512",
        }
    }

    /// The MAC of the concatenation of `parts` under `key`.
    fn mac(self, key: &[u8], parts: &[&[u8]]) -> Option<Vec<u8>> {
        fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Option<Vec<u8>> {
            let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key).ok()?;
            for part in parts {
                mac.update(part);
            }
            Some(mac.finalize().into_bytes().to_vec())
        }
        match self {
            Algorithm::Sha1 => run::<Hmac<sha1::Sha1>>(key, parts),
            Algorithm::Sha256 => run::<Hmac<sha2::Sha256>>(key, parts),
            Algorithm::Sha512 => run::<Hmac<sha2::Sha512>>(key, parts),
        }
    }
}

/// How signature bytes are written in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Lower-case hex; an upper-case signature is read as the same bytes.
    Hex,
    /// Standard base64 with padding.
    Base64,
}

impl Encoding {
    /// `hex` or `base64`.
    pub fn parse(name: &str) -> Result<Encoding, String> {
        match name {
            "hex" => Ok(Encoding::Hex),
            "base64" => Ok(Encoding::Base64),
            other => Err(format!("unknown encoding {other:?}: hex or base64")),
        }
    }

    fn encode(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Hex => hex::encode(bytes),
            Encoding::Base64 => STANDARD.encode(bytes),
        }
    }
}

/// How a configured secret becomes key bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretEncoding {
    Utf8,
    Base64,
    Hex,
}

impl SecretEncoding {
    /// `utf8`, `base64` or `hex`.
    pub fn parse(name: &str) -> Result<SecretEncoding, String> {
        match name {
            "utf8" => Ok(SecretEncoding::Utf8),
            "base64" => Ok(SecretEncoding::Base64),
            "hex" => Ok(SecretEncoding::Hex),
            other => Err(format!(
                "unknown secret encoding {other:?}: utf8, base64 or hex"
            )),
        }
    }
}

/// The unit of a timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Milliseconds,
    /// RFC 3339 text, e.g. `2025-12-03T07:59:58.123456789Z` (Twitch), signed as sent.
    Rfc3339,
}

impl TimeUnit {
    /// `s`, `ms` or `rfc3339`.
    pub fn parse(name: &str) -> Result<TimeUnit, String> {
        match name {
            "s" => Ok(TimeUnit::Seconds),
            "ms" => Ok(TimeUnit::Milliseconds),
            "rfc3339" => Ok(TimeUnit::Rfc3339),
            other => Err(format!(
                "unknown timestamp unit {other:?}: s, ms or rfc3339"
            )),
        }
    }

    /// The Unix seconds a timestamp's text says, `None` when it is not one.
    fn seconds(self, text: &str) -> Option<i64> {
        match self {
            TimeUnit::Seconds => parse_unix(text),
            TimeUnit::Milliseconds => parse_unix(text).map(|ms| ms.div_euclid(1000)),
            TimeUnit::Rfc3339 => chrono::DateTime::parse_from_rfc3339(text)
                .ok()
                .map(|time| time.timestamp()),
        }
    }

    /// How a sender writes the time `now` (Unix seconds).
    fn spell(self, now: i64) -> String {
        match self {
            TimeUnit::Seconds => now.to_string(),
            TimeUnit::Milliseconds => now.saturating_mul(1000).to_string(),
            TimeUnit::Rfc3339 => chrono::DateTime::from_timestamp(now, 0)
                .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
                .unwrap_or_default(),
        }
    }
}

/// Where the timestamp is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimestampAt {
    /// A header of its own (lower case), e.g. `x-slack-request-timestamp`.
    Header(String),
    /// The entry of the signature header that starts with this label, e.g. Stripe's `t=`.
    Entry(String),
    /// A field of the JSON body (its pointer), e.g. Linear's `/webhookTimestamp`: signed with
    /// the body, and read only once the signature verifies (a string or an integer).
    BodyField(String),
}

/// One part of what is signed, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// The raw request bytes.
    Body,
    /// The URL as the sender saw it: the configured public URL, `/hooks/{source}`, and the
    /// request's query string as received.
    Url,
    /// The request's method, e.g. `POST`.
    Method,
    /// The timestamp's text as received.
    Timestamp,
    /// A header's value as received (its lower-case name); a missing header fails.
    Header(String),
    /// Fixed text, e.g. `.` or `v0:`.
    Literal(String),
}

impl Part {
    /// `body`, `url`, `method`, `timestamp`, `header:<name>` or `literal:<text>`.
    pub fn parse(text: &str) -> Result<Part, String> {
        match text {
            "body" => Ok(Part::Body),
            "url" => Ok(Part::Url),
            "method" => Ok(Part::Method),
            "timestamp" => Ok(Part::Timestamp),
            _ => {
                if let Some(name) = text.strip_prefix("header:") {
                    header_name(name).map(Part::Header)
                } else if let Some(literal) = text.strip_prefix("literal:") {
                    Ok(Part::Literal(literal.to_string()))
                } else {
                    Err(format!(
                        "unknown part {text:?}: body, url, method, timestamp, header:<name> or literal:<text>"
                    ))
                }
            }
        }
    }

    fn words(&self) -> String {
        match self {
            Part::Body => "the body".into(),
            Part::Url => "the URL".into(),
            Part::Method => "the method".into(),
            Part::Timestamp => "the timestamp".into(),
            Part::Header(name) => name.clone(),
            Part::Literal(text) => format!("{text:?}"),
        }
    }
}

/// The Unix seconds of the timestamp at `pointer` in a JSON body: a string or an integer in
/// `unit` (a body without it fails, as Linear's SDK has it).
fn body_timestamp(body: &[u8], pointer: &str, unit: TimeUnit) -> Result<i64, AuthError> {
    let missing = AuthError::MalformedBody("no timestamp where the recipe says");
    let text = std::str::from_utf8(body).map_err(|_| missing.clone())?;
    let doc = crate::json::parse(text).map_err(|_| missing.clone())?;
    let node = doc.pointer(pointer).ok_or(missing)?;
    let value = node.as_str().unwrap_or_else(|| node.raw(text));
    unit.seconds(value)
        .ok_or(AuthError::MalformedBody("the timestamp is not one"))
}

/// A header name as configured, in lower case; the error says why it cannot be one.
pub fn header_name(name: &str) -> Result<String, String> {
    match HeaderName::from_bytes(name.as_bytes()) {
        Ok(parsed) if !name.is_empty() => Ok(parsed.as_str().to_string()),
        _ => Err(format!("{name:?} is not a header name")),
    }
}

/// A whole recipe, read from a source's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    pub algorithm: Algorithm,
    /// The header the signature is in (lower case).
    pub signature_header: String,
    /// Splits the header into entries when it holds several (Stripe's `,`, Standard Webhooks'
    /// space); `None`: the whole value is one signature.
    pub signature_separator: Option<char>,
    /// What an entry holding a signature starts with, stripped before decoding (`sha256=`,
    /// `v0=`, `v1=`); entries with another start are ignored, so a new signature version cannot
    /// break verification nor downgrade it.
    pub signature_prefix: String,
    pub signature_encoding: Encoding,
    pub signed: Vec<Part>,
    pub timestamp: Option<(TimestampAt, TimeUnit)>,
    pub secret_encoding: SecretEncoding,
    /// Stripped from a configured secret before decoding it (e.g. `whsec_`), when present.
    pub secret_prefix: String,
}

/// A request as a recipe reads it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub method: &'a str,
    /// The query string as received, without its `?` (a token a source opted to take there).
    pub query: Option<&'a str>,
    /// The URL as the sender saw it (see [`Part::Url`]); `None` when no public URL is
    /// configured, which [`Recipe::check`] refuses for a recipe that signs it.
    pub url: Option<&'a str>,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

/// A problem of a recipe: the key it is about and what is wrong.
pub type RecipeProblem = (&'static str, String);

impl Recipe {
    /// The rules between keys: the body is signed (else a captured signature fits any body),
    /// a signed timestamp has a place to be read from, a timestamp inside the signature header
    /// needs entries, and the URL is signed only where a public URL is configured.
    pub fn check(&self, public_url: bool) -> Vec<RecipeProblem> {
        let mut problems = Vec::new();
        if !self.signed.contains(&Part::Body) {
            problems.push((
                "signed",
                "does not contain \"body\": the signature would not cover what is delivered"
                    .to_string(),
            ));
        }
        if self.signed.contains(&Part::Timestamp)
            && let Some((TimestampAt::BodyField(_), _)) = &self.timestamp
        {
            problems.push((
                "signed",
                "contains \"timestamp\" but the timestamp is a field of the body (timestamp_field), which \"body\" signs".to_string(),
            ));
        }
        if self.signed.contains(&Part::Timestamp) && self.timestamp.is_none() {
            problems.push((
                "signed",
                "contains \"timestamp\" but no timestamp_header or timestamp_prefix says where it is"
                    .to_string(),
            ));
        }
        if let Some((TimestampAt::Entry(_), _)) = &self.timestamp
            && self.signature_separator.is_none()
        {
            problems.push((
                "timestamp_prefix",
                "needs signature_separator: the timestamp is an entry of the signature header"
                    .to_string(),
            ));
        }
        if self.signed.contains(&Part::Url) && !public_url {
            problems.push((
                "signed",
                "contains \"url\" but [server] public_url is not set: the URL the sender signs cannot be known behind a proxy"
                    .to_string(),
            ));
        }
        problems
    }

    /// The key bytes of a configured secret; the error names what is wrong, never the secret.
    pub fn parse_secret(&self, secret: &str) -> Result<SecretKey, String> {
        if secret.is_empty() {
            return Err("secret is empty".into());
        }
        if secret.trim() != secret {
            return Err("secret has leading or trailing white space".into());
        }
        let text = secret
            .strip_prefix(self.secret_prefix.as_str())
            .unwrap_or(secret);
        let key = match self.secret_encoding {
            SecretEncoding::Utf8 => text.as_bytes().to_vec(),
            SecretEncoding::Base64 => STANDARD
                .decode(text)
                .map_err(|_| "secret is not base64".to_string())?,
            SecretEncoding::Hex => {
                hex::decode(text).map_err(|_| "secret is not hex".to_string())?
            }
        };
        if key.is_empty() {
            return Err("secret decodes to no bytes".into());
        }
        Ok(SecretKey(key))
    }

    /// Whether nothing but the body varies in what is signed (no timestamp, no header; the
    /// URL, method and literals are the same for every delivery): a captured request verifies
    /// again under any delivery id (see `ingest::Received::signed_body_digest`).
    pub fn signs_body_only(&self) -> bool {
        !self
            .signed
            .iter()
            .any(|part| matches!(part, Part::Timestamp | Part::Header(_)))
    }

    /// Whether a timestamp is signed: whether `tolerance_secs` means anything.
    pub fn has_timestamp(&self) -> bool {
        match &self.timestamp {
            Some((TimestampAt::BodyField(_), _)) => true,
            Some(_) => self.signed.contains(&Part::Timestamp),
            None => false,
        }
    }

    /// Verifies `request` at `now` (Unix seconds): every signature entry of the header against
    /// every key, in constant time; a timestamp beyond `tolerance_secs` either way fails.
    pub fn verify(
        &self,
        request: &Request<'_>,
        keys: &[SecretKey],
        tolerance_secs: u64,
        now: i64,
    ) -> Result<(), AuthError> {
        let value = header(request.headers, &self.signature_header)?
            .ok_or_else(|| AuthError::MissingHeader(self.signature_header.clone().into()))?;
        let entries: Vec<&str> = match self.signature_separator {
            Some(separator) => value.split(separator).map(str::trim).collect(),
            None => vec![value.trim()],
        };
        let timestamp_text = self.timestamp_text(request.headers, &entries)?;
        if let (Some(text), Some((_, unit))) = (timestamp_text, &self.timestamp) {
            let secs = unit.seconds(text).ok_or(match unit {
                TimeUnit::Rfc3339 => AuthError::Malformed("the timestamp is not RFC 3339"),
                _ => AuthError::Malformed("the timestamp is not an integer"),
            })?;
            check_tolerance(secs, now, tolerance_secs)?;
        }
        let signatures: Vec<String> = entries
            .iter()
            .filter_map(|entry| entry.strip_prefix(self.signature_prefix.as_str()))
            .map(|signature| match self.signature_encoding {
                Encoding::Hex => signature.to_ascii_lowercase(),
                Encoding::Base64 => signature.to_string(),
            })
            .collect();
        if signatures.is_empty() {
            return Err(AuthError::Malformed("no signature of the expected version"));
        }
        let message = self.message(request, timestamp_text)?;
        let candidates: Vec<&str> = signatures.iter().map(String::as_str).collect();
        match_any(keys, &candidates, |key| {
            let parts: Vec<&[u8]> = message.iter().map(|part| part.as_ref()).collect();
            self.algorithm
                .mac(key, &parts)
                .map(|mac| self.signature_encoding.encode(&mac))
        })?;
        // A timestamp inside the body is read once the body is known to be the sender's.
        if let Some((TimestampAt::BodyField(pointer), unit)) = &self.timestamp {
            let secs = body_timestamp(request.body, pointer, *unit)?;
            check_tolerance(secs, now, tolerance_secs)?;
        }
        Ok(())
    }

    /// The timestamp's text, where the recipe has one.
    fn timestamp_text<'a>(
        &self,
        headers: &'a HeaderMap,
        entries: &[&'a str],
    ) -> Result<Option<&'a str>, AuthError> {
        match &self.timestamp {
            None => Ok(None),
            Some((TimestampAt::Header(name), _)) => header(headers, name)?
                .map(|text| Some(text.trim()))
                .ok_or_else(|| AuthError::MissingHeader(name.clone().into())),
            // Read after the signature ([`body_timestamp`]).
            Some((TimestampAt::BodyField(_), _)) => Ok(None),
            Some((TimestampAt::Entry(label), _)) => {
                let mut found = entries
                    .iter()
                    .filter_map(|e| e.strip_prefix(label.as_str()));
                let first = found.next().ok_or(AuthError::Malformed("no timestamp"))?;
                if found.next().is_some() {
                    return Err(AuthError::Malformed("the timestamp is given twice"));
                }
                Ok(Some(first))
            }
        }
    }

    /// The signed parts, in order, as bytes.
    fn message<'a>(
        &self,
        request: &Request<'a>,
        timestamp: Option<&'a str>,
    ) -> Result<Vec<std::borrow::Cow<'a, [u8]>>, AuthError> {
        use std::borrow::Cow;
        self.signed
            .iter()
            .map(|part| {
                Ok(match part {
                    Part::Body => Cow::Borrowed(request.body),
                    Part::Url => Cow::Borrowed(
                        request
                            .url
                            .ok_or(AuthError::Malformed("the signed URL is not configured"))?
                            .as_bytes(),
                    ),
                    Part::Method => Cow::Borrowed(request.method.as_bytes()),
                    Part::Timestamp => Cow::Borrowed(
                        timestamp
                            .ok_or(AuthError::Malformed("no timestamp"))?
                            .as_bytes(),
                    ),
                    Part::Header(name) => Cow::Borrowed(
                        header(request.headers, name)?
                            .ok_or_else(|| AuthError::MissingHeader(name.clone().into()))?
                            .as_bytes(),
                    ),
                    Part::Literal(text) => Cow::Owned(text.as_bytes().to_vec()),
                })
            })
            .collect()
    }

    /// The headers a sender following the recipe sends for `request` at `now` (Unix seconds):
    /// the signature header, and the timestamp's header where it has one. Headers that are
    /// signed parts must already be in `request.headers`.
    pub fn sign(
        &self,
        key: &SecretKey,
        request: &Request<'_>,
        now: i64,
    ) -> Vec<(HeaderName, String)> {
        let stamp = match self.timestamp {
            Some((_, unit)) => unit.spell(now),
            None => now.to_string(),
        };
        let timestamp = self.timestamp.as_ref().map(|_| stamp.as_str());
        let Ok(message) = self.message(request, timestamp) else {
            return Vec::new();
        };
        let parts: Vec<&[u8]> = message.iter().map(|part| part.as_ref()).collect();
        let Some(mac) = self.algorithm.mac(&key.0, &parts) else {
            return Vec::new();
        };
        let signature = format!(
            "{}{}",
            self.signature_prefix,
            self.signature_encoding.encode(&mac)
        );
        let mut headers = Vec::new();
        let value = match (&self.timestamp, self.signature_separator) {
            (Some((TimestampAt::Entry(label), _)), Some(separator)) => {
                format!("{label}{stamp}{separator}{signature}")
            }
            (Some((TimestampAt::Header(name), _)), _) => {
                if let Ok(name) = HeaderName::from_bytes(name.as_bytes()) {
                    headers.push((name, stamp.clone()));
                }
                signature
            }
            _ => signature,
        };
        if let Ok(name) = HeaderName::from_bytes(self.signature_header.as_bytes()) {
            headers.insert(0, (name, value));
        }
        headers
    }
}

impl fmt::Display for Recipe {
    /// The recipe in words, e.g. "HMAC-SHA256 of the body, hex, in x-signature".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.signed.iter().map(Part::words).collect();
        let encoding = match self.signature_encoding {
            Encoding::Hex => "hex",
            Encoding::Base64 => "base64",
        };
        write!(
            f,
            "{} of {}, {encoding}, in {}",
            self.algorithm.words(),
            parts.join(" + "),
            self.signature_header
        )?;
        if !self.signature_prefix.is_empty() {
            write!(f, " after {:?}", self.signature_prefix)?;
        }
        match &self.timestamp {
            Some((TimestampAt::Header(name), _)) => write!(f, "; the timestamp in {name}"),
            Some((TimestampAt::Entry(label), _)) => write!(f, "; the timestamp as {label:?}"),
            Some((TimestampAt::BodyField(pointer), _)) => {
                write!(f, "; the timestamp at {pointer} in the body")
            }
            None => Ok(()),
        }
    }
}

mod read;

pub use read::RECIPE_KEYS;

#[cfg(test)]
mod tests;
