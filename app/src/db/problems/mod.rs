//! Problems: open failures grouped by cause, the states operators give causes
//! (`problem_states`, [`states`]), and the counts the overview and the alert metrics show.
//!
//! Failures are of two stages, one model: deliveries a source received that failed, grouped by
//! (source, outcome, error class), and forward deliveries a destination never took (dead),
//! grouped by (destination, answer class: `4xx`, `5xx`, `timeout`, `connection refused`, …).
//! Each stage says where its failures are ([`Failures`]); the grouping, the states, their
//! confirmation and audit, the counts are written once over it.
//!
//! What an open failure is, the one definition every view reads, is `db::open_failures` (the
//! archive's), a dead forward delivery (forwarding's: a retry that delivers it resolves it). An
//! **open problem** is a cause with an open failure. They are read through
//! `ix_webhook_events_open_failures` (migration m20261203_000013) and
//! `ix_forward_deliveries_dead` (m20261205_000022).

pub mod covered;
pub mod listed;
pub mod marks;
pub mod states;

pub use covered::{covered, covers_any};
pub use states::{MAX_SETTLED_PAGE, SETTLED_PAGE_SIZE, StateError, set_state, settled};

use super::Db;
use super::open_failures::unresolved;
use crate::model::{CONNECTION_FAILED, Cause, NO_ANSWER_WITHIN};
use crate::model::{ForwardStatus, OpenProblems, ProblemGroup, ProblemState, ProblemsPage, Stage};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr};

/// Where the failures of one stage are, and how a row (`e`) names its cause.
pub(crate) struct Failures {
    /// The table, aliased `e`.
    pub(crate) table: &'static str,
    /// The rows that are failures no retry or replay resolved, as far as the row tells.
    pub(crate) unresolved: String,
    pub(crate) source: &'static str,
    pub(crate) outcome: &'static str,
    pub(crate) class: String,
    /// When it failed.
    pub(crate) at: &'static str,
    /// The cause's columns, to group by.
    pub(crate) group_by: String,
    /// The column of a failure's message.
    pub(crate) message: &'static str,
}

impl Failures {
    /// The failed deliveries of the archive.
    pub(crate) fn ingest() -> Failures {
        Failures {
            table: "webhook_events e",
            unresolved: unresolved("e"),
            source: "e.source",
            outcome: "e.outcome",
            class: "e.error_class".into(),
            at: "e.received_at",
            group_by: "e.source, e.outcome, e.error_class".into(),
            message: "error_message",
        }
    }

    /// The dead forward deliveries: dead when its last attempt failed (`next_attempt_at` is
    /// then the time it died); a retry makes it pending, and its delivery resolves it.
    pub(crate) fn forward() -> Failures {
        let class = answer_class("e");
        Failures {
            table: "forward_deliveries e",
            unresolved: format!("e.status = '{}'", ForwardStatus::Dead.as_str()),
            source: "e.destination",
            outcome: "CAST('forward' AS TEXT)",
            group_by: format!("e.destination, {class}"),
            class,
            at: "e.next_attempt_at",
            message: "last_error",
        }
    }

    /// Where the failures of `stage` are.
    pub(crate) fn of(stage: Stage) -> Failures {
        match stage {
            Stage::Ingest(_) => Failures::ingest(),
            Stage::Forward => Failures::forward(),
        }
    }

    /// The unresolved failures of the cause `(source, stage, class)`, each an SQL expression
    /// (bound parameters, or a group's columns).
    pub(crate) fn of_cause(&self, (source, stage, class): (&str, &str, &str)) -> String {
        format!(
            "{} AND {} = {source} AND {} = {stage} AND {} = {class}",
            self.unresolved, self.source, self.outcome, self.class
        )
    }

    /// The table without its alias.
    fn table_name(&self) -> &'static str {
        self.table.split(' ').next().unwrap_or(self.table)
    }
}

/// The answer class of the forward delivery `row`: by its last attempt's status, else by why
/// no status came (`crate::model::ANSWER_CLASSES`).
pub(crate) fn answer_class(row: &str) -> String {
    format!(
        "CASE WHEN {row}.last_status_code >= 400 AND {row}.last_status_code < 500 THEN '4xx'
              WHEN {row}.last_status_code >= 500 AND {row}.last_status_code < 600 THEN '5xx'
              WHEN {row}.last_status_code IS NOT NULL THEN 'other status'
              WHEN {row}.last_error LIKE '{NO_ANSWER_WITHIN}%' THEN 'timeout'
              WHEN {row}.last_error LIKE '{CONNECTION_FAILED}%' THEN 'connection refused'
              ELSE 'request failed' END"
    )
}

/// Problems a list shows at most (the page says how many more there are).
pub const SHOWN_AT_MOST: usize = 200;

/// The failures of every cause of `f` with its state, grouped: `which` picks the open causes or
/// the ignored ones. Columns: source, outcome, error_class, n, first_seen, last_seen, example,
/// state, changed_at, changed_by, reason, groups (how many groups in all), failures (in all).
///
/// The unresolved failures are grouped first, on the partial index alone; the states join the
/// groups, not the rows; only a resolved cause has its failures after `changed_at` counted
/// again (a range of the same index), so the common case costs one pass over the index.
fn grouped(f: &Failures, which: Which, limit: Option<usize>) -> String {
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
            "CASE WHEN {resolved} THEN (SELECT {figure} FROM {table}
                 WHERE {of_group} AND {at} > ps.changed_at)
             ELSE g.{column} END AS {column}",
            table = f.table,
            of_group = f.of_cause(("g.source", "g.outcome", "g.error_class")),
            at = f.at,
        )
    };
    let limit = limit.map(|n| format!("LIMIT {n}")).unwrap_or_default();
    format!(
        "WITH g AS (
            SELECT {source} AS source, {outcome} AS outcome, {class} AS error_class, count(*) AS n,
                min({at}) AS first_seen, max({at}) AS last_seen,
                max(e.id) AS example
            FROM {table} WHERE {unresolved}
            GROUP BY {group_by}
         )
         SELECT c.*, count(*) OVER () AS groups, CAST(sum(c.n) OVER () AS BIGINT) AS failures
         FROM (
            SELECT g.source, g.outcome, g.error_class, {n}, {first_seen}, {last_seen}, {example},
                ps.state, ps.changed_at, ps.changed_by, ps.reason
            FROM g LEFT JOIN problem_states ps
              ON ps.source = g.source AND ps.outcome = g.outcome AND ps.error_class = g.error_class
         ) AS c
         WHERE {condition}
         ORDER BY c.last_seen DESC, c.source, c.outcome, c.error_class
         {limit}",
        source = f.source,
        outcome = f.outcome,
        class = f.class,
        at = f.at,
        table = f.table,
        unresolved = f.unresolved,
        group_by = f.group_by,
        n = since("count(*)", "n"),
        first_seen = since(&format!("min({})", f.at), "first_seen"),
        last_seen = since(&format!("max({})", f.at), "last_seen"),
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
    f: &Failures,
    which: Which,
    limit: usize,
) -> Result<(Vec<ProblemGroup>, i64, i64), DbErr> {
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            grouped(f, which, Some(limit)),
            vec![],
        ))
        .await?;
    let (mut groups, mut total, mut failures) = (Vec::with_capacity(rows.len()), 0, 0);
    for row in &rows {
        total = row.try_get("", "groups")?;
        failures = row.try_get("", "failures")?;
        let first_seen: DateTime<Utc> = row.try_get("", "first_seen")?;
        let last_seen: DateTime<Utc> = row.try_get("", "last_seen")?;
        let changed_at: Option<DateTime<Utc>> = row.try_get("", "changed_at")?;
        groups.push(ProblemGroup {
            cause: cause_of(row)?,
            count: row.try_get("", "n")?,
            first_seen: first_seen.to_rfc3339(),
            last_seen: last_seen.to_rfc3339(),
            example: row.try_get("", "example")?,
            example_message: None,
            state: row.try_get("", "state")?,
            changed_at: changed_at.map(|at| at.to_rfc3339()),
            changed_by: row.try_get("", "changed_by")?,
            reason: row.try_get("", "reason")?,
        });
    }
    Ok((groups, total, failures))
}

/// The cause a row names in its columns `source`, `outcome` and `error_class`.
pub(crate) fn cause_of(row: &sea_orm::QueryResult) -> Result<Cause, DbErr> {
    let outcome: String = row.try_get("", "outcome")?;
    Ok(Cause {
        source: row.try_get("", "source")?,
        outcome: Stage::parse(&outcome)
            .ok_or_else(|| DbErr::Type(format!("no stage {outcome}")))?,
        class: row.try_get("", "error_class")?,
    })
}

/// The groups of both stages, the most recently failing first, at most `limit`; the groups
/// and failures in all.
async fn both(db: &Db, which: Which, limit: usize) -> Result<(Vec<ProblemGroup>, i64, i64), DbErr> {
    let (mut list, mut total, mut failures) = groups(db, &Failures::ingest(), which, limit).await?;
    let (forward, forward_total, forward_failures) =
        groups(db, &Failures::forward(), which, limit).await?;
    list.extend(forward);
    list.sort_by(|a, b| b.last_seen.cmp(&a.last_seen));
    list.truncate(limit);
    total += forward_total;
    failures += forward_failures;
    Ok((list, total, failures))
}

/// Each group's example message: its failure's error (an archive row's, a forward delivery's).
async fn example_messages(db: &Db, groups: &mut [&mut ProblemGroup]) -> Result<(), DbErr> {
    let dialect = super::dialect::Dialect::of(db.backend());
    for forward in [false, true] {
        let f = if forward {
            Failures::forward()
        } else {
            Failures::ingest()
        };
        let of_stage = |g: &ProblemGroup| (g.cause.outcome == Stage::Forward) == forward;
        let examples: Vec<i64> = groups
            .iter()
            .filter(|g| of_stage(g))
            .map(|g| g.example)
            .collect();
        if examples.is_empty() {
            continue;
        }
        let rows = db
            .dashboard
            .query_all_raw(crate::db::statement(
                db.backend(),
                format!(
                    "SELECT id, {message} AS message FROM {table} WHERE id {among}",
                    message = f.message,
                    table = f.table_name(),
                    among = dialect.among_ids("$1")
                ),
                vec![dialect.id_list(&examples).into()],
            ))
            .await?;
        for row in &rows {
            let id: i64 = row.try_get("", "id")?;
            let message: Option<String> = row.try_get("", "message")?;
            for group in groups.iter_mut().filter(|g| of_stage(g)) {
                if group.example == id {
                    group.example_message = message.clone();
                }
            }
        }
    }
    Ok(())
}

/// The `/problems` page: open problems of both stages (at most [`SHOWN_AT_MOST`], the most
/// recently failing first), the ignored causes, the totals, each group's example message.
pub async fn problems_page(db: &Db) -> Result<ProblemsPage, DbErr> {
    let (mut open, open_total, open_failures) = both(db, Which::Open, SHOWN_AT_MOST).await?;
    let (mut ignored, ignored_total, _) = both(db, Which::Ignored, SHOWN_AT_MOST).await?;
    let mut all: Vec<&mut ProblemGroup> = open.iter_mut().chain(ignored.iter_mut()).collect();
    example_messages(db, &mut all).await?;
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
/// absent): the archive's alone (a destination's are its dead deliveries' gauge).
pub async fn open_by_source(db: &Db) -> Result<Vec<(String, OpenProblems)>, DbErr> {
    open_by(db, &Failures::ingest()).await
}

/// Open problems and open failures of `f` per source (or destination).
async fn open_by(db: &Db, f: &Failures) -> Result<Vec<(String, OpenProblems)>, DbErr> {
    let sql = format!(
        "SELECT source, count(*) AS problems, CAST(sum(n) AS BIGINT) AS failures
         FROM ({}) AS g GROUP BY source ORDER BY source",
        grouped(f, Which::Open, None)
    );
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(db.backend(), sql, vec![]))
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

/// The open causes of the archive's failures (at most `limit`, the most recently failing
/// first): what the notifier's sweep compares with the causes' marks.
pub async fn open_causes<C: ConnectionTrait>(conn: &C, limit: usize) -> Result<Vec<Cause>, DbErr> {
    let rows = conn
        .query_all_raw(crate::db::statement(
            conn.get_database_backend(),
            grouped(&Failures::ingest(), Which::Open, Some(limit)),
            vec![],
        ))
        .await?;
    rows.iter().map(cause_of).collect()
}

/// Open problems and open failures in all, of both stages (the overview).
pub async fn open_counts(db: &Db) -> Result<OpenProblems, DbErr> {
    let mut by = open_by(db, &Failures::ingest()).await?;
    by.extend(open_by(db, &Failures::forward()).await?);
    Ok(by
        .into_iter()
        .fold(OpenProblems::default(), |all, (_, n)| OpenProblems {
            problems: all.problems + n.problems,
            failures: all.failures + n.failures,
        }))
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
            assert!(grouped(&Failures::ingest(), which, Some(3)).contains(&unresolved("e")));
            assert!(grouped(&Failures::forward(), which, Some(3)).contains("e.status = 'dead'"));
        }
    }
}
