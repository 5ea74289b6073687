//! Archive retention: archive rows (`webhook_events`) older than `retention_days` are deleted,
//! and so are forward deliveries that are done (delivered or superseded) with their attempts;
//! the overview's rollup keeps its last 8 days (`db::overview::purge_rollup`).
//! The inbox and the projection are never purged (guarantee 6 of `docs/webhooks.md`), nor are
//! pending or dead forward deliveries: they wait for an attempt or an operator.
//!
//! Deletion goes in small batches, each its own transaction (which also records the feed's
//! horizon: `feed::record_purged`), so no lock is held for
//! long and ingest (which only inserts new archive rows) never waits on a purge.

pub use super::policy::{BySource, Cutoffs, Policy, per_source, retention_cutoff};

use crate::db::Db;
use crate::db::conditions::Conditions;
use crate::db::dialect::Dialect;
use crate::feed::Cursor;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait};
use std::collections::BTreeMap;

/// Rows per delete statement.
pub const DEFAULT_BATCH: usize = 1000;

/// Deletes every archive row past its source's retention (`cutoffs`: one instant for every
/// source, or a [`Policy`]'s), `batch` rows per statement, and returns how many were deleted.
/// Rows that replayed a purged row keep their place; their `replay_of` becomes null.
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
    Ok(purge_archive_by_day(db, cutoffs, batch).await?.rows)
}

/// What the archive's purge took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Purged {
    /// The rows of each source that went, dropped with their day or deleted.
    pub rows: BySource,
    /// The days dropped whole (PostgreSQL: `partitions`).
    pub days: Vec<chrono::NaiveDate>,
}

/// [`purge_archive_by_source`], answering the days it dropped whole as well: on PostgreSQL
/// first the days every row of which is past its source's retention, then what remains past it
/// one batch at a time (a source kept for less than the others, the rows from before the
/// archive was laid out by day, those a restore put back).
pub async fn purge_archive_by_day(
    db: &Db,
    cutoffs: &Cutoffs,
    batch: usize,
) -> Result<Purged, DbErr> {
    let dropped = super::partitions::drop_due(db, cutoffs).await?;
    let mut rows = purge_in_batches(db, cutoffs, batch).await?;
    for (source, n) in dropped.rows {
        *rows.entry(source).or_default() += n;
    }
    Ok(Purged {
        rows,
        days: dropped.days,
    })
}

/// Deletes the archive rows past their source's retention, `batch` a transaction.
async fn purge_in_batches(db: &Db, cutoffs: &Cutoffs, batch: usize) -> Result<BySource, DbErr> {
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
    let now = c.param(Utc::now());
    c.and(not_kept(&now));
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
    hand_over_bodies(conn, &ids).await?;
    // A replay that stays no longer names its original (the foreign key's `ON DELETE SET NULL`
    // on SQLite; PostgreSQL's archive has no foreign key, as its days are dropped whole).
    let mut c = Conditions::new();
    let (originals, going) = (c.params(ids.clone()), c.params(ids.clone()));
    conn.execute_raw(crate::db::statement(
        backend,
        format!(
            "UPDATE webhook_events SET replay_of = NULL
             WHERE replay_of IN ({originals}) AND id NOT IN ({going})"
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

/// True of the rows no restore keeps at `now` (a parameter): `hookbox archive restore` puts
/// rows back kept until a time, whatever their source's retention.
fn not_kept(now: &str) -> String {
    format!("(kept_until IS NULL OR kept_until < {now})")
}

/// Gives the rows that refer to the identical body of one of `ids` (`body_of`, archived
/// duplicates) and are not among them a copy of that body and its fields, before those rows are
/// deleted or their bodies dropped: each row keeps its body as long as its own retention says.
pub(super) async fn hand_over_bodies<C: ConnectionTrait>(
    conn: &C,
    ids: &[i64],
) -> Result<(), DbErr> {
    let mut c = Conditions::new();
    let (originals, going) = (c.params(ids.to_vec()), c.params(ids.to_vec()));
    conn.execute_raw(crate::db::statement(
        conn.get_database_backend(),
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
    Ok(())
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
    let now = c.param(Utc::now());
    let kept = not_kept(&now);
    let rows = conn
        .query_all_raw(crate::db::statement(
            backend,
            format!(
                "SELECT source, count(*) AS n FROM webhook_events WHERE {past} AND {kept}
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

/// How long notifications are kept, whatever became of them (a message for a channel no
/// longer configured waits this long, then goes).
pub const NOTIFICATIONS_KEPT_DAYS: i64 = 30;

/// Deletes the notifications recorded before `older_than`: the channels' copies, then the
/// changes no copy names any more, `batch` per statement; returns how many copies.
pub async fn purge_notifications(
    db: &Db,
    older_than: DateTime<Utc>,
    batch: usize,
) -> Result<u64, DbErr> {
    let copies = crate::db::batches::delete_in_batches(
        db.maintenance(),
        "DELETE FROM notification_sends WHERE id IN (
             SELECT id FROM notification_sends WHERE created_at < $1 ORDER BY created_at LIMIT $2)",
        older_than,
        batch,
    )
    .await?;
    crate::db::batches::delete_in_batches(
        db.maintenance(),
        "DELETE FROM notifications WHERE id IN (
             SELECT n.id FROM notifications n
             WHERE n.created_at < $1 AND n.fanned_out
               AND NOT EXISTS (SELECT 1 FROM notification_sends s WHERE s.notification_id = n.id)
             ORDER BY n.created_at LIMIT $2)",
        older_than,
        batch,
    )
    .await?;
    Ok(copies)
}

/// Deletes the marks (`problems` rows) of causes closed with no change since `older_than` and
/// given no state by an operator, `batch` per statement; returns how many. A cause closes when
/// its last open failure is resolved, so every failure of such a cause is older than its close:
/// past `older_than` (the longest retention), none is kept and nothing lists the cause. One that
/// fails again gets a new mark, and a new id. So the table holds the causes of the time kept,
/// whatever the number of causes over the years.
pub async fn purge_problems(
    db: &Db,
    older_than: DateTime<Utc>,
    batch: usize,
) -> Result<u64, DbErr> {
    crate::db::batches::delete_in_batches(
        db.maintenance(),
        "DELETE FROM problems WHERE id IN (
             SELECT p.id FROM problems p
             WHERE NOT p.open AND p.changed_at < $1
               AND NOT EXISTS (SELECT 1 FROM problem_states s
                               WHERE s.source = p.source AND s.outcome = p.outcome
                                 AND s.error_class = p.error_class)
             ORDER BY p.id LIMIT $2)",
        older_than,
        batch,
    )
    .await
}

/// Deletes the forward deliveries past their source's retention (`cutoffs`, by when they were
/// created) that are delivered or superseded (their attempts go with them), `batch` per
/// statement (on PostgreSQL, whole days first: `partitions`); returns how many.
pub async fn purge_forwarded(
    db: &Db,
    cutoffs: impl Into<Cutoffs>,
    batch: usize,
) -> Result<u64, DbErr> {
    let cutoffs = cutoffs.into();
    let batch = batch.max(1);
    let (_, mut total) = super::partitions::drop_forward_due(db, &cutoffs).await?;
    loop {
        let mut c = Conditions::new();
        let past = cutoffs.past(&mut c, "source", "created_at");
        let limit = c.param(i64::try_from(batch).unwrap_or(i64::MAX));
        let transaction = db.maintenance().begin().await?;
        let chosen = transaction
            .query_all_raw(crate::db::statement(
                db.backend(),
                format!(
                    "SELECT id FROM forward_deliveries
                     WHERE {past} AND status IN ('delivered', 'superseded')
                     ORDER BY id LIMIT {limit}"
                ),
                c.values,
            ))
            .await?;
        let ids = chosen
            .iter()
            .map(|row| row.try_get::<i64>("", "id"))
            .collect::<Result<Vec<_>, _>>()?;
        if ids.is_empty() {
            return Ok(total);
        }
        // The attempts first: no foreign key deletes them on PostgreSQL, where a day's
        // deliveries are dropped whole (`partitions`).
        let mut deleted = 0;
        for statement in [
            "DELETE FROM forward_attempts WHERE delivery_id IN",
            "DELETE FROM forward_deliveries WHERE id IN",
        ] {
            let mut c = Conditions::new();
            let going = c.params(ids.clone());
            deleted = transaction
                .execute_raw(crate::db::statement(
                    db.backend(),
                    format!("{statement} ({going})"),
                    c.values,
                ))
                .await?
                .rows_affected();
        }
        transaction.commit().await?;
        total += deleted;
        if ids.len() < batch {
            return Ok(total);
        }
    }
}
