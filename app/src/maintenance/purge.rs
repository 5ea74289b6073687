//! Archive retention: archive rows (`webhook_events`) older than `retention_days` are deleted,
//! and so are forward deliveries that are done (delivered or superseded) with their attempts;
//! the overview's rollup keeps its last 8 days (`db::overview::purge_rollup`).
//! The inbox and the projection are never purged (guarantee 6 of `docs/webhooks.md`), nor are
//! pending or dead forward deliveries: they wait for an attempt or an operator.
//!
//! Deletion goes in small batches, each its own transaction (which also records the feed's
//! horizon: `feed::record_purged`), so no lock is held for
//! long and ingest (which only inserts new archive rows) never waits on a purge.

use crate::db::Db;
use crate::db::dialect::Dialect;
use crate::feed::Cursor;
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait};

/// Rows per delete statement.
pub const DEFAULT_BATCH: usize = 1000;

/// When the server runs the purge: shortly after start, then daily.
pub const FIRST_RUN_AFTER: std::time::Duration = std::time::Duration::from_secs(60);
pub const INTERVAL: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Archive rows per source: what a purge deleted, or what it would.
pub type BySource = std::collections::BTreeMap<String, u64>;

/// `shop 3, crm 1` (by name), or `none`.
pub fn per_source(by_source: &BySource) -> String {
    if by_source.is_empty() {
        return "none".into();
    }
    by_source
        .iter()
        .map(|(source, n)| format!("{source} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Archive rows received before this time are purged.
pub fn retention_cutoff(now: DateTime<Utc>, retention_days: u32) -> DateTime<Utc> {
    now - Duration::days(i64::from(retention_days))
}

/// Deletes every archive row received before `older_than`, `batch` rows per statement, and
/// returns how many were deleted. Rows that replayed a purged row keep their place; their
/// `replay_of` becomes null (`ON DELETE SET NULL`).
pub async fn purge_archive(db: &Db, older_than: DateTime<Utc>, batch: usize) -> Result<u64, DbErr> {
    Ok(purge_archive_by_source(db, older_than, batch)
        .await?
        .values()
        .sum())
}

/// [`purge_archive`], answering how many rows of each source went.
pub async fn purge_archive_by_source(
    db: &Db,
    older_than: DateTime<Utc>,
    batch: usize,
) -> Result<BySource, DbErr> {
    let batch = batch.max(1);
    let mut total = BySource::new();
    loop {
        let transaction = db.maintenance().begin().await?;
        let deleted = delete_batch(&transaction, older_than, batch).await?;
        transaction.commit().await?;
        let count: u64 = deleted.values().sum();
        for (source, n) in deleted {
            *total.entry(source).or_default() += n;
        }
        if count < batch as u64 {
            return Ok(total);
        }
    }
}

/// Deletes at most `batch` of the oldest archive rows received before `older_than`, and records
/// the greatest feed place it deleted (`feed::record_purged`) in the same transaction: `conn` is
/// a transaction, so a cursor before what is gone is answered 410, never skipped silently.
///
/// On PostgreSQL, rows another purge (another hookbox process) has locked are skipped rather
/// than waited for, so concurrent purges take disjoint batches.
pub async fn purge_batch<C: ConnectionTrait>(
    conn: &C,
    older_than: DateTime<Utc>,
    batch: usize,
) -> Result<u64, DbErr> {
    Ok(delete_batch(conn, older_than, batch).await?.values().sum())
}

/// [`purge_batch`], answering how many rows of each source went.
async fn delete_batch<C: ConnectionTrait>(
    conn: &C,
    older_than: DateTime<Utc>,
    batch: usize,
) -> Result<BySource, DbErr> {
    let backend = conn.get_database_backend();
    let sql = format!(
        "DELETE FROM webhook_events WHERE id IN (
             SELECT id FROM webhook_events WHERE received_at < $1
             ORDER BY received_at LIMIT $2{})
         RETURNING feed_tx, id, source",
        Dialect::of(backend).lock_skipping_locked()
    );
    let limit = i64::try_from(batch).unwrap_or(i64::MAX);
    let deleted = conn
        .query_all_raw(crate::db::statement(
            backend,
            sql,
            vec![older_than.into(), limit.into()],
        ))
        .await?;
    let mut through: Option<Cursor> = None;
    let mut by_source = BySource::new();
    for row in &deleted {
        let place = Cursor {
            tx: row.try_get("", "feed_tx")?,
            id: row.try_get("", "id")?,
        };
        through = through.max(Some(place));
        *by_source.entry(row.try_get("", "source")?).or_default() += 1;
    }
    if let Some(through) = through {
        crate::feed::record_purged(conn, through).await?;
    }
    Ok(by_source)
}

/// What a purge at `older_than` would delete, counted without deleting: the archive rows per
/// source, the forward deliveries that are done, the audit rows (at `audit_older_than`).
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    pub archive: BySource,
    pub forwarded: u64,
    pub audit: u64,
}

/// Counts what a purge would delete ([`Due`]).
pub async fn due(
    db: &Db,
    older_than: DateTime<Utc>,
    audit_older_than: DateTime<Utc>,
) -> Result<Due, DbErr> {
    let conn = db.maintenance();
    let backend = conn.get_database_backend();
    let rows = conn
        .query_all_raw(crate::db::statement(
            backend,
            "SELECT source, count(*) AS n FROM webhook_events WHERE received_at < $1
             GROUP BY source ORDER BY source",
            vec![older_than.into()],
        ))
        .await?;
    let mut archive = BySource::new();
    for row in &rows {
        let n: i64 = row.try_get("", "n")?;
        archive.insert(row.try_get("", "source")?, n.max(0).unsigned_abs());
    }
    let count = |sql: &'static str, at: DateTime<Utc>| async move {
        let row = conn
            .query_one_raw(crate::db::statement(backend, sql, vec![at.into()]))
            .await?;
        let n: i64 = match row {
            Some(row) => row.try_get("", "n")?,
            None => 0,
        };
        Ok::<u64, DbErr>(n.max(0).unsigned_abs())
    };
    Ok(Due {
        archive,
        forwarded: count(
            "SELECT count(*) AS n FROM forward_deliveries
             WHERE created_at < $1 AND status IN ('delivered', 'superseded')",
            older_than,
        )
        .await?,
        audit: count(
            "SELECT count(*) AS n FROM audit_log WHERE at < $1",
            audit_older_than,
        )
        .await?,
    })
}

/// Deletes the audit rows (sign-ins, replays, exports, …) older than `older_than`, `batch` per
/// statement; returns how many. (Failed sign-ins are counts in `sign_in_failures`, bounded by
/// `auth`, not audit rows.)
pub async fn purge_audit(db: &Db, older_than: DateTime<Utc>, batch: usize) -> Result<u64, DbErr> {
    crate::db::batches::delete_in_batches(
        db.maintenance(),
        "DELETE FROM audit_log WHERE id IN (
             SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)",
        older_than,
        batch,
    )
    .await
}

/// Deletes the forward deliveries created before `older_than` that are delivered or superseded
/// (their attempts go with them), `batch` per statement; returns how many.
pub async fn purge_forwarded(
    db: &Db,
    older_than: DateTime<Utc>,
    batch: usize,
) -> Result<u64, DbErr> {
    crate::db::batches::delete_in_batches(
        db.maintenance(),
        "DELETE FROM forward_deliveries WHERE id IN (
             SELECT id FROM forward_deliveries
             WHERE created_at < $1 AND status IN ('delivered', 'superseded')
             ORDER BY id LIMIT $2)",
        older_than,
        batch,
    )
    .await
}

/// The server's retention task: a purge of the archive and of the audit log shortly after
/// start, then one every 24 hours. Runs until `stop` resolves; a failed purge is logged and
/// tried again at the next run. A run under way at `stop` is dropped: each of its batches is a
/// transaction of its own, done whole or not at all, and the next run goes on from there.
pub async fn run_daily(
    db: Db,
    retention_days: u32,
    audit_retention_days: u32,
    stop: impl Future<Output = ()>,
) {
    let runs = async {
        tokio::time::sleep(FIRST_RUN_AFTER).await;
        let mut every_day = tokio::time::interval(INTERVAL);
        loop {
            every_day.tick().await;
            run_once(&db, retention_days, audit_retention_days).await;
        }
    };
    tokio::select! {
        () = stop => {}
        () = runs => {}
    }
}

/// The time of the server's last retention run whose archive purge succeeded, in Unix seconds
/// (0 until then); the shipped alert on a purge not having run reads it.
pub const LAST_PURGE: &str = "hookbox_last_purge_timestamp_seconds";

/// One run of the retention task: the archive, the forward deliveries that are done, the audit
/// log. Failures are logged and counted (`hookbox_purge_runs_total{outcome}`), never returned.
pub async fn run_once(db: &Db, retention_days: u32, audit_retention_days: u32) {
    let cutoff = retention_cutoff(Utc::now(), retention_days);
    let started = std::time::Instant::now();
    let result = purge_archive_by_source(db, cutoff, DEFAULT_BATCH).await;
    let outcome = if result.is_ok() { "ok" } else { "failed" };
    metrics::counter!("hookbox_purge_runs_total", "outcome" => outcome).increment(1);
    match result {
        Ok(by_source) => {
            let rows = by_source.values().sum();
            metrics::counter!("hookbox_purge_deleted_rows_total").increment(rows);
            metrics::gauge!(LAST_PURGE).set(Utc::now().timestamp_micros() as f64 / 1e6);
            tracing::info!(
                rows,
                per_source = %per_source(&by_source),
                retention_days,
                cutoff = %cutoff.to_rfc3339(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "archive retention: purged old archive rows"
            )
        }
        Err(error) => tracing::warn!(
            %error,
            retention_days,
            "archive retention: purge failed; retrying at the next run"
        ),
    }
    match purge_forwarded(db, cutoff, DEFAULT_BATCH).await {
        Ok(rows) => tracing::info!(
            rows,
            retention_days,
            "forwarding retention: purged forward deliveries that were done"
        ),
        Err(error) => tracing::warn!(
            %error,
            "forwarding retention: purge failed; retrying at the next run"
        ),
    }
    // The overview's rollup keeps only the quarters its chart can show, whatever the retention.
    let rollup_cutoff = Utc::now() - crate::db::overview::ROLLUP_KEPT;
    match crate::db::overview::purge_rollup(db, rollup_cutoff).await {
        Ok(rows) => tracing::info!(
            rows,
            cutoff = %rollup_cutoff.to_rfc3339(),
            "overview rollup: purged quarters older than the chart shows"
        ),
        Err(error) => tracing::warn!(
            %error,
            "overview rollup: purge failed; retrying at the next run"
        ),
    }
    let audit_cutoff = retention_cutoff(Utc::now(), audit_retention_days);
    match purge_audit(db, audit_cutoff, DEFAULT_BATCH).await {
        Ok(rows) => tracing::info!(
            rows,
            audit_retention_days,
            cutoff = %audit_cutoff.to_rfc3339(),
            "audit retention: purged old audit rows"
        ),
        Err(error) => tracing::warn!(
            %error,
            audit_retention_days,
            "audit retention: purge failed; retrying at the next run"
        ),
    }
}
