//! The failures a state covers: a cause's failures no replay or retry resolved, but those
//! before it was last resolved. What resolving or ignoring counts ([`covered`]), and what makes
//! a cause open ([`covers_any`], with `marks`); one SQL for both.

use super::Failures;
use crate::model::{Cause, ProblemState};
use sea_orm::{ConnectionTrait, DbErr, Value};

/// The cause as [`key`] binds it.
pub(super) const BOUND: (&str, &str, &str) = ("$1", "$2", "$3");

/// The cause's key in `problem_states`: source (or destination), stage, class.
pub(super) fn key(cause: &Cause, class: &str) -> Vec<Value> {
    vec![
        cause.source.clone().into(),
        cause.outcome.as_str().into(),
        class.into(),
    ]
}

/// The failures resolving or ignoring a cause covers, bound as [`key`]: its failures no replay
/// or retry resolved, but those before it was last resolved (an ignored cause's all, new ones
/// too). `FROM … WHERE …` of the table aliased `e`.
fn covered_rows(f: &Failures) -> String {
    format!(
        "FROM {table} WHERE {of_cause}
           AND NOT EXISTS (SELECT 1 FROM problem_states ps
               WHERE ps.source = $1 AND ps.outcome = $2 AND ps.error_class = $3
                 AND ps.state = '{resolved}' AND {at} <= ps.changed_at)",
        table = f.table,
        of_cause = f.of_cause(BOUND),
        at = f.at,
        resolved = ProblemState::Resolved.as_str(),
    )
}

/// How many failures resolving or ignoring `cause` covers ([`covered_rows`]).
pub async fn covered<C: ConnectionTrait>(conn: &C, cause: &Cause) -> Result<i64, DbErr> {
    let Some(class) = cause.class.as_deref() else {
        return Ok(0);
    };
    let f = Failures::of(cause.outcome);
    let row = conn
        .query_one_raw(crate::db::statement(
            conn.get_database_backend(),
            format!("SELECT count(*) AS n {}", covered_rows(&f)),
            key(cause, class),
        ))
        .await?;
    row.map_or(Ok(0), |r| r.try_get("", "n"))
}

/// Whether resolving or ignoring `cause` would cover any failure: [`covered`] above 0, read
/// without counting them all.
pub async fn covers_any<C: ConnectionTrait>(conn: &C, cause: &Cause) -> Result<bool, DbErr> {
    let Some(class) = cause.class.as_deref() else {
        return Ok(false);
    };
    let f = Failures::of(cause.outcome);
    Ok(conn
        .query_one_raw(crate::db::statement(
            conn.get_database_backend(),
            format!("SELECT 1 AS found {} LIMIT 1", covered_rows(&f)),
            key(cause, class),
        ))
        .await?
        .is_some())
}
