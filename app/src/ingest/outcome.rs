//! What became of a delivery: the outcomes, and the one table that decides an unclaimed
//! delivery's outcome from what its claim met. The statements that decide a claimed delivery's
//! outcome (applied, stale, accepted) are in `write`, built from the same vocabulary.

use crate::db::dialect::Fields;
use crate::envelope::Mode;
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

/// What the inbox holds that a delivery's claim met, read in one statement (`write::Statements::classify`).
pub(super) struct Met {
    /// The row of the same event id, if any: whether its content is this delivery's.
    pub same_content: Option<bool>,
    /// The event that carried this signed body (schemes that sign the body alone).
    pub body_holder: Option<String>,
    /// The event holding this object revision.
    pub revision_holder: Option<String>,
    /// The day (since 1970-01-01) the inbox received the row of the same event id, if any.
    pub event_day: Option<i64>,
}

impl Met {
    /// What the classification read.
    pub(super) fn of(row: &impl Fields) -> Result<Met, sea_orm::DbErr> {
        Ok(Met {
            same_content: row.flag("same_content")?,
            body_holder: row.text("body_holder")?,
            revision_holder: row.text("revision_holder")?,
            event_day: row.int("event_day")?,
        })
    }

    /// Nothing at all: the row the claim met is gone (purged since).
    pub(super) fn is_empty(&self) -> bool {
        self.same_content.is_none() && self.body_holder.is_none() && self.revision_holder.is_none()
    }

    /// The outcome of a delivery that was not claimed.
    pub(super) fn outcome(self, mode: Mode) -> Outcome {
        match self.same_content {
            None => match self.body_holder {
                Some(original_event_id) => Outcome::ReplayedBody { original_event_id },
                None => Outcome::ReusedRevision {
                    existing_event_id: self.revision_holder,
                },
            },
            // Dedup sources promise nothing about content: the event id alone is the identity.
            Some(_) if mode == Mode::Dedup => Outcome::Duplicate,
            Some(true) => Outcome::Duplicate,
            Some(false) => Outcome::ReusedEventId,
        }
    }
}

/// The claimed path's answer: the archive row's id, the outcome it decided and (stale) the
/// projection's revision as the statement read it.
pub(super) fn claimed_answer(
    row: &impl Fields,
) -> Result<(i64, OutcomeKind, Option<i64>), sea_orm::DbErr> {
    let id = row.int("id")?.ok_or_else(|| {
        sea_orm::DbErr::Type("the ingest statement answered no archive id".into())
    })?;
    let name = row.text("outcome")?.unwrap_or_default();
    let kind = OutcomeKind::parse(&name).ok_or_else(|| {
        sea_orm::DbErr::Type(format!(
            "the ingest statement answered an unknown outcome {name:?}"
        ))
    })?;
    Ok((id, kind, row.int("current_revision")?))
}
