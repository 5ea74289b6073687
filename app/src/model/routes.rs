//! What the dashboard and the API say of routes (contract section 16): each configured route,
//! what a route would match among a source's newest deliveries, and why each destination of a
//! delivery's source was or was not sent it.

use serde::{Deserialize, Serialize};

/// A configured route (`[[routes]]`), as `GET /api/v1/routes` and `/sources` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RouteInfo {
    /// Its `name`, else `#N`: its place among the file's routes.
    pub name: String,
    pub source: String,
    pub destination: String,
    /// The globs of its event types; absent: every event type.
    pub event_types: Option<Vec<String>>,
    /// The object its deliveries' JSON contains; absent: every delivery.
    #[serde(rename = "match")]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<Object>))]
    pub matches: Option<serde_json::Value>,
}

/// How many of a source's newest deliveries that applied or were accepted a route would match
/// (`POST /api/v1/routes/preview`, the panel on `/sources`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ssr", schema(example = json!({
    "source": "shop", "limit": 1000, "considered": 1000, "matched": 312, "unmatched": 688,
    "body_expired": 0, "matched_ids": [48120, 48117], "unmatched_ids": [48119, 48118],
    "unmatched_examples": [{"id": 48119, "why": "event type order.created matches none of invoice.*"}]
})))]
pub struct RoutePreview {
    pub source: String,
    /// How many deliveries were asked for, and how many there were.
    pub limit: u32,
    pub considered: u32,
    pub matched: u32,
    pub unmatched: u32,
    /// Deliveries whose body expired, when the route reads bodies: neither side.
    pub body_expired: u32,
    /// Up to 20 archive ids of each side, the newest first.
    pub matched_ids: Vec<i64>,
    pub unmatched_ids: Vec<i64>,
    /// The condition each of `unmatched_ids` failed.
    pub unmatched_examples: Vec<Unmatched>,
}

/// A delivery a route would not send, and the condition it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Unmatched {
    pub id: i64,
    pub why: String,
}

/// For a delivery's event page: a destination of its source, whether it was sent the delivery,
/// and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DestinationVerdict {
    pub destination: String,
    /// Whether a forward delivery of this delivery to it exists.
    pub sent: bool,
    /// In words: the route that matched, `forward`, or each route's failed condition; what the
    /// outcome means when it is never forwarded.
    pub why: String,
}

/// The routes panel of `/sources`: each route the viewer sees, with its preview over the last
/// [`PANEL_PREVIEW`] deliveries when there was time for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoutesPanel {
    pub routes: Vec<(RouteInfo, Option<RoutePreview>)>,
    /// Why some previews are missing (too many routes, another search running, the deadline).
    pub note: Option<String>,
}

/// The deliveries a route's preview on `/sources` considers.
pub const PANEL_PREVIEW: u32 = 1_000;
/// The most routes `/sources` previews when it opens; the API previews any.
pub const PANEL_PREVIEWS: usize = 20;
