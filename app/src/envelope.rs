//! Raw bytes of an authenticated delivery → a validated [`Envelope`], or an [`Invalid`] that names
//! the field. Everything after this module works with types that cannot hold a bad value.

use crate::json::{self, JsonError, Node, Value};
use http::HeaderMap;

/// Identities are non-empty strings of at most this many bytes (`docs/webhooks.md`, Modes).
pub const MAX_ID_BYTES: usize = 255;

/// Where a source keeps its events: one snapshot per revision, or plain deduplication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Snapshot,
    Dedup,
}

impl Mode {
    /// The config spelling: `"snapshot"` or `"dedup"`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Snapshot => "snapshot",
            Mode::Dedup => "dedup",
        }
    }
}

/// One place a value can be in a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldRef {
    /// An RFC 6901 pointer into the JSON body.
    Pointer(String),
    /// A request header (`header:<name>` in the config).
    Header(http::HeaderName),
}

impl FieldRef {
    /// Parses the config spelling: `/a/b` or `header:Name`.
    pub fn parse(spec: &str) -> Result<FieldRef, String> {
        if let Some(name) = spec.strip_prefix("header:") {
            return http::HeaderName::from_bytes(name.trim().as_bytes())
                .map(FieldRef::Header)
                .map_err(|_| format!("{spec:?} names an invalid header"));
        }
        if spec.is_empty() || spec.starts_with('/') {
            return Ok(FieldRef::Pointer(spec.to_string()));
        }
        Err(format!(
            "{spec:?} is neither a JSON pointer (\"/field\") nor \"header:<name>\""
        ))
    }

    pub fn pointer(pointer: &str) -> FieldRef {
        FieldRef::Pointer(pointer.to_string())
    }

    /// A header by its lower-case name (panics on an invalid one, like [`http::HeaderName::from_static`]).
    pub fn header(name: &'static str) -> FieldRef {
        FieldRef::Header(http::HeaderName::from_static(name))
    }

    /// How a reason names it: `/data/id` or `header x-github-delivery`.
    fn describe(&self) -> String {
        match self {
            FieldRef::Pointer(p) => p.clone(),
            FieldRef::Header(h) => format!("header {h}"),
        }
    }
}

/// The config spelling, which [`FieldRef::parse`] reads back.
impl std::fmt::Display for FieldRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldRef::Pointer(p) => f.write_str(p),
            FieldRef::Header(h) => write!(f, "header:{h}"),
        }
    }
}

/// Where one identity field lives: one place, or alternatives tried in order.
///
/// The first place present in the request is the field (Shopify sends its delivery id as
/// `X-Shopify-Event-Id`, older deliveries as `X-Shopify-Webhook-Id`). A place that is present
/// but holds a bad value is an error; it never falls through to the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field(Vec<FieldRef>);

impl Field {
    /// The alternatives in order; `None` if there are none.
    pub fn first_of(places: Vec<FieldRef>) -> Option<Field> {
        (!places.is_empty()).then_some(Field(places))
    }

    /// This field, else `next` when none of its places is present.
    pub fn or(mut self, next: FieldRef) -> Field {
        self.0.push(next);
        self
    }

    pub fn places(&self) -> &[FieldRef] {
        &self.0
    }

    fn describe(&self) -> String {
        let places: Vec<String> = self.0.iter().map(FieldRef::describe).collect();
        places.join(" or ")
    }
}

impl From<FieldRef> for Field {
    fn from(place: FieldRef) -> Field {
        Field(vec![place])
    }
}

/// The config spelling: `/id`, or `["header:a", "header:b"]` for alternatives.
impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "{one}"),
            places => {
                let quoted: Vec<String> = places
                    .iter()
                    .map(|p| format!("{:?}", p.to_string()))
                    .collect();
                write!(f, "[{}]", quoted.join(", "))
            }
        }
    }
}

/// How a source maps a request onto its identities (event id, object id, revision, snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub mode: Mode,
    pub event_id: Field,
    pub object_id: Option<Field>,
    pub revision: Option<Field>,
    pub snapshot: Option<Field>,
    pub event_type: Option<Field>,
}

impl Mapping {
    /// The snapshot envelope: `/event_id`, `/object_id`, `/revision`, `/snapshot`.
    pub fn snapshot_envelope() -> Mapping {
        let at = |pointer| Some(Field::from(FieldRef::pointer(pointer)));
        Mapping {
            mode: Mode::Snapshot,
            event_id: FieldRef::pointer("/event_id").into(),
            object_id: at("/object_id"),
            revision: at("/revision"),
            snapshot: at("/snapshot"),
            event_type: at("/type"),
        }
    }
}

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

/// A field's value, found in the body or in a header.
enum Found<'n, 'a> {
    Json(&'n Node<'a>),
    Header(String),
}

/// Validates a delivery's body and headers against a source's mapping.
pub fn parse_envelope(
    mapping: &Mapping,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Envelope, Invalid> {
    let invalid = |kind, reason: String| Invalid {
        kind,
        reason,
        event_id: None,
        object_id: None,
        event_type: None,
    };
    let text = std::str::from_utf8(body).map_err(|e| {
        invalid(
            InvalidKind::Unreadable,
            format!("body is not UTF-8 (invalid byte at {})", e.valid_up_to()),
        )
    })?;
    // A body with a value the database cannot store is refused, but read as far as it can be
    // first, so that its archive row keeps the identity sent before (or after) that value.
    let (doc, unstorable) = match json::parse(text) {
        Ok(doc) => (doc, None),
        Err(e @ JsonError::Syntax { .. }) => {
            return Err(invalid(InvalidKind::Unreadable, e.to_string()));
        }
        Err(e @ JsonError::Unsupported { .. }) => match json::parse_tolerant(text) {
            Ok(doc) => (doc, Some(e)),
            Err(_) => return Err(invalid(InvalidKind::Unacceptable, e.to_string())),
        },
    };

    // The first place of a field that is present in the request, and which place that was.
    let find = |field: &Field| -> Option<(Found<'_, '_>, String)> {
        field.places().iter().find_map(|place| {
            let found = match place {
                FieldRef::Pointer(p) => doc.pointer(p).map(Found::Json),
                FieldRef::Header(name) => headers
                    .get(name)
                    .map(|v| Found::Header(String::from_utf8_lossy(v.as_bytes()).into_owned())),
            }?;
            Some((found, place.describe()))
        })
    };
    let identity = |name: &str, field: &Field| -> Result<Option<String>, String> {
        let (value, place) = match find(field) {
            None => return Ok(None),
            Some((Found::Header(value), place)) => (value, place),
            Some((Found::Json(node), place)) => match &node.value {
                Value::String(s) => (s.clone(), place),
                _ => return Err(format!("{name} ({place}) must be a string")),
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
    };

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
            let revision = match mapping.revision.as_ref() {
                None => return Err(reject("the source maps no revision field".into())),
                Some(field) => match find(field) {
                    None => {
                        return Err(reject(format!(
                            "revision ({}) is missing",
                            field.describe()
                        )));
                    }
                    Some((Found::Header(value), place)) => Revision::from_text(value.trim())
                        .map_err(|why| reject(format!("revision ({place}) {why}")))?,
                    Some((Found::Json(node), place)) => match &node.value {
                        Value::Number(text) => Revision::from_text(text)
                            .map_err(|why| reject(format!("revision ({place}) {why}")))?,
                        _ => {
                            return Err(reject(format!(
                                "revision ({place}) must be a JSON integer"
                            )));
                        }
                    },
                },
            };
            let snapshot = match mapping.snapshot.as_ref() {
                None => return Err(reject("the source maps no snapshot field".into())),
                Some(field) => match find(field) {
                    None => {
                        return Err(reject(format!(
                            "snapshot ({}) is missing",
                            field.describe()
                        )));
                    }
                    Some((Found::Header(_), place)) => {
                        return Err(reject(format!(
                            "snapshot ({place}) must come from the body"
                        )));
                    }
                    Some((Found::Json(node), _)) if matches!(node.value, Value::Object(_)) => {
                        Snapshot::new(node.raw(text).to_string())
                    }
                    Some((Found::Json(_), place)) => {
                        return Err(reject(format!("snapshot ({place}) must be a JSON object")));
                    }
                },
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<Envelope, Invalid> {
        parse_envelope(
            &Mapping::snapshot_envelope(),
            &HeaderMap::new(),
            body.as_bytes(),
        )
    }

    fn reason(body: &str) -> (u16, String) {
        let e = parse(body).expect_err("should be invalid");
        (e.status().as_u16(), e.reason)
    }

    #[test]
    fn a_valid_snapshot_envelope_is_read_exactly() {
        let body = r#"{"event_id":"e1","object_id":"o1","revision":9223372036854775807,"snapshot":{"n": 1.50}}"#;
        let env = parse(body).expect("valid");
        assert_eq!(env.event_id, "e1");
        assert_eq!(env.object_id.as_deref(), Some("o1"));
        assert_eq!(env.revision.map(Revision::get), Some(i64::MAX));
        assert_eq!(
            env.snapshot.map(|s| s.raw),
            Some(r#"{"n": 1.50}"#.to_string())
        );
    }

    #[test]
    fn revisions_must_be_positive_64_bit_integers() {
        for (rev, why) in [
            (r#""3""#, "must be a JSON integer"),
            ("0", "must be at least 1"),
            ("-1", "must be at least 1"),
            ("1.5", "must be an integer"),
            ("3.0", "must be an integer"),
            ("3e0", "must be an integer"),
            ("9223372036854775808", "must be at most"),
        ] {
            let body =
                format!(r#"{{"event_id":"e","object_id":"o","revision":{rev},"snapshot":{{}}}}"#);
            let (status, reason) = reason(&body);
            assert_eq!(status, 422, "{rev}");
            assert!(
                reason.contains("revision") && reason.contains(why),
                "{rev}: {reason}"
            );
        }
    }

    #[test]
    fn bad_bodies_name_what_is_wrong() {
        assert_eq!(reason("not json").0, 400);
        let e = parse_envelope(
            &Mapping::snapshot_envelope(),
            &HeaderMap::new(),
            b"\xff\xfe",
        )
        .expect_err("bad");
        assert_eq!(
            (e.status().as_u16(), e.reason.contains("UTF-8")),
            (400, true)
        );
        let (status, why) = reason(r#"{"event_id":"e","object_id":"o","revision":1}"#);
        assert_eq!((status, why.contains("snapshot")), (422, true));
        let (_, why) = reason(r#"{"event_id":"e","object_id":"o","revision":1,"snapshot":[1]}"#);
        assert!(why.contains("snapshot") && why.contains("object"), "{why}");
        let (_, why) = reason(r#"{"event_id":"","object_id":"o","revision":1,"snapshot":{}}"#);
        assert!(why.contains("event_id") && why.contains("empty"), "{why}");
        let long = "x".repeat(256);
        let invalid = parse(&format!(
            r#"{{"event_id":"e","object_id":"{long}","revision":1,"snapshot":{{}}}}"#
        ))
        .expect_err("too long");
        assert!(invalid.reason.contains("object_id") && invalid.reason.contains("255"));
        assert_eq!(
            invalid.event_id.as_deref(),
            Some("e"),
            "the readable identity is kept for the archive"
        );
        let (status, why) =
            reason(r#"{"event_id":"e","object_id":"o","revision":1,"snapshot":{"a":"\u0000"}}"#);
        assert_eq!((status, why.contains("\\u0000")), (422, true));
    }

    #[test]
    fn identities_can_come_from_headers_in_dedup_mode() {
        let mapping = Mapping {
            mode: Mode::Dedup,
            event_id: FieldRef::parse("header:X-GitHub-Delivery")
                .expect("valid")
                .into(),
            object_id: None,
            revision: None,
            snapshot: None,
            event_type: Some(
                FieldRef::parse("header:X-GitHub-Event")
                    .expect("valid")
                    .into(),
            ),
        };
        let mut headers = HeaderMap::new();
        headers.insert("x-github-delivery", "d-1".parse().expect("header"));
        headers.insert("x-github-event", "push".parse().expect("header"));
        let env = parse_envelope(&mapping, &headers, b"{}").expect("valid");
        assert_eq!(
            (env.event_id.as_str(), env.event_type.as_deref()),
            ("d-1", Some("push"))
        );
        assert_eq!(env.revision, None);
    }

    fn first_of(specs: &[&str]) -> Field {
        let places = specs
            .iter()
            .map(|s| FieldRef::parse(s).expect("valid spec"))
            .collect();
        Field::first_of(places).expect("at least one place")
    }

    fn dedup(event_id: Field) -> Mapping {
        Mapping {
            mode: Mode::Dedup,
            event_id,
            object_id: None,
            revision: None,
            snapshot: None,
            event_type: None,
        }
    }

    #[test]
    fn the_first_place_present_is_the_field() {
        let mapping = dedup(first_of(&[
            "header:X-Shopify-Event-Id",
            "header:X-Shopify-Webhook-Id",
        ]));
        let mut old_style = HeaderMap::new();
        old_style.insert("x-shopify-webhook-id", "w-1".parse().expect("header"));
        let mut both = old_style.clone();
        both.insert("x-shopify-event-id", "e-1".parse().expect("header"));

        let from_fallback = parse_envelope(&mapping, &old_style, b"{}").expect("valid");
        let from_first = parse_envelope(&mapping, &both, b"{}").expect("valid");
        let neither = parse_envelope(&mapping, &HeaderMap::new(), b"{}").expect_err("missing");

        assert_eq!(from_fallback.event_id, "w-1");
        assert_eq!(from_first.event_id, "e-1");
        assert_eq!(
            neither.reason,
            "event_id (header x-shopify-event-id or header x-shopify-webhook-id) is missing"
        );
    }

    #[test]
    fn a_present_but_bad_place_does_not_fall_through() {
        let mapping = dedup(first_of(&["/id", "header:X-Id"]));
        let mut headers = HeaderMap::new();
        headers.insert("x-id", "h-1".parse().expect("header"));

        let numeric = parse_envelope(&mapping, &headers, br#"{"id":7}"#).expect_err("number");
        let absent = parse_envelope(&mapping, &headers, b"{}").expect("falls back");

        assert_eq!(numeric.reason, "event_id (/id) must be a string");
        assert_eq!(absent.event_id, "h-1");
    }

    #[test]
    fn fields_print_in_config_spelling() {
        assert_eq!(first_of(&["/data/id"]).to_string(), "/data/id");
        assert_eq!(
            first_of(&["header:svix-id", "header:Webhook-Id"]).to_string(),
            r#"["header:svix-id", "header:webhook-id"]"#
        );
    }
}
