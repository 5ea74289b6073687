//! The write path's parameters, bound by name ([`Binds`]): a valid delivery's ([`Delivery`],
//! which every statement of `write` reads) and an archive row's ([`ArchiveRow`], an unclaimed
//! outcome's row, which its statement reads with the outcome decided).

use super::Received;
use super::outcome::Outcome;
use crate::db::dialect::{Binds, Dialect, Param};
use crate::envelope::{Envelope, Mode};

/// A valid delivery's parameters, by name.
pub(super) struct Delivery<'a> {
    pub dialect: Dialect,
    pub received: &'a Received<'a>,
    pub envelope: &'a Envelope,
    /// A snapshot source's delivery with its object, revision and snapshot: it is projected.
    pub projected: bool,
    /// A dedup source's delivery: its event id alone is its identity.
    dedup: bool,
    /// Where an applied or accepted outcome is forwarded, as a JSON array.
    destinations: String,
    /// What a forward delivery carries without a snapshot: a dedup source's whole body (only
    /// when there is somewhere to forward it).
    pub(super) body_payload: Option<String>,
    now: chrono::DateTime<chrono::Utc>,
}

impl<'a> Delivery<'a> {
    pub(super) fn new(
        dialect: Dialect,
        mode: Mode,
        received: &'a Received<'a>,
        envelope: &'a Envelope,
    ) -> Delivery<'a> {
        let projected = mode == Mode::Snapshot
            && envelope.object_id.is_some()
            && envelope.revision.is_some()
            && envelope.snapshot.is_some();
        // A form is forwarded as the JSON object of its fields: the payload is embedded as JSON.
        let body_payload = (envelope.snapshot.is_none() && !received.forward_to.is_empty())
            .then(|| super::payload_text(received.body_fields.as_deref(), received.body));
        let destinations = serde_json::Value::from(received.forward_to.to_vec()).to_string();
        Delivery {
            dialect,
            received,
            envelope,
            projected,
            dedup: mode == Mode::Dedup,
            destinations,
            body_payload,
            now: chrono::Utc::now(),
        }
    }

    pub(super) fn revision(&self) -> Option<i64> {
        self.envelope.revision.map(|r| r.get())
    }
}

impl Binds for Delivery<'_> {
    fn param(&self, name: &str) -> Option<Param<'_>> {
        let received = self.received;
        let envelope = self.envelope;
        let snapshot = envelope.snapshot.as_ref();
        Some(match name {
            "event_id" => envelope.event_id.as_str().into(),
            "object_id" => envelope.object_id.as_deref().into(),
            "revision" => self.revision().into(),
            "snapshot" => snapshot.map(|s| s.raw.as_str()).into(),
            "canonical" => snapshot.map(|s| s.canonical()).into(),
            // The content the classification compares: what the dialect stores as identity.
            "content" => snapshot
                .map(|s| {
                    if self.dialect.compares_canonical() {
                        s.canonical()
                    } else {
                        s.raw.as_str()
                    }
                })
                .into(),
            "digest" => received.signed_body_digest.as_ref().map(|d| &d[..]).into(),
            "event_type" => envelope.event_type.as_deref().into(),
            "destinations" => self.destinations.as_str().into(),
            "body_payload" => self.body_payload.as_deref().into(),
            "now" => self.now.into(),
            "projected" => self.projected.into(),
            "dedup" => self.dedup.into(),
            _ => return as_received(received, name),
        })
    }
}

/// An archive row's parameters, by name: the delivery as received, the identity it is archived
/// under and its outcome.
pub(super) struct ArchiveRow<'a> {
    pub received: &'a Received<'a>,
    pub event_id: Option<&'a str>,
    pub object_id: Option<&'a str>,
    pub revision: Option<i64>,
    pub event_type: Option<&'a str>,
    pub outcome: &'a Outcome,
    pub error_message: Option<String>,
    /// The failure's class (`problem::error_class`), from the outcome and the message.
    pub error_class: Option<String>,
    /// The day (since 1970-01-01) the inbox received the event's first delivery, if it holds
    /// the event: where a duplicate looks for the body it refers to.
    pub event_day: Option<i64>,
}

impl<'a> ArchiveRow<'a> {
    /// The row of `outcome`: its error message and class as the outcome gives them.
    pub(super) fn of(
        received: &'a Received<'a>,
        outcome: &'a Outcome,
        identity: (
            Option<&'a str>,
            Option<&'a str>,
            Option<i64>,
            Option<&'a str>,
        ),
    ) -> ArchiveRow<'a> {
        let (event_id, object_id, revision, event_type) = identity;
        let error_message = outcome.error_message();
        let error_class = super::problem::error_class(outcome.kind(), error_message.as_deref());
        ArchiveRow {
            received,
            event_id,
            object_id,
            revision,
            event_type,
            outcome,
            error_message,
            error_class,
            event_day: None,
        }
    }
}

impl Binds for ArchiveRow<'_> {
    fn param(&self, name: &str) -> Option<Param<'_>> {
        Some(match name {
            "event_id" => self.event_id.into(),
            "object_id" => self.object_id.into(),
            "revision" => self.revision.into(),
            "event_type" => self.event_type.into(),
            "status" => self.outcome.status().as_str().into(),
            "outcome" => self.outcome.name().into(),
            "error_message" => self.error_message.as_deref().into(),
            "error_class" => self.error_class.as_deref().into(),
            "event_day" if self.event_day.is_some() => self.event_day.into(),
            _ => return as_received(self.received, name),
        })
    }
}

/// What every statement of the write path binds of a delivery as received, by name;
/// `event_day` is the day it was received (where its own archive row goes).
fn as_received<'a>(received: &'a Received<'a>, name: &str) -> Option<Param<'a>> {
    Some(match name {
        "source" => received.source.into(),
        "headers" => received.headers_json.into(),
        "body" => received.body.into(),
        "body_fields" => received.body_fields.as_deref().into(),
        "received_at" => received.received_at.into(),
        "replay_of" => received.replay_of.into(),
        "replayed_by" => received.replayed_by.into(),
        "event_day" => crate::db::days::day_number(received.received_at).into(),
        _ => return None,
    })
}
