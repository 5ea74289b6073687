//! What the top bar's search finds: objects and events by id or by body.

use super::EventRow;
use serde::{Deserialize, Serialize};

/// Which part of a delivery matched what was typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MatchField {
    EventId,
    ObjectId,
    /// A value somewhere in the body.
    Body,
}

/// How an id matched (case aside); a body value always matches whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MatchHow {
    Exact,
    Prefix,
    Suffix,
    Value,
    /// A part of a text value in a body, whatever the case.
    Part,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Match {
    pub field: MatchField,
    pub how: MatchHow,
}

impl Match {
    /// In words: `object id ends with it`, `a body value`.
    pub fn words(self) -> &'static str {
        match (self.field, self.how) {
            (MatchField::Body, MatchHow::Part) => "a text in a body holds it",
            (MatchField::Body, _) => "a value in a body",
            (MatchField::EventId, MatchHow::Prefix) => "event id starts with it",
            (MatchField::EventId, MatchHow::Suffix) => "event id ends with it",
            (MatchField::EventId, _) => "event id",
            (MatchField::ObjectId, MatchHow::Prefix) => "object id starts with it",
            (MatchField::ObjectId, MatchHow::Suffix) => "object id ends with it",
            (MatchField::ObjectId, _) => "object id",
        }
    }
}

/// An object the search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoundObject {
    pub source: String,
    pub object_id: String,
    /// Its projection's revision and when it was updated (RFC 3339, UTC); `None` for an object of
    /// a dedup source, which has no projection, or one never applied.
    pub current_revision: Option<i64>,
    pub updated_at: Option<String>,
    /// How many of its events the inbox accepted, counted up to [`FoundObject::ACCEPTED_COUNTED`]
    /// (`accepted_more`: there are more); shown where there is no projection.
    pub accepted: i64,
    pub accepted_more: bool,
    /// Its newest archived delivery; `None` when retention purged them all.
    pub newest: Option<EventRow>,
    /// How it matched, each way once.
    pub matched: Vec<Match>,
}

impl FoundObject {
    /// The most accepted deliveries of one object the search counts.
    pub const ACCEPTED_COUNTED: i64 = 1000;
}

/// An event without an object id the search found (events with one are found as their object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoundEvent {
    pub source: String,
    /// `None` for a delivery found by its body that carries no event id (an invalid one).
    pub event_id: Option<String>,
    /// Its newest archived delivery; `None` when retention purged them all.
    pub newest: Option<EventRow>,
    pub matched: Vec<Match>,
}

/// What a search found, and what it searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindResult {
    /// What was searched for: trimmed (a leading `#` kept; ids are searched without it).
    pub q: String,
    /// Exact id matches first, then by id, then body matches newest first.
    pub objects: Vec<FoundObject>,
    pub events: Vec<FoundEvent>,
    /// More objects (events) matched than are shown.
    pub more_objects: bool,
    pub more_events: bool,
    /// The most objects, and events, a result shows.
    pub limit: usize,
    /// What was searched, in words: "every accepted event's ids, …" or "the newest 100,000
    /// deliveries …".
    pub searched: String,
    /// More deliveries hold the value than the body search reads (`body_limit`, the newest).
    pub body_more: bool,
    pub body_limit: usize,
    /// Whether the SQLite scan stopped at its bound: older deliveries were searched only by exact id.
    pub bound_reached: bool,
}

impl FindResult {
    /// Nothing found, in words naming what was searched.
    pub fn nothing_found(&self) -> String {
        let bare = self.q.strip_prefix('#').map(str::trim).unwrap_or(&self.q);
        let held = if bare == self.q {
            format!("\"{bare}\"")
        } else {
            format!("\"{}\" or \"{bare}\"", self.q)
        };
        format!(
            "No event id or object id equal to, starting with or ending with \"{bare}\", and no delivery body holding {held} (searched {}).",
            self.searched,
        )
    }
}

/// The accepted deliveries of one object, for sources without a projection (dedup mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectDeliveries {
    /// The source deduplicates only: hookbox keeps no revisions of its objects.
    pub dedup: bool,
    /// Newest first, at most `limit`.
    pub rows: Vec<EventRow>,
    pub limit: usize,
    /// How many events of the object the inbox accepted, counted up to
    /// [`FoundObject::ACCEPTED_COUNTED`] (`accepted_more`: there are more).
    pub accepted: i64,
    pub accepted_more: bool,
}
