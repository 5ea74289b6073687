//! The server's retention task: every process runs it shortly after start and then daily; each
//! step's failure is logged and counted, and the next run goes on from where it stopped.

use super::cold::ColdArchive;
use super::cold::write::{Written, before_purge};
use super::expiry;
use super::policy::Cutoffs;
use super::purge::{
    DEFAULT_BATCH, Policy, per_source, purge_archive_by_day, purge_audit, purge_forwarded,
    retention_cutoff,
};
use crate::db::Db;
use chrono::{DateTime, Utc};

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
    cold: Option<ColdArchive>,
    audit_retention_days: u32,
    stop: impl Future<Output = ()>,
) {
    let runs = async {
        tokio::time::sleep(FIRST_RUN_AFTER).await;
        let mut every_day = tokio::time::interval(INTERVAL);
        loop {
            every_day.tick().await;
            run_once(&db, &policy, cold.as_ref(), audit_retention_days).await;
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

/// One run of the retention task: with a cold archive, the rows about to go written there
/// first; the archive, the bodies past their body retention (`expiry`), the forward deliveries
/// that are done, the audit log. Failures are logged and counted
/// (`hookbox_purge_runs_total{outcome}`, `hookbox_cold_archive_runs_total{outcome}`), never
/// returned; a cold archive that cannot be written leaves every archive row and body in place.
pub async fn run_once(
    db: &Db,
    policy: &Policy,
    cold: Option<&ColdArchive>,
    audit_retention_days: u32,
) {
    let at = Utc::now();
    let cutoffs = policy.at(at);
    match cold {
        None => purge_and_expire(db, policy, &cutoffs, None).await,
        Some(cold) => {
            if let Some((within, written)) = archive_first(db, cold, policy, at).await {
                purge_and_expire(db, policy, &within, Some(&written)).await;
            }
        }
    }
    the_rest(db, &cutoffs, policy.default_days, audit_retention_days).await;
}

/// Writes what the purge and body expiry are about to reach to the cold archive: the cutoffs
/// clamped to what is written, or none when it could not be written (logged and counted).
async fn archive_first(
    db: &Db,
    cold: &ColdArchive,
    policy: &Policy,
    at: DateTime<Utc>,
) -> Option<(Cutoffs, Written)> {
    let started = std::time::Instant::now();
    match before_purge(db, cold, policy, at).await {
        Ok((within, written)) => {
            metrics::counter!("hookbox_cold_archive_runs_total", "outcome" => "ok").increment(1);
            metrics::counter!("hookbox_cold_archive_rows_total")
                .increment(written.rows.values().sum());
            metrics::gauge!(COLD_ARCHIVE_FAILING).set(0.0);
            tracing::info!(
                rows = written.rows.values().sum::<u64>(),
                objects = written.objects,
                per_source = %per_source(&written.rows),
                archive = %cold.url,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "cold archive: wrote the rows the purge reaches"
            );
            Some((within, written))
        }
        Err(error) => {
            metrics::counter!("hookbox_cold_archive_runs_total", "outcome" => "failed")
                .increment(1);
            metrics::gauge!(COLD_ARCHIVE_FAILING).set(1.0);
            tracing::warn!(
                %error,
                "cold archive: writing failed; nothing purged or expired, retrying at the next run"
            );
            None
        }
    }
}

/// 1 while the last cold archive run failed (its rows stay in the database); the shipped alert
/// reads it.
pub const COLD_ARCHIVE_FAILING: &str = "hookbox_cold_archive_failing";

/// The archive's purge and body expiry, within `cutoffs` (and, with a cold archive, what it
/// holds).
async fn purge_and_expire(db: &Db, policy: &Policy, cutoffs: &Cutoffs, written: Option<&Written>) {
    let retention_days = policy.default_days;
    let cutoff = cutoffs.rest;
    let started = std::time::Instant::now();
    let result = purge_archive_by_day(db, cutoffs, DEFAULT_BATCH).await;
    let outcome = if result.is_ok() { "ok" } else { "failed" };
    metrics::counter!("hookbox_purge_runs_total", "outcome" => outcome).increment(1);
    match result {
        Ok(purged) => {
            let rows = purged.rows.values().sum();
            metrics::counter!("hookbox_purge_deleted_rows_total").increment(rows);
            metrics::counter!("hookbox_purge_dropped_days_total")
                .increment(purged.days.len() as u64);
            metrics::gauge!(LAST_PURGE).set(Utc::now().timestamp_micros() as f64 / 1e6);
            tracing::info!(
                rows,
                per_source = %per_source(&purged.rows),
                days_dropped = %days(&purged.days),
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
    expiry::run_once(db, &policy.bodies, written.map(|w| &w.horizons)).await;
}

/// The days `days`, as the log says them: `2026-09-01 2026-09-02`, or `none`.
pub fn days(days: &[chrono::NaiveDate]) -> String {
    if days.is_empty() {
        return "none".into();
    }
    days.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What goes whatever the cold archive: the forward deliveries that are done, the overview's
/// old quarters, the audit log; and on PostgreSQL, the archive's tables of the days ahead made.
async fn the_rest(db: &Db, cutoffs: &Cutoffs, retention_days: u32, audit_retention_days: u32) {
    match super::partitions::make_ahead(db, Utc::now()).await {
        Ok(made) => tracing::info!(made, "archive: made the tables of the days ahead"),
        Err(error) => tracing::warn!(
            %error,
            "archive: making the tables of the days ahead failed; their rows go to the default \
             table until the next run"
        ),
    }
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
    let notifications_cutoff =
        Utc::now() - chrono::Duration::days(super::purge::NOTIFICATIONS_KEPT_DAYS);
    match super::purge::purge_notifications(db, notifications_cutoff, DEFAULT_BATCH).await {
        Ok(rows) => tracing::info!(rows, "notifications: purged messages older than 30 days"),
        Err(error) => tracing::warn!(
            %error,
            "notifications: purge failed; retrying at the next run"
        ),
    }
    // A day past the longest retention: the failures of a cause closed before it are gone.
    let problems_cutoff = cutoffs
        .own
        .values()
        .fold(cutoffs.rest, |oldest, &at| oldest.min(at))
        - chrono::Duration::days(1);
    match super::purge::purge_problems(db, problems_cutoff, DEFAULT_BATCH).await {
        Ok(rows) => tracing::info!(
            rows,
            cutoff = %problems_cutoff.to_rfc3339(),
            "problems: purged the marks of causes closed before every source's retention"
        ),
        Err(error) => tracing::warn!(
            %error,
            "problems: purge failed; retrying at the next run"
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
