//! A destination's deliveries as `/destinations/{name}` lists them, each with its newest
//! attempts, filtered and paged; and the forward deliveries one archive row produced.

use super::super::Db;
use super::super::conditions::{Conditions, QueryError, given};
use crate::db::statement;
use crate::model::{ForwardAttemptRow, ForwardFilter, ForwardRow, ForwardStatus};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, FromQueryResult, Value};
use std::collections::HashMap;

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
    resend_of: Option<i64>,
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
    next_attempt_at, last_status_code, last_error, delivered_at, created_at, resend_of";

/// The most attempts shown per delivery (the newest ones).
const ATTEMPTS_SHOWN: usize = 30;

/// The filter's conditions on one destination's rows (its `status` a status or nothing, `source`
/// and `q` as given), or a 400 naming what is wrong.
pub(super) fn conditions(
    destination: &str,
    filter: &ForwardFilter,
) -> Result<Conditions, QueryError> {
    let mut c = Conditions::new();
    c.and_with(destination.to_string(), |p| format!("destination = {p}"));
    if let Some(status) = given(&filter.status) {
        if ForwardStatus::parse(&status).is_none() {
            return Err(QueryError::BadFilter(format!(
                "status: {status:?} is not one of {}",
                ForwardStatus::spellings()
            )));
        }
        c.and_with(status, |p| format!("status = {p}"));
    }
    for (field, value) in [("source", &filter.source), ("q", &filter.q)] {
        if value.as_ref().is_some_and(|v| v.len() > 512) {
            return Err(QueryError::BadFilter(format!(
                "{field}: longer than 512 bytes"
            )));
        }
    }
    if let Some(source) = given(&filter.source) {
        c.and_with(source, |p| format!("source = {p}"));
    }
    if let Some(q) = given(&filter.q) {
        c.and_with2(q.clone(), q, |p, q| {
            format!("(event_id = {p} OR object_id = {q})")
        });
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
    limit: usize,
) -> Result<(Vec<ForwardRow>, Option<String>), QueryError> {
    let mut c = conditions(destination, filter)?;
    if let Some(cursor) = cursor.filter(|c| !c.is_empty()) {
        let before: i64 = cursor
            .parse()
            .map_err(|_| QueryError::BadFilter(format!("cursor: {cursor:?} is not a cursor")))?;
        c.and_with(before, |p| format!("id < {p}"));
    }
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM forward_deliveries {} ORDER BY id DESC LIMIT {}",
        c.clause(),
        limit + 1
    );
    let rows = db
        .dashboard
        .query_all_raw(statement(&db.dashboard, &sql, c.values))
        .await?;
    let mut rows = rows
        .iter()
        .map(|r| Delivery::from_query_result(r, ""))
        .collect::<Result<Vec<_>, _>>()?;
    let next = (rows.len() > limit).then(|| {
        rows.truncate(limit);
        rows.last().map(|r| r.id.to_string())
    });
    let rows = with_attempts(&db.dashboard, rows).await?;
    Ok((rows, next.flatten()))
}

/// The most forward deliveries [`produced_by`] answers (the first ones).
pub const PRODUCED_LIMIT: usize = 200;

/// The forward deliveries the archive rows `archive_ids` produced (re-sends included), in the
/// order made, at most [`PRODUCED_LIMIT`]: one row's on the event page, an object's on its page.
pub async fn produced_by(db: &Db, archive_ids: &[i64]) -> Result<Vec<ForwardRow>, DbErr> {
    if archive_ids.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders: Vec<String> = (1..=archive_ids.len()).map(|i| format!("${i}")).collect();
    let rows = db
        .dashboard
        .query_all_raw(statement(
            &db.dashboard,
            format!(
                "SELECT {DELIVERY_COLUMNS} FROM forward_deliveries WHERE archive_id IN ({}) ORDER BY id LIMIT {PRODUCED_LIMIT}",
                placeholders.join(", ")
            ),
            archive_ids.iter().map(|id| Value::from(*id)).collect(),
        ))
        .await?;
    let rows = rows
        .iter()
        .map(|r| Delivery::from_query_result(r, ""))
        .collect::<Result<Vec<_>, _>>()?;
    with_attempts(&db.dashboard, rows).await
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
                format!(
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
                resend_of: d.resend_of,
            }
        })
        .collect())
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
