//! Raw bytes of an authenticated delivery → a validated [`Envelope`], or an [`Invalid`] that names
//! the field. Everything after this module works with types that cannot hold a bad value.
//!
//! A form-encoded body is read as the JSON object of its fields (`form.rs`). How a source maps
//! a request onto its identities is in `mapping.rs`; reading a delivery
//! through a mapping, in `validate.rs`; the validated types, here.

mod form;
mod mapping;
mod validate;

pub use form::{FORM_MEDIA_TYPE, FormRead, MAX_FORM_FIELDS, fields_json, form_document, is_form};

pub use mapping::{Field, FieldRef, Mapping, Mode};
pub use validate::{parse_envelope, parse_envelope_as};

use crate::json;

/// Identities are non-empty strings of at most this many bytes (`docs/webhooks.md`, Modes).
pub const MAX_ID_BYTES: usize = 255;

/// A JSON value as sent, with the canonical form that decides content identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Exactly the sent text of the value.
    pub raw: String,
    /// Computed on first use: only SQLite compares snapshots by it (PostgreSQL as `jsonb`).
    canonical: std::sync::OnceLock<String>,
}

impl Snapshot {
    /// A snapshot from the sent text of a JSON object.
    pub fn new(raw: String) -> Snapshot {
        Snapshot {
            raw,
            canonical: std::sync::OnceLock::new(),
        }
    }

    /// See [`json::Node::canonical`]. The text parsed when the envelope was read, so it parses
    /// again; were it ever not to, the sent text stands in (content identity by exact text).
    pub fn canonical(&self) -> &str {
        self.canonical.get_or_init(|| {
            json::parse(&self.raw).map_or_else(|_| self.raw.clone(), |node| node.canonical())
        })
    }
}

/// A revision: an integer from 1 to 2^63-1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Revision(i64);

impl Revision {
    pub fn new(value: i64) -> Option<Revision> {
        (value >= 1).then_some(Revision(value))
    }

    pub fn get(self) -> i64 {
        self.0
    }

    /// Reads the JSON text of an integer literal; `3.0`, `3e0` and `"3"` are not revisions.
    fn from_text(text: &str) -> Result<Revision, &'static str> {
        if !text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            return Err("must be an integer (no fraction or exponent)");
        }
        match text.parse::<i64>() {
            Ok(n) => Revision::new(n).ok_or("must be at least 1"),
            Err(_) if text.starts_with('-') => Err("must be at least 1"),
            Err(_) => Err("must be at most 9223372036854775807"),
        }
    }
}

/// A validated delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub event_id: String,
    pub object_id: Option<String>,
    pub revision: Option<Revision>,
    pub snapshot: Option<Snapshot>,
    pub event_type: Option<String>,
}

/// Which of the two refusals of a body a delivery meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidKind {
    /// The body is not UTF-8 or not JSON: 400.
    Unreadable,
    /// JSON that breaks the envelope's rules, or that the database cannot store: 422.
    Unacceptable,
}

/// Why a delivery cannot be ingested, with what could still be read for the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub kind: InvalidKind,
    pub reason: String,
    pub event_id: Option<String>,
    pub object_id: Option<String>,
    pub event_type: Option<String>,
}

impl Invalid {
    /// The answer's status: the one place the kind becomes HTTP.
    pub fn status(&self) -> http::StatusCode {
        match self.kind {
            InvalidKind::Unreadable => http::StatusCode::BAD_REQUEST,
            InvalidKind::Unacceptable => http::StatusCode::UNPROCESSABLE_ENTITY,
        }
    }
}

#[cfg(test)]
mod tests;
