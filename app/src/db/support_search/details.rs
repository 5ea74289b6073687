//! What the search shows of each object and event it found, each a point lookup per key in one
//! statement: the projection's revision, the inbox's count, the newest archived delivery.

use crate::db::Db;
use crate::db::events::{EVENT_COLUMNS, event_row};
use crate::model::{EventRow, FoundObject};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, QueryResult, Value};

/// One statement of a point lookup per key, `UNION ALL`, each row tagged with its key's index.
fn per_key(
    keys: &[(&str, &str)],
    part: impl Fn(usize, &str, &str) -> String,
) -> (String, Vec<Value>) {
    let mut values: Vec<Value> = Vec::new();
    let mut parts = Vec::new();
    for (i, (a, b)) in keys.iter().enumerate() {
        values.push((*a).into());
        values.push((*b).into());
        let n = values.len();
        parts.push(part(i, &format!("${}", n - 1), &format!("${n}")));
    }
    (parts.join(" UNION ALL "), values)
}

async fn query(db: &Db, sql: String, values: Vec<Value>) -> Result<Vec<QueryResult>, DbErr> {
    if sql.is_empty() {
        return Ok(Vec::new());
    }
    db.dashboard
        .query_all_raw(crate::db::statement(db.backend(), sql, values))
        .await
}

/// Each object's current revision and when it was updated.
pub(super) async fn object_states(
    db: &Db,
    keys: &[(&str, &str)],
) -> Result<Vec<Option<(i64, String)>>, DbErr> {
    let (sql, values) = per_key(keys, |i, source, object_id| {
        format!(
            "SELECT CAST({i} AS BIGINT) AS k, revision, updated_at FROM object_state WHERE source = {source} AND object_id = {object_id}"
        )
    });
    let mut out = vec![None; keys.len()];
    for row in query(db, sql, values).await? {
        let k: i64 = row.try_get("", "k")?;
        let updated_at: DateTime<Utc> = row.try_get("", "updated_at")?;
        if let Some(slot) = out.get_mut(k as usize) {
            *slot = Some((row.try_get("", "revision")?, updated_at.to_rfc3339()));
        }
    }
    Ok(out)
}

/// How many events of each object the inbox accepted, counted up to one past
/// [`FoundObject::ACCEPTED_COUNTED`].
pub(crate) async fn accepted_counts(db: &Db, keys: &[(&str, &str)]) -> Result<Vec<i64>, DbErr> {
    let (sql, values) = per_key(keys, |i, source, object_id| {
        format!(
            "SELECT CAST({i} AS BIGINT) AS k, count(*) AS n FROM (SELECT 1 AS one FROM webhook_inbox WHERE source = {source} AND object_id = {object_id} LIMIT {}) AS c{i}",
            FoundObject::ACCEPTED_COUNTED + 1
        )
    });
    let mut out = vec![0; keys.len()];
    for row in query(db, sql, values).await? {
        let k: i64 = row.try_get("", "k")?;
        if let Some(slot) = out.get_mut(k as usize) {
            *slot = row.try_get("", "n")?;
        }
    }
    Ok(out)
}

/// The newest archived delivery of each (source, `column`) key.
pub(super) async fn newest_deliveries(
    db: &Db,
    keys: &[(&str, &str)],
    column: &str,
    order: &str,
) -> Result<Vec<Option<EventRow>>, DbErr> {
    let (sql, values) = per_key(keys, |i, source, id| {
        format!(
            "SELECT * FROM (SELECT CAST({i} AS BIGINT) AS k, {EVENT_COLUMNS} FROM webhook_events WHERE {column} = {id} AND source = {source} ORDER BY {order} LIMIT 1) AS n{i}"
        )
    });
    let mut out = vec![None; keys.len()];
    for row in query(db, sql, values).await? {
        let k: i64 = row.try_get("", "k")?;
        if let Some(slot) = out.get_mut(k as usize) {
            *slot = Some(event_row(&row)?);
        }
    }
    Ok(out)
}
