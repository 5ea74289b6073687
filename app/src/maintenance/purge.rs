//! Archive retention: archive rows (`webhook_events`) older than `retention_days` are deleted,
//! and so are forward deliveries that are done (delivered or superseded) with their attempts;
//! the overview's rollup keeps its last 8 days (`db::overview::purge_rollup`).
//! The inbox and the projection are never purged (guarantee 6 of `docs/webhooks.md`), nor are
//! pending or dead forward deliveries: they wait for an attempt or an operator.
//!
//! Deletion goes in small batches, each its own transaction (which also records the feed's
//! horizon: `feed::record_purged`), so no lock is held for
//! long and ingest (which only inserts new archive rows) never waits on a purge.

use crate::config::Config;
use crate::db::Db;
use crate::db::conditions::Conditions;
use crate::db::dialect::Dialect;
use crate::feed::Cursor;
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait};
use std::collections::BTreeMap;

/// Rows per delete statement.
pub const DEFAULT_BATCH: usize = 1000;

/// When the server runs the purge: shortly after start, then daily.
pub const FIRST_RUN_AFTER: std::time::Duration = std::time::Duration::from_secs(60);
pub const INTERVAL: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Archive rows per source: what a purge deleted, or what it would.
pub type BySource = BTreeMap<String, u64>;

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

/// Archive rows received before this time are purged (the earliest time there is, for a
/// retention longer than the calendar).
pub fn retention_cutoff(now: DateTime<Utc>, retention_days: u32) -> DateTime<Utc> {
    now.checked_sub_signed(Duration::days(i64::from(retention_days)))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// How long each source's archive rows (and its done forward deliveries) are kept: its own
/// `retention_days`, else `[server] retention_days`, which also keeps the rows of sources no
/// longer configured.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub default_days: u32,
    /// The sources with a retention of their own.
    pub own: BTreeMap<String, u32>,
}

impl Policy {
    pub fn of(config: &Config) -> Policy {
        Policy {
            default_days: config.server.retention_days,
            own: config
                .sources
                .iter()
                .filter_map(|s| Some((s.name.clone(), s.retention_days?)))
                .collect(),
        }
    }

    /// Every source kept `days`.
    pub fn uniform(days: u32) -> Policy {
        Policy {
            default_days: days,
            own: BTreeMap::new(),
        }
    }

    /// The cutoffs of this policy at `at`.
    pub fn at(&self, at: DateTime<Utc>) -> Cutoffs {
        Cutoffs {
            own: self
                .own
                .iter()
                .map(|(source, days)| (source.clone(), retention_cutoff(at, *days)))
                .collect(),
            rest: retention_cutoff(at, self.default_days),
        }
    }
}

/// Where retention ends, per source: rows received before their source's cutoff are past it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cutoffs {
    /// The sources with a retention of their own.
    pub own: BTreeMap<String, DateTime<Utc>>,
    /// Every other source's.
    pub rest: DateTime<Utc>,
}

/// One cutoff for every source.
impl From<DateTime<Utc>> for Cutoffs {
    fn from(cutoff: DateTime<Utc>) -> Cutoffs {
        Cutoffs {
            own: BTreeMap::new(),
            rest: cutoff,
        }
    }
}

impl Cutoffs {
    /// The condition true of the rows past their source's retention, on the columns `source`
    /// and `at`, its values taken by `c`.
    pub(crate) fn past(&self, c: &mut Conditions, source: &str, at: &str) -> String {
        let mut parts = Vec::new();
        for (name, cutoff) in &self.own {
            let (p, q) = (c.param(name.clone()), c.param(*cutoff));
            parts.push(format!("({source} = {p} AND {at} < {q})"));
        }
        let rest = c.param(self.rest);
        parts.push(if self.own.is_empty() {
            format!("{at} < {rest}")
        } else {
            let named = c.params(self.own.keys().cloned());
            format!("({source} NOT IN ({named}) AND {at} < {rest})")
        });
        format!("({})", parts.join(" OR "))
    }
}

/// Deletes every archive row past its source's retention (`cutoffs`: one instant for every
/// source, or a [`Policy`]'s), `batch` rows per statement, and returns how many were deleted.
/// Rows that replayed a purged row keep their place; their `replay_of` becomes null (`ON DELETE
/// SET NULL`).
pub async fn purge_archive(
    db: &Db,
    cutoffs: impl Into<Cutoffs>,
    batch: usize,
) -> Result<u64, DbErr> {
    Ok(purge_archive_by_source(db, &cutoffs.into(), batch)
        .await?
        .values()
        .sum())
}

/// [`purge_archive`], answering how many rows of each source went.
pub async fn purge_archive_by_source(
    db: &Db,
    cutoffs: &Cutoffs,
    batch: usize,
) -> Result<BySource, DbErr> {
    let batch = batch.max(1);
    let mut total = BySource::new();
    loop {
        let transaction = db.maintenance().begin().await?;
        let deleted = delete_batch(&transaction, cutoffs, batch).await?;
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

/// Deletes at most `batch` of the oldest archive rows past their source's retention, and
/// records the greatest feed place it deleted of each source (`feed::record_purged`) in the same
/// transaction: `conn` is a transaction, so a cursor before what is gone is answered 410, never
/// skipped silently.
///
/// On PostgreSQL, rows another purge (another hookbox process) has locked are skipped rather
/// than waited for, so concurrent purges take disjoint batches.
pub async fn purge_batch<C: ConnectionTrait>(
    conn: &C,
    cutoffs: impl Into<Cutoffs>,
    batch: usize,
) -> Result<u64, DbErr> {
    Ok(delete_batch(conn, &cutoffs.into(), batch)
        .await?
        .values()
        .sum())
}

/// [`purge_batch`], answering how many rows of each source went. A row that stays and refers to
/// a deleted row's identical body (`body_of`, an archived duplicate) is given that body first,
/// in the same transaction, so each row keeps its body as long as its own retention says.
async fn delete_batch<C: ConnectionTrait>(
    conn: &C,
    cutoffs: &Cutoffs,
    batch: usize,
) -> Result<BySource, DbErr> {
    let backend = conn.get_database_backend();
    let mut c = Conditions::new();
    let past = cutoffs.past(&mut c, "source", "received_at");
    c.and(past);
    let limit = c.param(i64::try_from(batch).unwrap_or(i64::MAX));
    let chosen = conn
        .query_all_raw(crate::db::statement(
            backend,
            format!(
                "SELECT id FROM webhook_events {} ORDER BY received_at LIMIT {limit}{}",
                c.clause(),
                Dialect::of(backend).lock_skipping_locked()
            ),
            c.values,
        ))
        .await?;
    let ids = chosen
        .iter()
        .map(|row| row.try_get::<i64>("", "id"))
        .collect::<Result<Vec<_>, _>>()?;
    if ids.is_empty() {
        return Ok(BySource::new());
    }
    let mut c = Conditions::new();
    let (originals, going) = (c.params(ids.clone()), c.params(ids.clone()));
    conn.execute_raw(crate::db::statement(
        backend,
        format!(
            "UPDATE webhook_events SET
                 body = (SELECT o.body FROM webhook_events o WHERE o.id = webhook_events.body_of),
                 body_fields = (SELECT o.body_fields FROM webhook_events o
                                 WHERE o.id = webhook_events.body_of),
                 body_of = NULL
             WHERE body_of IN ({originals}) AND id NOT IN ({going})"
        ),
        c.values,
    ))
    .await?;
    let mut c = Conditions::new();
    let going = c.params(ids);
    let deleted = conn
        .query_all_raw(crate::db::statement(
            backend,
            format!(
                "DELETE FROM webhook_events WHERE id IN ({going}) RETURNING feed_tx, id, source"
            ),
            c.values,
        ))
        .await?;
    let mut through: BTreeMap<String, Cursor> = BTreeMap::new();
    let mut by_source = BySource::new();
    for row in &deleted {
        let place = Cursor {
            tx: row.try_get("", "feed_tx")?,
            id: row.try_get("", "id")?,
        };
        let source: String = row.try_get("", "source")?;
        let last = through.entry(source.clone()).or_insert(place);
        *last = (*last).max(place);
        *by_source.entry(source).or_default() += 1;
    }
    for (source, place) in through {
        crate::feed::record_purged(conn, &source, place).await?;
    }
    Ok(by_source)
}

/// What a purge would delete, counted without deleting: the archive rows per source and the
/// forward deliveries that are done, past `cutoffs`; the audit rows before `audit_older_than`.
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    pub archive: BySource,
    pub forwarded: u64,
    pub audit: u64,
}

/// Counts what a purge would delete ([`Due`]).
pub async fn due(
    db: &Db,
    cutoffs: &Cutoffs,
    audit_older_than: DateTime<Utc>,
) -> Result<Due, DbErr> {
    let conn = db.maintenance();
    let backend = conn.get_database_backend();
    let mut c = Conditions::new();
    let past = cutoffs.past(&mut c, "source", "received_at");
    let rows = conn
        .query_all_raw(crate::db::statement(
            backend,
            format!(
                "SELECT source, count(*) AS n FROM webhook_events WHERE {past}
                 GROUP BY source ORDER BY source"
            ),
            c.values,
        ))
        .await?;
    let mut archive = BySource::new();
    for row in &rows {
        let n: i64 = row.try_get("", "n")?;
        archive.insert(row.try_get("", "source")?, n.max(0).unsigned_abs());
    }
    let mut c = Conditions::new();
    let past = cutoffs.past(&mut c, "source", "created_at");
    let forwarded = count(
        db,
        format!(
            "SELECT count(*) AS n FROM forward_deliveries
             WHERE {past} AND status IN ('delivered', 'superseded')"
        ),
        c.values,
    )
    .await?;
    let audit = count(
        db,
        "SELECT count(*) AS n FROM audit_log WHERE at < $1".into(),
        vec![audit_older_than.into()],
    )
    .await?;
    Ok(Due {
        archive,
        forwarded,
        audit,
    })
}

/// The `n` a counting statement answers.
async fn count(db: &Db, sql: String, values: Vec<sea_orm::Value>) -> Result<u64, DbErr> {
    let row = db
        .maintenance()
        .query_one_raw(crate::db::statement(db.backend(), sql, values))
        .await?;
    let n: i64 = match row {
        Some(row) => row.try_get("", "n")?,
        None => 0,
    };
    Ok(n.max(0).unsigned_abs())
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

/// Deletes the forward deliveries past their source's retention (`cutoffs`, by when they were
/// created) that are delivered or superseded (their attempts go with them), `batch` per
/// statement; returns how many.
pub async fn purge_forwarded(
    db: &Db,
    cutoffs: impl Into<Cutoffs>,
    batch: usize,
) -> Result<u64, DbErr> {
    let cutoffs = cutoffs.into();
    let batch = batch.max(1);
    let mut total = 0;
    loop {
        let mut c = Conditions::new();
        let past = cutoffs.past(&mut c, "source", "created_at");
        let limit = c.param(i64::try_from(batch).unwrap_or(i64::MAX));
        let deleted = db
            .maintenance()
            .execute_raw(crate::db::statement(
                db.backend(),
                format!(
                    "DELETE FROM forward_deliveries WHERE id IN (
                         SELECT id FROM forward_deliveries
                         WHERE {past} AND status IN ('delivered', 'superseded')
                         ORDER BY id LIMIT {limit})"
                ),
                c.values,
            ))
            .await?
            .rows_affected();
        total += deleted;
        if deleted < batch as u64 {
            return Ok(total);
        }
    }
}

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

/// One run of the retention task: the archive, the forward deliveries that are done, the audit
/// log. Failures are logged and counted (`hookbox_purge_runs_total{outcome}`), never returned.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_keeps_each_source_its_own_days_and_the_rest_the_servers() {
        let config = Config::parse(
            "[server]\nretention_days = 30\n\
             [[sources]]\nname = \"payments\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\nretention_days = 400\n\
             [[sources]]\nname = \"chat\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\n",
            std::path::Path::new("hookbox.toml"),
            &|_| Some("s3cret".into()),
        )
        .expect("valid");
        let policy = Policy::of(&config);
        assert_eq!(policy.default_days, 30);
        assert_eq!(
            policy.own.clone().into_iter().collect::<Vec<_>>(),
            [("payments".to_string(), 400)]
        );
        let now = Utc::now();
        let cutoffs = policy.at(now);
        assert_eq!(cutoffs.rest, now - Duration::days(30));
        assert_eq!(cutoffs.own["payments"], now - Duration::days(400));
        // A retention past the calendar keeps everything rather than overflowing.
        assert_eq!(retention_cutoff(now, u32::MAX), DateTime::<Utc>::MIN_UTC);
    }
}
