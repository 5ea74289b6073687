//! A delivery's body and headers, read through a source's mapping: a validated [`Envelope`], or
//! an [`Invalid`] that names the field and keeps what could be read for the archive.

use super::form::{FormRead, MAX_FORM_FIELDS};
use super::mapping::{Field, FieldRef, Mapping, Mode};
use super::{Envelope, Invalid, InvalidKind, MAX_ID_BYTES, Revision, Snapshot};
use crate::json::{self, JsonError, Node, Value};
use http::HeaderMap;

/// A field's value, found in the body or in a header.
enum Found<'n, 'a> {
    Json(&'n Node<'a>),
    Header(String),
}

/// Validates a delivery's body and headers against a source's mapping, reading a form body
/// first ([`FormRead::of`]).
pub fn parse_envelope(
    mapping: &Mapping,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Envelope, Invalid> {
    parse_envelope_as(mapping, headers, body, &FormRead::of(headers, body))
}

/// [`parse_envelope`] of a body already read as `form` (once per delivery: ingest archives the
/// same fields).
pub fn parse_envelope_as(
    mapping: &Mapping,
    headers: &HeaderMap,
    body: &[u8],
    form: &FormRead,
) -> Result<Envelope, Invalid> {
    let text = text_of(form, body)?;
    // A body with a value the database cannot store is refused, but read as far as it can be
    // first, so that its archive row keeps the identity sent before (or after) that value.
    let (doc, unstorable) = match json::parse(text) {
        Ok(doc) => (doc, None),
        Err(e @ JsonError::Syntax { .. }) => {
            return Err(anonymous(InvalidKind::Unreadable, e.to_string()));
        }
        Err(e @ JsonError::Unsupported { .. }) => match json::parse_tolerant(text) {
            Ok(doc) => (doc, Some(e)),
            Err(_) => return Err(anonymous(InvalidKind::Unacceptable, e.to_string())),
        },
    };

    let read = Read {
        doc: &doc,
        text,
        headers,
        body,
    };
    let identity = |name: &str, field: &Field| read.identity(name, field);

    // Read what can be read first, so an invalid delivery is still archived under its identity.
    let event_id = identity("event_id", &mapping.event_id);
    let object_id = mapping
        .object_id
        .as_ref()
        .map(|f| identity("object_id", f))
        .transpose();
    let event_type = mapping
        .event_type
        .as_ref()
        .map(|f| identity("type", f))
        .transpose();
    let readable = |r: &Result<Option<Option<String>>, String>| r.clone().ok().flatten().flatten();
    let mut fail = Invalid {
        kind: InvalidKind::Unacceptable,
        reason: String::new(),
        event_id: event_id.clone().ok().flatten(),
        object_id: readable(&object_id),
        event_type: readable(&event_type),
    };
    let mut reject = |reason: String| {
        fail.reason = reason;
        fail.clone()
    };
    if let Some(e) = unstorable {
        return Err(reject(e.to_string()));
    }

    let event_id = event_id.map_err(&mut reject)?.ok_or_else(|| {
        reject(format!(
            "event_id ({}) is missing",
            mapping.event_id.describe()
        ))
    })?;
    let object_id = object_id.map_err(&mut reject)?.flatten();
    let event_type = event_type.map_err(&mut reject)?.flatten();

    let (revision, snapshot) = match mapping.mode {
        Mode::Dedup => (None, None),
        Mode::Snapshot => {
            let object_field = mapping
                .object_id
                .as_ref()
                .map(Field::describe)
                .unwrap_or_default();
            if object_id.is_none() {
                return Err(reject(format!("object_id ({object_field}) is missing")));
            }
            let revision = read
                .revision(mapping.revision.as_ref())
                .map_err(&mut reject)?;
            let snapshot = read
                .snapshot(mapping.snapshot.as_ref())
                .map_err(&mut reject)?;
            (Some(revision), Some(snapshot))
        }
    };

    Ok(Envelope {
        event_id,
        object_id,
        revision,
        snapshot,
        event_type,
    })
}

/// A delivery refused before any of its identity could be read.
fn anonymous(kind: InvalidKind, reason: String) -> Invalid {
    Invalid {
        kind,
        reason,
        event_id: None,
        object_id: None,
        event_type: None,
    }
}

/// The JSON text of a body: a form's fields as the JSON object `form.rs` reads them, any other
/// body as its UTF-8 text.
fn text_of<'t>(form: &'t FormRead, body: &'t [u8]) -> Result<&'t str, Invalid> {
    match form {
        FormRead::Fields(document) => Ok(document.as_str()),
        FormRead::TooManyFields => Err(anonymous(
            InvalidKind::Unreadable,
            format!(
                "the form has more than {MAX_FORM_FIELDS} fields; hookbox reads at most {MAX_FORM_FIELDS} (the body is kept as received)"
            ),
        )),
        FormRead::NotForm => std::str::from_utf8(body).map_err(|e| {
            anonymous(
                InvalidKind::Unreadable,
                format!("body is not UTF-8 (invalid byte at {})", e.valid_up_to()),
            )
        }),
    }
}

/// A body read as JSON (`doc`, from `text`) with its request: where each field of a mapping is
/// found, and its value as the envelope takes it.
struct Read<'d, 'a> {
    doc: &'d Node<'a>,
    text: &'a str,
    headers: &'d HeaderMap,
    body: &'d [u8],
}

impl<'d, 'a> Read<'d, 'a> {
    /// The first place of a field that is present in the request, and which place that was.
    fn find(&self, field: &Field) -> Option<(Found<'d, 'a>, String)> {
        field.places().iter().find_map(|place| {
            let found = match place {
                FieldRef::Pointer(p) => self.doc.pointer(p).map(Found::Json),
                FieldRef::Header(name) => self
                    .headers
                    .get(name)
                    .map(|v| Found::Header(String::from_utf8_lossy(v.as_bytes()).into_owned())),
                FieldRef::BodyDigest => Some(Found::Header(format!(
                    "sha256:{}",
                    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(self.body))
                ))),
            }?;
            Some((found, place.describe()))
        })
    }

    /// An id or a type (`name`): a string, or an integer as its decimal text; none if absent.
    fn identity(&self, name: &str, field: &Field) -> Result<Option<String>, String> {
        let (value, place) = match self.find(field) {
            None => return Ok(None),
            Some((Found::Header(value), place)) => (value, place),
            Some((Found::Json(node), place)) => match &node.value {
                Value::String(s) => (s.clone(), place),
                // An integer id (HubSpot's, WooCommerce's) is its decimal text as sent.
                Value::Number(text) if is_integer(text) => (text.to_string(), place),
                _ => return Err(format!("{name} ({place}) must be a string or an integer")),
            },
        };
        if value.is_empty() {
            return Err(format!("{name} ({place}) must not be empty"));
        }
        if value.len() > MAX_ID_BYTES {
            return Err(format!(
                "{name} ({place}) is longer than {MAX_ID_BYTES} bytes"
            ));
        }
        Ok(Some(value))
    }

    /// The revision: a JSON integer, or a header's integer text.
    fn revision(&self, field: Option<&Field>) -> Result<Revision, String> {
        let Some(field) = field else {
            return Err("the source maps no revision field".into());
        };
        match self.find(field) {
            None => Err(format!("revision ({}) is missing", field.describe())),
            Some((Found::Header(value), place)) => {
                Revision::from_text(value.trim()).map_err(|why| format!("revision ({place}) {why}"))
            }
            Some((Found::Json(node), place)) => match &node.value {
                Value::Number(text) => {
                    Revision::from_text(text).map_err(|why| format!("revision ({place}) {why}"))
                }
                _ => Err(format!("revision ({place}) must be a JSON integer")),
            },
        }
    }

    /// The snapshot: a JSON object of the body, its text as sent.
    fn snapshot(&self, field: Option<&Field>) -> Result<Snapshot, String> {
        let Some(field) = field else {
            return Err("the source maps no snapshot field".into());
        };
        match self.find(field) {
            None => Err(format!("snapshot ({}) is missing", field.describe())),
            Some((Found::Header(_), place)) => {
                Err(format!("snapshot ({place}) must come from the body"))
            }
            Some((Found::Json(node), _)) if matches!(node.value, Value::Object(_)) => {
                Ok(Snapshot::new(node.raw(self.text).to_string()))
            }
            Some((Found::Json(_), place)) => {
                Err(format!("snapshot ({place}) must be a JSON object"))
            }
        }
    }
}

/// Whether a JSON number's text is an integer: an optional `-` and digits, no fraction or
/// exponent (`1.0` and `1e3` name no id).
fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}
