//! `forward_deliveries`, `forward_attempts` and `forward_destinations` as the dashboard reads and
//! changes them: each destination's backlog, success rate and last error; its deliveries with
//! their attempts; pausing, resuming and retrying dead deliveries, each change audited in its
//! own transaction.

use super::Db;
use super::audit::{AuditEntry, audit_on};
use super::conditions::{Conditions, QueryError, given};
use crate::model::{
    AuditAction, DestinationSummary, ForwardAttemptRow, ForwardFilter, ForwardRow, ForwardStatus,
};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbErr, FromQueryResult, Statement, TransactionTrait, Value,
};
use std::collections::HashMap;

/// Rows a page of `/destinations/{name}` shows.
pub const PAGE_SIZE: usize = 50;

fn statement(db: &DatabaseConnection, sql: &str, values: Vec<Value>) -> Statement {
    Statement::from_sql_and_values(db.get_database_backend(), sql, values)
}

#[derive(FromQueryResult)]
struct Backlog {
    destination: String,
    status: ForwardStatus,
    n: i64,
    oldest: Option<DateTime<Utc>>,
}

#[derive(FromQueryResult)]
struct Rate {
    destination: String,
    attempts: i64,
    delivered: i64,
}

#[derive(FromQueryResult)]
struct State {
    destination: String,
    paused_at: Option<DateTime<Utc>>,
    paused_by: Option<String>,
    last_error: Option<String>,
    last_status_code: Option<i32>,
    last_error_at: Option<DateTime<Utc>>,
}

/// Every configured destination (`(name, url shown)`, in the configuration's order), then any
/// other destination that still has rows, each with its backlog, dead count, last hour's
/// attempts and last error.
pub async fn summaries(
    db: &Db,
    configured: &[(String, String)],
) -> Result<Vec<DestinationSummary>, DbErr> {
    let conn = &db.conn;
    let now = Utc::now();
    let backlog = conn
        .query_all_raw(statement(
            conn,
            &format!(
                "SELECT destination, status, count(*) AS n, min(created_at) AS oldest
                 FROM forward_deliveries WHERE status IN ('{}', '{}')
                 GROUP BY destination, status",
                ForwardStatus::Pending.as_str(),
                ForwardStatus::Dead.as_str()
            ),
            vec![],
        ))
        .await?;
    let rates = conn
        .query_all_raw(statement(
            conn,
            "SELECT d.destination AS destination, count(*) AS attempts,
                    sum(CASE WHEN a.status_code >= 200 AND a.status_code < 300 THEN 1 ELSE 0 END) AS delivered
             FROM forward_attempts a JOIN forward_deliveries d ON d.id = a.delivery_id
             WHERE a.started_at >= $1 GROUP BY d.destination",
            vec![(now - Duration::hours(1)).into()],
        ))
        .await?;
    let states = conn
        .query_all_raw(statement(
            conn,
            "SELECT destination, paused_at, paused_by, last_error, last_status_code, last_error_at
             FROM forward_destinations",
            vec![],
        ))
        .await?;
    let mut out: Vec<DestinationSummary> = configured
        .iter()
        .map(|(name, url)| empty_summary(name, Some(url.clone())))
        .collect();
    fn entry<'a>(out: &'a mut Vec<DestinationSummary>, name: &str) -> &'a mut DestinationSummary {
        match out.iter().position(|s| s.name == name) {
            Some(i) => &mut out[i],
            None => {
                out.push(empty_summary(name, None));
                out.last_mut().expect("just pushed")
            }
        }
    }
    for row in &backlog {
        let b = Backlog::from_query_result(row, "")?;
        let s = entry(&mut out, &b.destination);
        if b.status == ForwardStatus::Pending {
            s.pending = b.n;
            s.oldest_pending_at = b.oldest.map(|t| t.to_rfc3339());
            s.oldest_pending_secs = b.oldest.map(|t| (now - t).num_seconds().max(0));
        } else {
            s.dead = b.n;
        }
    }
    for row in &rates {
        let r = Rate::from_query_result(row, "")?;
        let s = entry(&mut out, &r.destination);
        s.attempts_last_hour = r.attempts;
        s.delivered_last_hour = r.delivered;
    }
    for row in &states {
        let st = State::from_query_result(row, "")?;
        // A state row alone (paused or failed once, since removed and drained) is not listed.
        let Some(s) = out.iter_mut().find(|s| s.name == st.destination) else {
            continue;
        };
        s.paused_at = st.paused_at.map(|t| t.to_rfc3339());
        s.paused_by = st.paused_by;
        s.last_error = st.last_error;
        s.last_status_code = st.last_status_code;
        s.last_error_at = st.last_error_at.map(|t| t.to_rfc3339());
    }
    Ok(out)
}

fn empty_summary(name: &str, url: Option<String>) -> DestinationSummary {
    DestinationSummary {
        name: name.to_string(),
        url,
        paused_at: None,
        paused_by: None,
        pending: 0,
        oldest_pending_at: None,
        oldest_pending_secs: None,
        dead: 0,
        attempts_last_hour: 0,
        delivered_last_hour: 0,
        last_error: None,
        last_status_code: None,
        last_error_at: None,
    }
}

#[derive(FromQueryResult)]
struct Delivery {
    id: i64,
    destination: String,
    source: String,
    event_id: String,
    object_id: Option<String>,
    revision: Option<i64>,
    archive_id: Option<i64>,
    status: ForwardStatus,
    attempts: i32,
    next_attempt_at: DateTime<Utc>,
    last_status_code: Option<i32>,
    last_error: Option<String>,
    delivered_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

#[derive(FromQueryResult)]
struct Attempt {
    delivery_id: i64,
    attempt: i32,
    started_at: DateTime<Utc>,
    duration_ms: i64,
    status_code: Option<i32>,
    error: Option<String>,
    response_excerpt: Option<String>,
}

const DELIVERY_COLUMNS: &str =
    "id, destination, source, event_id, object_id, revision, archive_id, status, attempts,
    next_attempt_at, last_status_code, last_error, delivered_at, created_at";

/// The most attempts shown per delivery (the newest ones).
const ATTEMPTS_SHOWN: usize = 30;

/// The filter's conditions on one destination's rows (its `status` a status or nothing, `source`
/// and `q` as given), or a 400 naming what is wrong.
fn conditions(destination: &str, filter: &ForwardFilter) -> Result<Conditions, QueryError> {
    let mut c = Conditions::new();
    c.push("destination = ?", destination.to_string());
    if let Some(status) = given(&filter.status) {
        if ForwardStatus::parse(&status).is_none() {
            return Err(QueryError::BadFilter(format!(
                "status: {status:?} is not one of {}",
                ForwardStatus::spellings()
            )));
        }
        c.push("status = ?", status);
    }
    for (field, value) in [("source", &filter.source), ("q", &filter.q)] {
        if value.as_ref().is_some_and(|v| v.len() > 512) {
            return Err(QueryError::BadFilter(format!(
                "{field}: longer than 512 bytes"
            )));
        }
    }
    if let Some(source) = given(&filter.source) {
        c.push("source = ?", source);
    }
    if let Some(q) = given(&filter.q) {
        c.push_pair("(event_id = ? OR object_id = ?)", q.clone(), q);
    }
    Ok(c)
}

/// One page of a destination's deliveries matching the filter, newest first, each with its
/// attempts; and the cursor of the next page.
pub async fn deliveries(
    db: &Db,
    destination: &str,
    filter: &ForwardFilter,
    cursor: Option<&str>,
) -> Result<(Vec<ForwardRow>, Option<String>), QueryError> {
    let mut c = conditions(destination, filter)?;
    if let Some(cursor) = cursor.filter(|c| !c.is_empty()) {
        let before: i64 = cursor
            .parse()
            .map_err(|_| QueryError::BadFilter(format!("cursor: {cursor:?} is not a cursor")))?;
        c.push("id < ?", before);
    }
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM forward_deliveries {} ORDER BY id DESC LIMIT {}",
        c.clause(),
        PAGE_SIZE + 1
    );
    let rows = db
        .conn
        .query_all_raw(statement(&db.conn, &sql, c.values))
        .await?;
    let mut rows = rows
        .iter()
        .map(|r| Delivery::from_query_result(r, ""))
        .collect::<Result<Vec<_>, _>>()?;
    let next = (rows.len() > PAGE_SIZE).then(|| {
        rows.truncate(PAGE_SIZE);
        rows.last().map(|r| r.id.to_string())
    });
    let rows = with_attempts(&db.conn, rows).await?;
    Ok((rows, next.flatten()))
}

/// The forward deliveries an archive row produced.
pub async fn produced_by(db: &Db, archive_id: i64) -> Result<Vec<ForwardRow>, DbErr> {
    let rows = db
        .conn
        .query_all_raw(statement(
            &db.conn,
            &format!(
                "SELECT {DELIVERY_COLUMNS} FROM forward_deliveries WHERE archive_id = $1 ORDER BY id"
            ),
            vec![archive_id.into()],
        ))
        .await?;
    let rows = rows
        .iter()
        .map(|r| Delivery::from_query_result(r, ""))
        .collect::<Result<Vec<_>, _>>()?;
    with_attempts(&db.conn, rows).await
}

async fn with_attempts(
    conn: &DatabaseConnection,
    rows: Vec<Delivery>,
) -> Result<Vec<ForwardRow>, DbErr> {
    let mut log: HashMap<i64, Vec<ForwardAttemptRow>> = HashMap::new();
    if !rows.is_empty() {
        let placeholders: Vec<String> = (1..=rows.len()).map(|i| format!("${i}")).collect();
        let attempts = conn
            .query_all_raw(statement(
                conn,
                &format!(
                    "SELECT delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt
                     FROM forward_attempts WHERE delivery_id IN ({}) ORDER BY delivery_id, attempt DESC",
                    placeholders.join(", ")
                ),
                rows.iter().map(|r| Value::from(r.id)).collect(),
            ))
            .await?;
        for row in &attempts {
            let a = Attempt::from_query_result(row, "")?;
            let shown = log.entry(a.delivery_id).or_default();
            if shown.len() < ATTEMPTS_SHOWN {
                shown.push(ForwardAttemptRow {
                    attempt: a.attempt,
                    started_at: a.started_at.to_rfc3339(),
                    duration_ms: a.duration_ms,
                    status_code: a.status_code,
                    error: a.error,
                    response_excerpt: a.response_excerpt,
                });
            }
        }
    }
    Ok(rows
        .into_iter()
        .map(|d| {
            let mut attempt_log = log.remove(&d.id).unwrap_or_default();
            attempt_log.reverse();
            ForwardRow {
                id: d.id,
                destination: d.destination,
                source: d.source,
                event_id: d.event_id,
                object_id: d.object_id,
                revision: d.revision,
                archive_id: d.archive_id,
                status: d.status,
                attempts: d.attempts,
                next_attempt_at: d.next_attempt_at.to_rfc3339(),
                last_status_code: d.last_status_code,
                last_error: d.last_error,
                delivered_at: d.delivered_at.map(|t| t.to_rfc3339()),
                created_at: d.created_at.to_rfc3339(),
                attempt_log,
            }
        })
        .collect())
}

/// Who did it, from where: the audit row's actor and address.
pub struct Actor<'a> {
    pub name: &'a str,
    pub address: &'a str,
}

/// Pauses (`true`) or resumes a destination: a paused one keeps its queue and is not attempted.
/// Audited. Returns whether anything changed.
pub async fn set_paused(
    db: &Db,
    destination: &str,
    paused: bool,
    actor: &Actor<'_>,
) -> Result<bool, DbErr> {
    let txn = db.writer.begin().await?;
    let backend = txn.get_database_backend();
    let changed = if paused {
        txn.execute_raw(Statement::from_sql_and_values(
            backend,
            "INSERT INTO forward_destinations (destination, paused_at, paused_by) VALUES ($1, $2, $3)
             ON CONFLICT (destination) DO UPDATE SET paused_at = excluded.paused_at, paused_by = excluded.paused_by
             WHERE forward_destinations.paused_at IS NULL",
            vec![destination.into(), Utc::now().into(), actor.name.into()],
        ))
        .await?
        .rows_affected()
    } else {
        txn.execute_raw(Statement::from_sql_and_values(
            backend,
            "UPDATE forward_destinations SET paused_at = NULL, paused_by = NULL
             WHERE destination = $1 AND paused_at IS NOT NULL",
            vec![destination.into()],
        ))
        .await?
        .rows_affected()
    } > 0;
    let action = if paused {
        AuditAction::PauseDestination
    } else {
        AuditAction::ResumeDestination
    };
    audit_on(
        &txn,
        AuditEntry {
            actor: actor.name,
            action,
            target: Some(destination),
            outcome: if changed { "done" } else { "unchanged" },
            detail: None,
            address: Some(actor.address),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(changed)
}

/// Why a retry did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RetryError {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Query(#[from] QueryError),
}

impl From<DbErr> for RetryError {
    fn from(e: DbErr) -> Self {
        RetryError::Query(QueryError::Db(e))
    }
}

/// Makes one dead delivery of `destination` due now, with the retry schedule started again.
/// Audited. Refused when there is no such delivery or it is not dead.
pub async fn retry_one(
    db: &Db,
    destination: &str,
    id: i64,
    actor: &Actor<'_>,
) -> Result<(), RetryError> {
    let txn = db.writer.begin().await?;
    let backend = txn.get_database_backend();
    let status = txn
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            "SELECT status FROM forward_deliveries WHERE id = $1 AND destination = $2",
            vec![id.into(), destination.into()],
        ))
        .await?
        .map(|r| r.try_get::<ForwardStatus>("", "status"))
        .transpose()?;
    match status {
        None => {
            return Err(RetryError::Refused(format!(
                "{destination} has no forward delivery {id}"
            )));
        }
        Some(ForwardStatus::Dead) => {}
        Some(other) => {
            return Err(RetryError::Refused(format!(
                "forward delivery {id} is {other}, not dead: only dead deliveries are retried"
            )));
        }
    }
    revive(
        &txn,
        "id = $1 AND destination = $2",
        vec![id.into(), destination.into()],
    )
    .await?;
    audit_on(
        &txn,
        AuditEntry {
            actor: actor.name,
            action: AuditAction::RetryForward,
            target: Some(&format!("{destination}/{id}")),
            outcome: "done",
            detail: None,
            address: Some(actor.address),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// Dead rows matching `condition` (on `values`, `$1` …) become pending and due now, their
/// schedule started again.
async fn revive<C: ConnectionTrait>(
    txn: &C,
    condition: &str,
    mut values: Vec<Value>,
) -> Result<u64, DbErr> {
    values.push(Utc::now().into());
    let now = values.len();
    Ok(txn
        .execute_raw(Statement::from_sql_and_values(
            txn.get_database_backend(),
            format!(
                "UPDATE forward_deliveries SET status = '{pending}', next_attempt_at = ${now},
                        schedule_base = attempts, lease_until = NULL, leased_by = NULL
                 WHERE status = '{dead}' AND {condition}",
                pending = ForwardStatus::Pending.as_str(),
                dead = ForwardStatus::Dead.as_str()
            ),
            values,
        ))
        .await?
        .rows_affected())
}

/// The deliveries a bulk retry takes, in words.
pub fn retry_scope(destination: &str, filter: &ForwardFilter) -> String {
    let mut parts = vec![destination.to_string()];
    for (label, value) in [
        ("source", &filter.source),
        ("event or object id", &filter.q),
    ] {
        if let Some(v) = given(value) {
            parts.push(format!("{label} {v}"));
        }
    }
    parts.push("status dead".to_string());
    parts.join(", ")
}

/// Counts the dead deliveries of the filter (its status is ignored: a retry takes the dead);
/// with `confirmation` equal to `retry N` for that count, makes them all due now. Audited when
/// done. Returns the count and whether they were retried.
pub async fn retry_dead(
    db: &Db,
    destination: &str,
    filter: &ForwardFilter,
    confirmation: Option<&str>,
    actor: &Actor<'_>,
) -> Result<(i64, bool), RetryError> {
    let filter = ForwardFilter {
        status: Some(ForwardStatus::Dead.as_str().to_string()),
        ..filter.clone()
    };
    let c = conditions(destination, &filter)?;
    let txn = db.writer.begin().await?;
    let backend = txn.get_database_backend();
    let matched = txn
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            format!(
                "SELECT count(*) AS n FROM forward_deliveries {}",
                c.clause()
            ),
            c.values.clone(),
        ))
        .await?
        .map(|r| r.try_get::<i64>("", "n"))
        .transpose()?
        .unwrap_or(0);
    let expected = format!("retry {matched}");
    match confirmation.map(str::trim) {
        None | Some("") => return Ok((matched, false)),
        Some(typed) if typed == expected => {}
        Some(_) => {
            return Err(RetryError::Refused(format!(
                "type \"{expected}\" to confirm (the count may have changed)"
            )));
        }
    }
    if matched == 0 {
        return Ok((0, false));
    }
    let retried = revive(&txn, &c.sql.join(" AND "), c.values).await?;
    let scope = retry_scope(destination, &filter);
    audit_on(
        &txn,
        AuditEntry {
            actor: actor.name,
            action: AuditAction::BulkRetryForward,
            target: Some(destination),
            outcome: "done",
            detail: Some(&format!("{retried} dead deliveries of {scope}")),
            address: Some(actor.address),
        },
    )
    .await?;
    txn.commit().await?;
    Ok((i64::try_from(retried).unwrap_or(i64::MAX), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_outside_the_vocabulary_is_refused_naming_it() {
        let filter = ForwardFilter {
            status: Some("gone".into()),
            ..Default::default()
        };
        let Err(QueryError::BadFilter(reason)) = conditions("app", &filter) else {
            panic!("accepted");
        };
        assert!(reason.contains("status") && reason.contains("pending, delivered"));
    }
}
