//! Problems: open failures grouped by cause, the states operators give causes
//! (`problem_states`), and the counts the overview and the alert metrics show.
//!
//! What an open failure is, the one definition every view reads, is `db::open_failures`. An
//! **open problem** is a cause with an open failure. Both are read through
//! `ix_webhook_events_open_failures` (migration m20261203_000013).

use super::Db;
use super::audit::{AuditEntry, audit_on};
use super::open_failures::unresolved;
use crate::model::{
    AuditAction, Cause, OpenProblems, OutcomeKind, ProblemGroup, ProblemState, ProblemsPage,
};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, Statement, TransactionTrait, Value};

/// Problems a list shows at most (the page says how many more there are).
pub const SHOWN_AT_MOST: usize = 200;

/// The failures of every cause with its state, grouped: `which` picks the open causes or the
/// ignored ones. Columns: source, outcome, error_class, n, first_seen, last_seen, example,
/// state, changed_at, changed_by, groups (how many groups in all), failures (in all).
///
/// The unresolved failures are grouped first, on the partial index alone; the states join the
/// groups, not the rows; only a resolved cause has its failures after `changed_at` counted
/// again (a range of the same index), so the common case costs one pass over the index.
fn grouped(which: Which, limit: Option<usize>) -> String {
    let resolved = format!("ps.state = '{}'", ProblemState::Resolved.as_str());
    let condition = match which {
        Which::Open => format!(
            "(c.state IS NULL OR c.state = '{}' OR (c.state = '{}' AND c.n > 0))",
            ProblemState::Acknowledged.as_str(),
            ProblemState::Resolved.as_str()
        ),
        Which::Ignored => format!("c.state = '{}'", ProblemState::Ignored.as_str()),
    };
    // One figure of a resolved cause's failures after it was resolved, else the group's.
    let since = |figure: &str, column: &str| {
        format!(
            "CASE WHEN {resolved} THEN (SELECT {figure} FROM webhook_events e
                 WHERE {unresolved} AND e.source = g.source AND e.outcome = g.outcome
                   AND e.error_class = g.error_class AND e.received_at > ps.changed_at)
             ELSE g.{column} END AS {column}",
            unresolved = unresolved("e"),
        )
    };
    let limit = limit.map(|n| format!("LIMIT {n}")).unwrap_or_default();
    format!(
        "WITH g AS (
            SELECT e.source, e.outcome, e.error_class, count(*) AS n,
                min(e.received_at) AS first_seen, max(e.received_at) AS last_seen,
                max(e.id) AS example
            FROM webhook_events e WHERE {unresolved}
            GROUP BY e.source, e.outcome, e.error_class
         )
         SELECT c.*, count(*) OVER () AS groups, CAST(sum(c.n) OVER () AS BIGINT) AS failures
         FROM (
            SELECT g.source, g.outcome, g.error_class, {n}, {first_seen}, {last_seen}, {example},
                ps.state, ps.changed_at, ps.changed_by
            FROM g LEFT JOIN problem_states ps
              ON ps.source = g.source AND ps.outcome = g.outcome AND ps.error_class = g.error_class
         ) AS c
         WHERE {condition}
         ORDER BY c.last_seen DESC, c.source, c.outcome, c.error_class
         {limit}",
        unresolved = unresolved("e"),
        n = since("count(*)", "n"),
        first_seen = since("min(e.received_at)", "first_seen"),
        last_seen = since("max(e.received_at)", "last_seen"),
        example = since("max(e.id)", "example"),
    )
}

#[derive(Clone, Copy)]
enum Which {
    Open,
    Ignored,
}

/// A group as the query answers it, and the totals it carries.
async fn groups(
    db: &Db,
    which: Which,
    limit: usize,
) -> Result<(Vec<ProblemGroup>, i64, i64), DbErr> {
    let rows = db
        .conn
        .query_all_raw(Statement::from_string(
            db.backend(),
            grouped(which, Some(limit)),
        ))
        .await?;
    let (mut groups, mut total, mut failures) = (Vec::with_capacity(rows.len()), 0, 0);
    for row in &rows {
        total = row.try_get("", "groups")?;
        failures = row.try_get("", "failures")?;
        let state: Option<String> = row.try_get("", "state")?;
        let first_seen: DateTime<Utc> = row.try_get("", "first_seen")?;
        let last_seen: DateTime<Utc> = row.try_get("", "last_seen")?;
        let changed_at: Option<DateTime<Utc>> = row.try_get("", "changed_at")?;
        groups.push(ProblemGroup {
            cause: Cause {
                source: row.try_get("", "source")?,
                outcome: row.try_get::<OutcomeKind>("", "outcome")?,
                class: row.try_get("", "error_class")?,
            },
            count: row.try_get("", "n")?,
            first_seen: first_seen.to_rfc3339(),
            last_seen: last_seen.to_rfc3339(),
            example: row.try_get("", "example")?,
            example_message: None,
            state: state.as_deref().and_then(ProblemState::parse),
            changed_at: changed_at.map(|at| at.to_rfc3339()),
            changed_by: row.try_get("", "changed_by")?,
        });
    }
    Ok((groups, total, failures))
}

/// The `/problems` page: open problems (at most [`SHOWN_AT_MOST`], the most recently failing
/// first), the ignored causes, the totals, each group's example message.
pub async fn problems_page(db: &Db) -> Result<ProblemsPage, DbErr> {
    let (mut open, open_total, open_failures) = groups(db, Which::Open, SHOWN_AT_MOST).await?;
    let (mut ignored, ignored_total, _) = groups(db, Which::Ignored, SHOWN_AT_MOST).await?;
    let examples: Vec<i64> = open.iter().chain(&ignored).map(|g| g.example).collect();
    if !examples.is_empty() {
        let dialect = super::dialect::Dialect::of(db.backend());
        let rows = db
            .conn
            .query_all_raw(Statement::from_sql_and_values(
                db.backend(),
                format!(
                    "SELECT id, error_message FROM webhook_events WHERE id {}",
                    dialect.among_ids("$1")
                ),
                vec![dialect.id_list(&examples).into()],
            ))
            .await?;
        for row in &rows {
            let id: i64 = row.try_get("", "id")?;
            let message: Option<String> = row.try_get("", "error_message")?;
            for group in open.iter_mut().chain(ignored.iter_mut()) {
                if group.example == id {
                    group.example_message = message.clone();
                }
            }
        }
    }
    Ok(ProblemsPage {
        open,
        open_total,
        open_failures,
        ignored,
        ignored_total,
        shown_at_most: SHOWN_AT_MOST,
        can_act: false,
    })
}

/// Open problems and open failures per source, for the alert metrics (sources with none are
/// absent).
pub async fn open_by_source(db: &Db) -> Result<Vec<(String, OpenProblems)>, DbErr> {
    let sql = format!(
        "SELECT source, count(*) AS problems, CAST(sum(n) AS BIGINT) AS failures
         FROM ({}) AS g GROUP BY source ORDER BY source",
        grouped(Which::Open, None)
    );
    let rows = db
        .conn
        .query_all_raw(Statement::from_string(db.backend(), sql))
        .await?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("", "source")?,
                OpenProblems {
                    problems: row.try_get("", "problems")?,
                    failures: row.try_get("", "failures")?,
                },
            ))
        })
        .collect()
}

/// Open problems and open failures in all (the overview).
pub async fn open_counts(db: &Db) -> Result<OpenProblems, DbErr> {
    Ok(open_by_source(db)
        .await?
        .into_iter()
        .fold(OpenProblems::default(), |all, (_, n)| OpenProblems {
            problems: all.problems + n.problems,
            failures: all.failures + n.failures,
        }))
}

/// Why a state could not be set.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// No open or ignored failure has this cause (a stale page, or a made-up cause).
    #[error("no failure has this cause: {0}")]
    NoSuchCause(String),
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

/// Sets what `operator` says of `cause` (`None`: open again, the state removed), and audits it
/// in the same transaction. The cause must be one the page shows: one of its failures is not a
/// replay and not resolved by one. Answers whether anything changed.
pub async fn set_state(
    db: &Db,
    cause: &Cause,
    state: Option<ProblemState>,
    operator: &str,
) -> Result<bool, StateError> {
    let in_words = format!(
        "{} {} {}",
        cause.source,
        cause.outcome,
        cause.class.as_deref().unwrap_or("(unclassified)")
    );
    let Some(class) = cause.class.as_deref() else {
        return Err(StateError::NoSuchCause(in_words));
    };
    let backend = db.backend();
    let key = || -> Vec<Value> {
        vec![
            cause.source.clone().into(),
            cause.outcome.as_str().into(),
            class.into(),
        ]
    };
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    let changed = match state {
        Some(state) => {
            let exists = txn
                .query_one_raw(Statement::from_sql_and_values(
                    backend,
                    format!(
                        "SELECT 1 AS found FROM webhook_events e WHERE {} AND e.source = $1
                           AND e.outcome = $2 AND e.error_class = $3 LIMIT 1",
                        unresolved("e")
                    ),
                    key(),
                ))
                .await?
                .is_some();
            if !exists {
                return Err(StateError::NoSuchCause(in_words));
            }
            let mut values = key();
            values.extend([
                state.as_str().into(),
                Utc::now().into(),
                operator.into(),
            ]);
            txn.execute_raw(Statement::from_sql_and_values(
                backend,
                "INSERT INTO problem_states (source, outcome, error_class, state, changed_at, changed_by)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (source, outcome, error_class) DO UPDATE
                    SET state = excluded.state, changed_at = excluded.changed_at,
                        changed_by = excluded.changed_by",
                values,
            ))
            .await?;
            true
        }
        None => {
            txn.execute_raw(Statement::from_sql_and_values(
                backend,
                "DELETE FROM problem_states WHERE source = $1 AND outcome = $2 AND error_class = $3",
                key(),
            ))
            .await?
            .rows_affected()
                > 0
        }
    };
    if changed {
        let action = match state {
            Some(ProblemState::Acknowledged) => AuditAction::AcknowledgeProblem,
            Some(ProblemState::Resolved) => AuditAction::ResolveProblem,
            Some(ProblemState::Ignored) => AuditAction::IgnoreProblem,
            None => AuditAction::ReopenProblem,
        };
        audit_on(
            &txn,
            AuditEntry {
                actor: operator,
                action,
                target: Some(&in_words),
                outcome: state.map_or("open", ProblemState::as_str),
                detail: None,
                address: None,
            },
        )
        .await?;
    }
    txn.commit().await?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_reads_the_open_failures_index_predicate() {
        // The partial index's predicate, as migration m20261203_000013 writes it.
        let predicate = "status = 'failed' AND replayed_by IS NULL AND resolved_by IS NULL";
        assert_eq!(unresolved("e").replace("e.", ""), predicate);
        assert!(
            super::super::open_failures::open_failure("webhook_events")
                .contains(&unresolved("webhook_events"))
        );
        for which in [Which::Open, Which::Ignored] {
            assert!(grouped(which, Some(3)).contains(&unresolved("e")));
        }
    }
}
