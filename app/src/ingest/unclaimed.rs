//! A delivery the claim did not take (a retry, a reused id or revision, a replayed body): what
//! the claim met in the inbox, and the outcome that decides ([`outcome`], SQL written once for
//! both databases and both places it runs). Its archive row is `write`'s.
//!
//! On PostgreSQL the claimed statement carries the same reading (`write::postgres_claimed`): a
//! retry of a delivery committed before the statement's snapshot, the common case, is classified
//! there, and only its archive row takes a statement of its own. What that snapshot cannot see
//! (a row another delivery committed while the claim waited for it) and SQLite's unclaimed
//! deliveries run [`reading`] as a statement of its own, whose fresh snapshot sees it.

use super::outcome::{Outcome, literal};
use crate::db::dialect::{Dialect, Fields};
use crate::model::OutcomeKind;

/// What the inbox holds that a delivery's claim met, as one select list (one snapshot):
/// `same_content` (null when no row has the event id), `body_holder` (the event that carried that
/// signed body), `revision_holder` (the event holding that object revision), `event_day` (the day
/// the inbox received the row of the event id). Content is compared as `jsonb` on PostgreSQL,
/// through the canonical form on SQLite.
fn met_columns(dialect: Dialect) -> String {
    let (column, content) = if dialect.compares_canonical() {
        ("snapshot_canonical", ":content".to_string())
    } else {
        ("snapshot", dialect.json(":content"))
    };
    format!(
        "(SELECT {same_object} AND {same_revision} AND {same_content}
       FROM webhook_inbox WHERE source = :source AND event_id = :event_id) AS same_content,
    (SELECT event_id FROM webhook_inbox
      WHERE source = :source AND signed_body_digest = :digest LIMIT 1) AS body_holder,
    (SELECT event_id FROM webhook_inbox
      WHERE source = :source AND object_id = :object_id AND revision = :revision LIMIT 1) AS revision_holder,
    (SELECT {day} FROM webhook_inbox
      WHERE source = :source AND event_id = :event_id) AS event_day",
        day = dialect.day_number("received_at"),
        same_object = dialect.is_same("object_id", ":object_id"),
        same_revision = dialect.is_same("revision", ":revision"),
        same_content = dialect.is_same(column, &content),
    )
}

/// The outcome of an unclaimed delivery from what its claim met (the columns of
/// [`met_columns`] under `met`), as the vocabulary spells it: the one place the rule is written.
/// No row of the event id: the body's earlier event makes it a replayed body (a duplicate of
/// that event), else another event holds the revision. A row of the event id: a duplicate when
/// its content is this delivery's, or whatever it holds for a dedup source (`:dedup`: the event
/// id alone is the identity), else a reused event id.
fn outcome(met: &str) -> String {
    let duplicate = literal(OutcomeKind::Duplicate);
    format!(
        "CASE WHEN {met}.same_content IS NULL THEN
            CASE WHEN {met}.body_holder IS NOT NULL THEN {duplicate} ELSE {reused_revision} END
          WHEN :dedup OR {met}.same_content THEN {duplicate}
          ELSE {reused_event_id} END",
        reused_revision = literal(OutcomeKind::ReusedRevision),
        reused_event_id = literal(OutcomeKind::ReusedEventId),
    )
}

/// The reading as a query to select from: [`met_columns`] and their `outcome`.
pub(super) fn reading(dialect: Dialect) -> String {
    format!(
        "SELECT m.*, {outcome} AS outcome FROM (SELECT {columns}) AS m",
        outcome = outcome("m"),
        columns = met_columns(dialect),
    )
}

/// What the inbox holds that a delivery's claim met, and the outcome [`outcome`] read from it.
#[derive(Default)]
pub(super) struct Met {
    /// The row of the same event id, if any: whether its content is this delivery's.
    pub same_content: Option<bool>,
    /// The event that carried this signed body (schemes that sign the body alone).
    pub body_holder: Option<String>,
    /// The event holding this object revision.
    pub revision_holder: Option<String>,
    /// The day (since 1970-01-01) the inbox received the row of the same event id, if any.
    pub event_day: Option<i64>,
    /// The outcome's name as the statement decided it.
    pub kind: Option<OutcomeKind>,
}

impl Met {
    /// What a row of [`reading`] holds; an outcome the vocabulary does not know is an error.
    pub(super) fn of(row: &impl Fields) -> Result<Met, sea_orm::DbErr> {
        let name = row.text("outcome")?.unwrap_or_default();
        let kind = OutcomeKind::parse(&name).ok_or_else(|| {
            sea_orm::DbErr::Type(format!(
                "the classification answered an unknown outcome {name:?}"
            ))
        })?;
        Ok(Met {
            same_content: row.flag("same_content")?,
            body_holder: row.text("body_holder")?,
            revision_holder: row.text("revision_holder")?,
            event_day: row.int("event_day")?,
            kind: Some(kind),
        })
    }

    /// Nothing at all: the row the claim met is gone (purged since), or committed after the
    /// snapshot that read it.
    pub(super) fn is_empty(&self) -> bool {
        self.same_content.is_none() && self.body_holder.is_none() && self.revision_holder.is_none()
    }

    /// The outcome as decided, with what it names: a duplicate without a row of its event id is
    /// the replay of the body's earlier event.
    pub(super) fn outcome(self) -> Result<Outcome, sea_orm::DbErr> {
        Ok(match (self.kind, self.same_content, self.body_holder) {
            (Some(OutcomeKind::Duplicate), Some(_), _) => Outcome::Duplicate,
            (Some(OutcomeKind::Duplicate), None, Some(original_event_id)) => {
                Outcome::ReplayedBody { original_event_id }
            }
            (Some(OutcomeKind::ReusedEventId), Some(_), _) => Outcome::ReusedEventId,
            (Some(OutcomeKind::ReusedRevision), None, _) => Outcome::ReusedRevision {
                existing_event_id: self.revision_holder,
            },
            (kind, same_content, _) => {
                return Err(sea_orm::DbErr::Type(format!(
                    "the classification decided {kind:?} with same_content {same_content:?}"
                )));
            }
        })
    }
}
