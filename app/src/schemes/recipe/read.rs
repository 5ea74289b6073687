//! Reading a recipe from a source's keys: each value by the `parse` function of its type, every
//! problem named by its key.

use super::Part;
use super::{
    Algorithm, Encoding, Recipe, RecipeProblem, SecretEncoding, TimeUnit, TimestampAt, header_name,
};

/// A source's recipe keys, besides `scheme = "hmac"` (and its `secrets_env`, `tolerance_secs`).
pub const RECIPE_KEYS: &[&str] = &[
    "algorithm",
    "signature_header",
    "signature_prefix",
    "signature_separator",
    "signature_encoding",
    "signed",
    "timestamp_header",
    "timestamp_prefix",
    "timestamp_field",
    "timestamp_unit",
    "secret_encoding",
    "secret_prefix",
];

impl Recipe {
    /// Reads a recipe from a source's keys: `text` gives a key's string value, `signed` the
    /// `signed` list. Every problem is named by its key; `algorithm`, `signature_header` and
    /// `signed` are required, the rest default to no prefix, one signature, hex, no timestamp,
    /// seconds, UTF-8.
    pub fn read(
        mut text: impl FnMut(&'static str) -> Option<String>,
        signed: Option<Vec<String>>,
    ) -> Result<Recipe, Vec<RecipeProblem>> {
        let mut problems: Vec<RecipeProblem> = Vec::new();
        let algorithm = value(
            &mut problems,
            "algorithm",
            text("algorithm"),
            Algorithm::parse,
        );
        let signature_header = value(
            &mut problems,
            "signature_header",
            text("signature_header"),
            header_name,
        );
        let signature_encoding = value(
            &mut problems,
            "signature_encoding",
            text("signature_encoding"),
            Encoding::parse,
        );
        let signature_separator = value(
            &mut problems,
            "signature_separator",
            text("signature_separator"),
            one_character,
        );
        let timestamp_header = value(
            &mut problems,
            "timestamp_header",
            text("timestamp_header"),
            header_name,
        );
        let timestamp_prefix = text("timestamp_prefix");
        let timestamp_field = value(
            &mut problems,
            "timestamp_field",
            text("timestamp_field"),
            json_pointer,
        )
        .flatten();
        let unit = value(
            &mut problems,
            "timestamp_unit",
            text("timestamp_unit"),
            TimeUnit::parse,
        );
        let secret_encoding = value(
            &mut problems,
            "secret_encoding",
            text("secret_encoding"),
            SecretEncoding::parse,
        );
        let signed = signed_parts(signed, &mut problems);
        for (key, absent) in [
            ("algorithm", matches!(algorithm, Some(None))),
            ("signature_header", matches!(signature_header, Some(None))),
            (
                "signed",
                signed.is_none() && !problems.iter().any(|(k, _)| *k == "signed"),
            ),
        ] {
            if absent {
                problems.push((key, "is required with scheme = \"hmac\"".into()));
            }
        }
        let timestamp = timestamp_of(
            (
                timestamp_header.flatten(),
                timestamp_prefix,
                timestamp_field,
            ),
            unit.flatten().unwrap_or(TimeUnit::Seconds),
            &mut problems,
        );
        match (algorithm.flatten(), signature_header.flatten(), signed) {
            (Some(algorithm), Some(signature_header), Some(signed)) if problems.is_empty() => {
                Ok(Recipe {
                    algorithm,
                    signature_header,
                    signature_separator: signature_separator.flatten(),
                    signature_prefix: text("signature_prefix").unwrap_or_default(),
                    signature_encoding: signature_encoding.flatten().unwrap_or(Encoding::Hex),
                    signed,
                    timestamp,
                    secret_encoding: secret_encoding.flatten().unwrap_or(SecretEncoding::Utf8),
                    secret_prefix: text("secret_prefix").unwrap_or_default(),
                })
            }
            _ => Err(problems),
        }
    }
}

/// Where the timestamp is (its header, its label in the signature header, or its field of the
/// body), with its unit; more than one place given is a problem.
fn timestamp_of(
    (header, prefix, field): (Option<String>, Option<String>, Option<String>),
    unit: TimeUnit,
    problems: &mut Vec<RecipeProblem>,
) -> Option<(TimestampAt, TimeUnit)> {
    let places = [header.is_some(), prefix.is_some(), field.is_some()];
    if places.iter().filter(|given| **given).count() > 1 {
        problems.push((
            "timestamp_header",
            "timestamp_prefix and timestamp_field: more than one says where the timestamp is; keep one".into(),
        ));
    }
    match (header, prefix, field) {
        (Some(name), _, _) => Some((TimestampAt::Header(name), unit)),
        (None, Some(label), _) => Some((TimestampAt::Entry(label), unit)),
        (None, None, Some(pointer)) => Some((TimestampAt::BodyField(pointer), unit)),
        (None, None, None) => None,
    }
}

fn one_character(v: &str) -> Result<char, String> {
    let mut chars = v.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Ok(c),
        _ => Err(format!("{v:?} is not one character")),
    }
}

fn json_pointer(pointer: &str) -> Result<String, String> {
    if pointer.starts_with('/') {
        Ok(pointer.to_string())
    } else {
        Err(format!(
            "{pointer:?} is not a JSON pointer such as \"/webhookTimestamp\""
        ))
    }
}

/// The `signed` list read (an empty one is a problem); `None` when absent or refused.
fn signed_parts(
    signed: Option<Vec<String>>,
    problems: &mut Vec<RecipeProblem>,
) -> Option<Vec<Part>> {
    match signed {
        Some(list) if list.is_empty() => {
            problems.push(("signed", "is empty".into()));
            None
        }
        Some(list) => list
            .iter()
            .map(|part| Part::parse(part))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| problems.push(("signed", e)))
            .ok(),
        None => None,
    }
}

/// A key's value read by `parse`: `Some(None)` when absent, `None` when refused (the problem
/// recorded under `key`).
fn value<T>(
    problems: &mut Vec<RecipeProblem>,
    key: &'static str,
    text: Option<String>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Option<Option<T>> {
    match text.map(|text| parse(&text)) {
        None => Some(None),
        Some(Ok(value)) => Some(Some(value)),
        Some(Err(why)) => {
            problems.push((key, why));
            None
        }
    }
}

impl Recipe {
    /// Key `key`'s value as a configuration file spells it (`None`: absent, its default);
    /// [`Recipe::read`] of these gives the recipe back. A preset's recipe is read through it, so
    /// a key written beside the preset overrides the preset's.
    pub fn spelled(&self, key: &str) -> Option<String> {
        let timestamp = self.timestamp.as_ref();
        match key {
            "algorithm" => Some(
                match self.algorithm {
                    Algorithm::Sha1 => "sha1",
                    Algorithm::Sha256 => "sha256",
                    Algorithm::Sha512 => "sha512",
                }
                .into(),
            ),
            "signature_header" => Some(self.signature_header.clone()),
            "signature_prefix" => Some(self.signature_prefix.clone()).filter(|p| !p.is_empty()),
            "signature_separator" => self.signature_separator.map(String::from),
            "signature_encoding" => Some(
                match self.signature_encoding {
                    Encoding::Hex => "hex",
                    Encoding::Base64 => "base64",
                }
                .into(),
            ),
            "timestamp_header" => match timestamp {
                Some((TimestampAt::Header(name), _)) => Some(name.clone()),
                _ => None,
            },
            "timestamp_prefix" => match timestamp {
                Some((TimestampAt::Entry(label), _)) => Some(label.clone()),
                _ => None,
            },
            "timestamp_field" => match timestamp {
                Some((TimestampAt::BodyField(pointer), _)) => Some(pointer.clone()),
                _ => None,
            },
            "timestamp_unit" => match timestamp {
                Some((_, TimeUnit::Milliseconds)) => Some("ms".into()),
                Some((_, TimeUnit::Rfc3339)) => Some("rfc3339".into()),
                _ => None,
            },
            "secret_encoding" => Some(
                match self.secret_encoding {
                    SecretEncoding::Utf8 => "utf8",
                    SecretEncoding::Base64 => "base64",
                    SecretEncoding::Hex => "hex",
                }
                .into(),
            ),
            "secret_prefix" => Some(self.secret_prefix.clone()).filter(|p| !p.is_empty()),
            _ => None,
        }
    }

    /// The `signed` list as a configuration file spells it.
    pub fn signed_spelled(&self) -> Vec<String> {
        self.signed
            .iter()
            .map(|part| match part {
                Part::Body => "body".into(),
                Part::Url => "url".into(),
                Part::Method => "method".into(),
                Part::Timestamp => "timestamp".into(),
                Part::Header(name) => format!("header:{name}"),
                Part::Literal(text) => format!("literal:{text}"),
            })
            .collect()
    }
}
