//! The server's retention task: every process runs it shortly after start and then daily; each
//! step's failure is logged and counted, and the next run goes on from where it stopped.

use super::expiry;
use super::purge::{
    DEFAULT_BATCH, Policy, per_source, purge_archive_by_source, purge_audit, purge_forwarded,
    retention_cutoff,
};
use crate::db::Db;
use chrono::Utc;

/// When the server runs the purge: shortly after start, then daily.
pub const FIRST_RUN_AFTER: std::time::Duration = std::time::Duration::from_secs(60);
pub const INTERVAL: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// The server's retention task: a purge of the archive and of the audit log shortly after
/// start, then one every 24 hours. Runs until `stop` resolves; a failed purge is logged and
/// tried again at the next run. A run under way at `stop` is dropped: each of its batches is a
/// transaction of its own, done whole or not at all, and the next run goes on from there.
pub async fn run_daily(
    db: Db,
    policy: Policy,
    audit_retention_days: u32,
    stop: impl Future<Output = ()>,
) {
    let runs = async {
        tokio::time::sleep(FIRST_RUN_AFTER).await;
        let mut every_day = tokio::time::interval(INTERVAL);
        loop {
            every_day.tick().await;
            run_once(&db, &policy, audit_retention_days).await;
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

/// One run of the retention task: the archive, the bodies past their body retention
/// (`expiry`), the forward deliveries that are done, the audit log. Failures are logged and counted (`hookbox_purge_runs_total{outcome}`), never returned.
pub async fn run_once(db: &Db, policy: &Policy, audit_retention_days: u32) {
    let retention_days = policy.default_days;
    let cutoffs = policy.at(Utc::now());
    let cutoff = cutoffs.rest;
    let started = std::time::Instant::now();
    let result = purge_archive_by_source(db, &cutoffs, DEFAULT_BATCH).await;
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
    expiry::run_once(db, &policy.bodies).await;
    match purge_forwarded(db, cutoffs.clone(), DEFAULT_BATCH).await {
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
