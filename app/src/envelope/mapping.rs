//! Where a source finds a delivery's identities: its [`Mode`], and for each identity the
//! [`Field`] (one or more places, each a [`FieldRef`]: a JSON pointer or a header) in its
//! [`Mapping`]. Each prints in the config spelling it is read from.

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
    /// `sha256:` and the hex SHA-256 of the raw body (`body:sha256` in the config): the event id
    /// of a provider that sends none, so its retry of the same body is a duplicate.
    BodyDigest,
}

impl FieldRef {
    /// Parses the config spelling: `/a/b`, `header:Name` or `body:sha256`.
    pub fn parse(spec: &str) -> Result<FieldRef, String> {
        if spec == "body:sha256" {
            return Ok(FieldRef::BodyDigest);
        }
        if let Some(name) = spec.strip_prefix("header:") {
            return http::HeaderName::from_bytes(name.trim().as_bytes())
                .map(FieldRef::Header)
                .map_err(|_| format!("{spec:?} names an invalid header"));
        }
        if spec.is_empty() || spec.starts_with('/') {
            return Ok(FieldRef::Pointer(spec.to_string()));
        }
        Err(format!(
            "{spec:?} is neither a JSON pointer (\"/field\"), \"header:<name>\" nor \"body:sha256\""
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
    pub(super) fn describe(&self) -> String {
        match self {
            FieldRef::Pointer(p) => p.clone(),
            FieldRef::Header(h) => format!("header {h}"),
            FieldRef::BodyDigest => "the body's SHA-256".to_string(),
        }
    }
}

/// The config spelling, which [`FieldRef::parse`] reads back.
impl std::fmt::Display for FieldRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldRef::Pointer(p) => f.write_str(p),
            FieldRef::Header(h) => write!(f, "header:{h}"),
            FieldRef::BodyDigest => f.write_str("body:sha256"),
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

    pub(super) fn describe(&self) -> String {
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
