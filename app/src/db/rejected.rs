//! `rejected_requests`: what `/hooks/{source}` refused before ingest. Written in batches by the
//! server's refused-requests log (never in a delivery's transaction), bounded by age and by rows
//! per source, read by the `/rejected` page and the overview.

use super::Db;
use super::conditions::{Conditions, QueryError, given};
use crate::model::{RefusalReason, RejectedCount, RejectedFilter, RejectedPage, RejectedRow};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult, Value};

/// The bucket of every request to a source that is not configured: the names are the sender's
/// to choose, so they share one bound.
pub const UNKNOWN_BUCKET: &str = "(unknown)";

/// Rows a page shows.
pub const PAGE_SIZE: usize = 100;

/// One refused request to record.
#[derive(Debug, Clone)]
pub struct NewRejected {
    pub received_at: DateTime<Utc>,
    /// The configured source it counts against, or [`UNKNOWN_BUCKET`].
    pub bucket: String,
    /// The source as requested (already cut to a bounded length).
    pub source: String,
    /// Why it was refused.
    pub reason: RefusalReason,
    pub cause: String,
    pub client_address: String,
    pub request_id: Option<String>,
    /// A JSON object of header name to value, credentials and signatures redacted.
    pub headers: String,
    pub body_bytes: Option<i64>,
    pub body_sha256: Option<String>,
}

/// Columns of one row; the insert binds them in this order.
const COLUMNS: usize = 10;

/// Inserts `rows` in one statement (the caller keeps batches under the backends' parameter
/// limits: [`MAX_BATCH`] rows).
pub async fn insert_batch<C: ConnectionTrait>(conn: &C, rows: &[NewRejected]) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut values: Vec<Value> = Vec::with_capacity(rows.len() * COLUMNS);
    let mut tuples = Vec::with_capacity(rows.len());
    for row in rows {
        let first = values.len();
        values.extend([
            row.received_at.into(),
            row.bucket.clone().into(),
            row.source.clone().into(),
            row.reason.as_str().into(),
            row.cause.clone().into(),
            row.client_address.clone().into(),
            row.request_id.clone().into(),
            row.headers.clone().into(),
            row.body_bytes.into(),
            row.body_sha256.clone().into(),
        ]);
        let placeholders: Vec<String> = (first + 1..=first + COLUMNS)
            .map(|n| format!("${n}"))
            .collect();
        tuples.push(format!("({})", placeholders.join(", ")));
    }
    let sql = format!(
        "INSERT INTO rejected_requests (received_at, bucket, source, reason, cause, client_address,
             request_id, headers, body_bytes, body_sha256) VALUES {}",
        tuples.join(", ")
    );
    conn.execute_raw(crate::db::statement(
        conn.get_database_backend(),
        sql,
        values,
    ))
    .await?;
    Ok(())
}

/// The most rows one insert carries: 10 parameters a row stays far below SQLite's 32,766 and
/// PostgreSQL's 65,535.
pub const MAX_BATCH: usize = 500;

/// Deletes the oldest rows of `bucket` beyond its newest `keep`; returns how many went.
pub async fn trim_bucket<C: ConnectionTrait>(
    conn: &C,
    bucket: &str,
    keep: u32,
) -> Result<u64, DbErr> {
    let result = conn
        .execute_raw(crate::db::statement(
            conn.get_database_backend(),
            "DELETE FROM rejected_requests WHERE bucket = $1 AND id <= (
                 SELECT id FROM rejected_requests WHERE bucket = $1
                 ORDER BY id DESC LIMIT 1 OFFSET $2)",
            vec![bucket.into(), i64::from(keep).into()],
        ))
        .await?;
    Ok(result.rows_affected())
}

/// Deletes the rows received before `older_than`, `batch` per statement; returns how many.
pub async fn purge_older_than<C: ConnectionTrait>(
    conn: &C,
    older_than: DateTime<Utc>,
    batch: usize,
) -> Result<u64, DbErr> {
    super::batches::delete_in_batches(
        conn,
        "DELETE FROM rejected_requests WHERE id IN (
             SELECT id FROM rejected_requests WHERE received_at < $1
             ORDER BY received_at LIMIT $2)",
        older_than,
        batch,
    )
    .await
}

#[derive(FromQueryResult)]
struct RejectedRecord {
    id: i64,
    received_at: DateTime<Utc>,
    bucket: String,
    source: String,
    /// A reason hookbox does not record is an error, never a default.
    reason: RefusalReason,
    cause: String,
    client_address: String,
    request_id: Option<String>,
    headers: String,
    body_bytes: Option<i64>,
    body_sha256: Option<String>,
}

/// The filter's conditions; a reason hookbox never records or a bad cursor is a 400.
fn conditions(filter: &RejectedFilter) -> Result<Conditions, QueryError> {
    let mut c = Conditions::new();
    if let Some(source) = given(&filter.source) {
        c.and_with(source, |p| format!("bucket = {p}"));
    }
    if let Some(reason) = given(&filter.reason) {
        let Some(reason) = RefusalReason::parse(&reason) else {
            return Err(QueryError::BadFilter(format!(
                "reason: {reason:?} is not one of {}",
                RefusalReason::spellings()
            )));
        };
        c.and_with(reason.as_str(), |p| format!("reason = {p}"));
    }
    if let Some(before) = given(&filter.before) {
        let id: i64 = before.parse().map_err(|_| {
            QueryError::BadFilter(format!("before: {before:?} is not a row number"))
        })?;
        c.and_with(id, |p| format!("id < {p}"));
    }
    Ok(c)
}

/// The newest rows matching `filter`, `limit` a page (the page shows [`PAGE_SIZE`]), older
/// pages by `before`.
pub async fn list(
    db: &Db,
    filter: &RejectedFilter,
    limit: usize,
) -> Result<RejectedPage, QueryError> {
    let c = conditions(filter)?;
    let sql = format!(
        "SELECT id, received_at, bucket, source, reason, cause, client_address, request_id,
                headers, body_bytes, body_sha256
         FROM rejected_requests {} ORDER BY id DESC LIMIT {}",
        c.clause(),
        limit + 1
    );
    let found = db
        .dashboard
        .query_all_raw(crate::db::statement(db.backend(), sql, c.values))
        .await?;
    let mut rows = found
        .iter()
        .map(|r| {
            let r = RejectedRecord::from_query_result(r, "")?;
            Ok(RejectedRow {
                id: r.id,
                received_at: r.received_at.to_rfc3339(),
                bucket: r.bucket,
                source: r.source,
                reason: r.reason,
                cause: r.cause,
                client_address: r.client_address,
                request_id: r.request_id,
                headers: crate::headers::stored_headers(&r.headers),
                body_bytes: r.body_bytes,
                body_sha256: r.body_sha256,
            })
        })
        .collect::<Result<Vec<_>, DbErr>>()?;
    let next_before = (rows.len() > limit).then(|| {
        rows.truncate(limit);
        rows.last().map(|r| r.id)
    });
    Ok(RejectedPage {
        rows,
        next_before: next_before.flatten(),
    })
}

/// Refusals since `since` by source (bucket) and reason, the most first.
pub async fn counts_since(db: &Db, since: DateTime<Utc>) -> Result<Vec<RejectedCount>, DbErr> {
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            "SELECT bucket, reason, count(*) AS n FROM rejected_requests
             WHERE received_at >= $1 GROUP BY bucket, reason ORDER BY n DESC, bucket, reason",
            vec![since.into()],
        ))
        .await?;
    rows.iter()
        .map(|r| {
            Ok(RejectedCount {
                source: r.try_get("", "bucket")?,
                reason: r.try_get::<RefusalReason>("", "reason")?,
                n: r.try_get("", "n")?,
            })
        })
        .collect()
}
