//! What became of a delivery: the outcomes. The statements that decide them are built from the
//! same vocabulary: a claimed delivery's (applied, stale, accepted) in `write`, an unclaimed
//! one's in `unclaimed`.

use crate::model::{OutcomeKind, Status};

/// What became of a delivery: its answer and its archive status (`docs/webhooks.md`, sections 4
/// and 6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// New event; the projection moved to its revision.
    Applied { revision: i64 },
    /// New event, older than the object's current revision.
    Stale {
        revision: i64,
        current_revision: i64,
    },
    /// New event of a dedup source.
    Accepted,
    /// The same event again: recorded, nothing changed.
    Duplicate,
    /// A signed body that an earlier event carried, arriving under another delivery id: schemes
    /// that sign only the body (GitHub, Shopify) leave the id unsigned, so this is a replay of
    /// `original_event_id` (recorded as a duplicate of it), never a new event.
    ReplayedBody { original_event_id: String },
    /// The event id was accepted before with other content.
    ReusedEventId,
    /// Another event id already holds this object revision.
    ReusedRevision { existing_event_id: Option<String> },
    /// The body broke the envelope rules.
    Invalid { reason: String },
}

impl Outcome {
    /// The archive's `outcome` column.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Applied { .. } => OutcomeKind::Applied,
            Outcome::Stale { .. } => OutcomeKind::Stale,
            Outcome::Accepted => OutcomeKind::Accepted,
            Outcome::Duplicate | Outcome::ReplayedBody { .. } => OutcomeKind::Duplicate,
            Outcome::ReusedEventId => OutcomeKind::ReusedEventId,
            Outcome::ReusedRevision { .. } => OutcomeKind::ReusedRevision,
            Outcome::Invalid { .. } => OutcomeKind::Invalid,
        }
    }

    /// The archive's `status` column, from the one mapping (`OutcomeKind::status`).
    pub fn status(&self) -> Status {
        self.kind().status()
    }

    /// The outcome's name, as the archive, the answers and the metrics spell it.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The archive's `error_message` column.
    pub fn error_message(&self) -> Option<String> {
        match self {
            Outcome::ReusedEventId => {
                Some("event id was accepted before with other content".into())
            }
            Outcome::ReusedRevision {
                existing_event_id: Some(id),
            } => Some(format!("object revision is already held by event {id}")),
            Outcome::ReusedRevision {
                existing_event_id: None,
            } => Some("object revision is already held by another event".into()),
            Outcome::ReplayedBody { original_event_id } => Some(format!(
                "the signed body was delivered before as event {original_event_id}: a replay under another delivery id"
            )),
            Outcome::Invalid { reason } => Some(reason.clone()),
            _ => None,
        }
    }
}

impl Outcome {
    /// A claimed delivery's outcome as its statement decided it: applied or stale for a
    /// projected delivery (its revision known), accepted otherwise. Anything else is an error:
    /// a claim decides nothing else.
    pub(super) fn claimed(
        kind: OutcomeKind,
        revision: Option<i64>,
        current_revision: Option<i64>,
    ) -> Result<Outcome, sea_orm::DbErr> {
        match (kind, revision) {
            (OutcomeKind::Applied, Some(revision)) => Ok(Outcome::Applied { revision }),
            (OutcomeKind::Stale, Some(revision)) => Ok(Outcome::Stale {
                revision,
                current_revision: current_revision.unwrap_or(revision),
            }),
            (OutcomeKind::Accepted, _) => Ok(Outcome::Accepted),
            (kind, revision) => Err(sea_orm::DbErr::Type(format!(
                "a claim cannot decide {kind} (revision {revision:?})"
            ))),
        }
    }
}

/// An outcome's name as an SQL literal: how the statements spell the vocabulary.
pub(super) fn literal(kind: OutcomeKind) -> String {
    format!("'{}'", kind.as_str())
}
