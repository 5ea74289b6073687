//! A problem's changes: whether a cause is open, decided under its `problems` row's lock, and
//! the message it calls for recorded in the same transaction ([`notice`]). One implementation
//! for every caller: an operator's state (in its transaction), a replay that resolves (in the
//! replay's), a delivery that failed (in its own, [`failed`]), and the notifier's sweep that
//! finds what a purge or a restore left undecided (`crate::notify::sweep`).

use super::covered::{covered, covers_any};
use crate::db::dialect::Dialect;
use crate::db::notifications::{self, Subject};
use crate::db::statement;
use crate::model::{Cause, NotifyEvent, ProblemInfo, ProblemState, Stage};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, Value};

/// The `problems` row of a cause: its id, and what the last change recorded said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub id: i64,
    pub open: bool,
    pub changes: i64,
}

fn key(cause: &Cause, class: &str) -> Vec<Value> {
    vec![
        cause.source.clone().into(),
        cause.outcome.as_str().into(),
        class.into(),
    ]
}

/// The `problems` row of `cause`, made when it has none (closed, no change yet); with
/// `lock`, locked for the rest of the transaction (PostgreSQL: `FOR UPDATE`; SQLite's writer is
/// one at a time).
pub async fn mark<C: ConnectionTrait>(
    conn: &C,
    cause: &Cause,
    class: &str,
    lock: bool,
) -> Result<Mark, DbErr> {
    let dialect = Dialect::of(conn.get_database_backend());
    // `changed_at`: when it was made, until its first change (the purge's age of a mark).
    let mut values = key(cause, class);
    values.push(crate::clock::now().into());
    conn.execute_raw(statement(
        dialect,
        "INSERT INTO problems (source, outcome, error_class, changed_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (source, outcome, error_class) DO NOTHING",
        values,
    ))
    .await?;
    let row = conn
        .query_one_raw(statement(
            dialect,
            format!(
                "SELECT id, open, changes FROM problems
                 WHERE source = $1 AND outcome = $2 AND error_class = $3{}",
                if lock { dialect.lock_for_update() } else { "" }
            ),
            key(cause, class),
        ))
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("no problem row for {}", cause.in_words())))?;
    Ok(Mark {
        id: row.try_get("", "id")?,
        open: row.try_get("", "open")?,
        changes: row.try_get("", "changes")?,
    })
}

/// What an operator said of `cause`, if anything.
async fn state_of<C: ConnectionTrait>(
    conn: &C,
    cause: &Cause,
    class: &str,
) -> Result<Option<ProblemState>, DbErr> {
    let row = conn
        .query_one_raw(statement(
            conn.get_database_backend(),
            "SELECT state FROM problem_states
             WHERE source = $1 AND outcome = $2 AND error_class = $3",
            key(cause, class),
        ))
        .await?;
    row.map(|r| r.try_get("", "state")).transpose()
}

/// Whether `cause` has an open failure: none when it is ignored, else one no replay resolved
/// and no resolve came after ([`covers_any`], the one definition).
pub async fn is_open<C: ConnectionTrait>(conn: &C, cause: &Cause) -> Result<bool, DbErr> {
    let Some(class) = cause.class.as_deref() else {
        return Ok(false);
    };
    if state_of(conn, cause, class).await? == Some(ProblemState::Ignored) {
        return Ok(false);
    }
    covers_any(conn, cause).await
}

/// The open failures of `cause`, counted ([`is_open`]'s rows).
pub async fn open_failures<C: ConnectionTrait>(conn: &C, cause: &Cause) -> Result<i64, DbErr> {
    let Some(class) = cause.class.as_deref() else {
        return Ok(0);
    };
    if state_of(conn, cause, class).await? == Some(ProblemState::Ignored) {
        return Ok(0);
    }
    covered(conn, cause).await
}

/// Decides whether `cause` changed, under its row's lock, and records the change and its
/// message in `conn`'s transaction: `problem.opened` (its first open failure),
/// `problem.reopened` (open again after it closed), `problem.resolved` (its open failures
/// reached 0; an ignored cause closes without a message). Only causes of deliveries a source
/// received are told (a destination's are told by `destination.dead`). Answers the event, if
/// any.
pub async fn notice<C: ConnectionTrait>(
    conn: &C,
    cause: &Cause,
) -> Result<Option<NotifyEvent>, DbErr> {
    let (Stage::Ingest(_), Some(class)) = (cause.outcome, cause.class.as_deref()) else {
        return Ok(None);
    };
    let mark = mark(conn, cause, class, true).await?;
    let open = is_open(conn, cause).await?;
    let event = match (mark.open, open) {
        (false, true) if mark.changes == 0 => NotifyEvent::Opened,
        (false, true) => NotifyEvent::Reopened,
        (true, false) => NotifyEvent::Resolved,
        _ => return Ok(None),
    };
    conn.execute_raw(statement(
        conn.get_database_backend(),
        "UPDATE problems SET open = $1, changes = changes + 1, changed_at = $2 WHERE id = $3",
        vec![open.into(), crate::clock::now().into(), mark.id.into()],
    ))
    .await?;
    let state = state_of(conn, cause, class).await?;
    if event == NotifyEvent::Resolved && state == Some(ProblemState::Ignored) {
        return Ok(None);
    }
    // Counted only for a change: a storm of failures of an open cause never counts them.
    let count = if open {
        open_failures(conn, cause).await?
    } else {
        0
    };
    let facts = facts(conn, cause, class, mark.id, state, count).await?;
    notifications::record(
        conn,
        event,
        &Subject::Problem(mark.id),
        &cause.source,
        &facts,
    )
    .await?;
    Ok(Some(event))
}

/// What a failure of `cause` changes, in the failing delivery's transaction: nothing when the
/// cause is already marked open or is ignored (checked under a shared lock on its row, so
/// failures of one open cause never wait for each other, and a change deciding it closed waits
/// for this delivery, then counts it), else [`notice`] decides under the row's lock.
pub async fn failed<C: ConnectionTrait>(conn: &C, cause: &Cause) -> Result<(), DbErr> {
    let (Stage::Ingest(_), Some(class)) = (cause.outcome, cause.class.as_deref()) else {
        return Ok(());
    };
    let dialect = Dialect::of(conn.get_database_backend());
    let unchanged = conn
        .query_one_raw(statement(
            dialect,
            unchanged_by_a_failure(dialect, ("$1", "$2", "$3")),
            key(cause, class),
        ))
        .await?
        .is_some();
    if !unchanged {
        notice(conn, cause).await?;
    }
    Ok(())
}

/// The `problems` row (its `id`) of the cause whose source, outcome and class are the values
/// `(source, outcome, class)` stand for, when a failure of it changes nothing: the cause is
/// marked open, or ignored. Locked `FOR SHARE` until commit (on PostgreSQL), so failures of one
/// open cause never wait for each other and a change deciding it closed waits for them.
pub(crate) fn unchanged_by_a_failure(
    dialect: Dialect,
    (source, outcome, class): (&str, &str, &str),
) -> String {
    format!(
        "SELECT p.id FROM problems p
         WHERE p.source = {source} AND p.outcome = {outcome} AND p.error_class = {class}
           AND (p.open OR EXISTS (SELECT 1 FROM problem_states s
                                  WHERE s.source = {source} AND s.outcome = {outcome}
                                    AND s.error_class = {class} AND s.state = '{ignored}')){share}",
        ignored = ProblemState::Ignored.as_str(),
        share = dialect.lock_for_share(),
    )
}

/// The problem as the API shows it, now: its counts and times from its open failures.
pub async fn facts<C: ConnectionTrait>(
    conn: &C,
    cause: &Cause,
    class: &str,
    id: i64,
    state: Option<ProblemState>,
    open: i64,
) -> Result<ProblemInfo, DbErr> {
    let f = super::Failures::of(cause.outcome);
    let row = conn
        .query_one_raw(statement(
            conn.get_database_backend(),
            format!(
                "SELECT min({at}) AS first_seen, max({at}) AS last_seen, max(e.id) AS example
                 FROM {table} WHERE {of_cause}",
                at = f.at,
                table = f.table,
                of_cause = f.of_cause(("$1", "$2", "$3")),
            ),
            key(cause, class),
        ))
        .await?;
    let seen = |column: &str| -> Result<Option<String>, DbErr> {
        Ok(match &row {
            Some(row) => row
                .try_get::<Option<DateTime<Utc>>>("", column)?
                .map(|at| at.to_rfc3339()),
            None => None,
        })
    };
    let state_word = match (state, open) {
        (Some(ProblemState::Ignored), _) => "ignored",
        (_, 0) => "resolved",
        (Some(ProblemState::Acknowledged), _) => "acknowledged",
        _ => "open",
    };
    Ok(ProblemInfo {
        id,
        source: cause.source.clone(),
        outcome: cause.outcome,
        class: class.to_string(),
        state: state_word.into(),
        open_failures: open,
        first_seen: seen("first_seen")?,
        last_seen: seen("last_seen")?,
        example_event_id: match &row {
            Some(row) => row.try_get("", "example")?,
            None => None,
        },
    })
}
