//! PostgreSQL's archive laid out by day (decision 0020): an id carries the UTC day it was made on
//! (`day << 36 | n`), and `webhook_events`, `forward_deliveries` and `forward_attempts` are
//! partitioned by range of it, a table a day (`{table}_dYYYYMMDD`). The purge drops a day whole
//! once every row of it is past its source's retention (and, with a cold archive, written there):
//! the cost of the drop does not grow with what the day holds. Rows of a source kept for less
//! than the others go one batch at a time as before (`purge`), and so do the rows from before the
//! layout (`{table}_legacy`) and those of days without a table (`{table}_default`).
//!
//! What survives a day's drop is moved to the default table first, in the same transaction: the
//! rows a restore keeps (`kept_until`), the forward deliveries still pending or dead and their
//! attempts; an archived duplicate elsewhere that refers to a body of the day is given it, and a
//! replay of a row of the day loses its `replay_of`, as a row deleted one at a time does. A
//! forward delivery's `archive_id` keeps naming its archive row once that is gone (clearing it
//! would touch every delivery of the day).
//!
//! SQLite has one table each and keeps the batched purge: every function here does nothing there.

use super::policy::{BySource, Cutoffs};
use crate::db::Db;
use crate::feed::Cursor;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use sea_orm::{
    ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr, TransactionTrait, Value,
};

pub use crate::db::days::{DAY_BITS, day_number, first_id};

/// The days ahead whose tables every process makes at start and daily.
pub const AHEAD_DAYS: i64 = 7;

/// How long a day's drop waits for the statements using the archive before giving up until the
/// next run: while it waits, the statements after it wait too.
pub const LOCK_TIMEOUT: &str = "2s";

/// Makes the tables of the days from yesterday to [`AHEAD_DAYS`] after `at`, those missing;
/// answers how many it made.
pub async fn make_ahead(db: &Db, at: DateTime<Utc>) -> Result<u32, DbErr> {
    let today = day_number(at);
    make_days(db, today - 1, today + AHEAD_DAYS).await
}

/// Makes the tables of the days `first` to `last` (days since 1970-01-01), those missing, in
/// every table laid out by day; a day whose rows sit in a default table already has none made.
pub async fn make_days(db: &Db, first: i64, last: i64) -> Result<u32, DbErr> {
    if db.backend() != DatabaseBackend::Postgres {
        return Ok(0);
    }
    let row = db
        .maintenance()
        .query_one_raw(crate::db::statement(
            DatabaseBackend::Postgres,
            "SELECT hookbox_day_partitions(CAST($1 AS integer), CAST($2 AS integer)) AS made",
            vec![first.into(), last.into()],
        ))
        .await?;
    let made: i32 = match row {
        Some(row) => row.try_get("", "made")?,
        None => 0,
    };
    Ok(made.max(0).unsigned_abs())
}

/// A day's table of the archive.
#[derive(Debug, Clone, PartialEq)]
pub struct DayTable {
    pub day: NaiveDate,
    /// `webhook_events_dYYYYMMDD`.
    pub name: String,
}

impl DayTable {
    fn number(&self) -> i64 {
        day_number(self.day.and_time(chrono::NaiveTime::MIN).and_utc())
    }

    /// The same day's table of `table`.
    fn of(&self, table: &str) -> String {
        format!("{table}_d{}", self.day.format("%Y%m%d"))
    }
}

/// The day tables of `table`, oldest first.
pub async fn day_tables<C: ConnectionTrait>(conn: &C, table: &str) -> Result<Vec<DayTable>, DbErr> {
    if conn.get_database_backend() != DatabaseBackend::Postgres {
        return Ok(Vec::new());
    }
    let rows = conn
        .query_all_raw(crate::db::statement(
            DatabaseBackend::Postgres,
            "SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = CAST($1 AS regclass) ORDER BY 1",
            vec![table.into()],
        ))
        .await?;
    let prefix = format!("{table}_d");
    let mut tables = Vec::new();
    for row in &rows {
        let name: String = row.try_get("", "name")?;
        let Some(day) = name
            .strip_prefix(&prefix)
            .and_then(|d| NaiveDate::parse_from_str(d, "%Y%m%d").ok())
        else {
            continue;
        };
        tables.push(DayTable { day, name });
    }
    Ok(tables)
}

/// A day of the archive every row of which is past its source's retention, and the rows of each
/// source it holds (but for those a restore keeps, which stay).
#[derive(Debug, Clone, PartialEq)]
pub struct DueDay {
    pub table: DayTable,
    pub rows: BySource,
}

/// The archive's days whose every row is past its source's cutoff in `cutoffs`: the latest row
/// of the day was received before the earliest cutoff of the sources it holds. A source that
/// `cutoffs` gives no row to (a cold archive that has written none of it) keeps its days.
pub async fn due_days(db: &Db, cutoffs: &Cutoffs) -> Result<Vec<DueDay>, DbErr> {
    let conn = db.maintenance();
    let mut due = Vec::new();
    for table in day_tables(conn, "webhook_events").await? {
        if table_end(&table) > Utc::now() {
            // A day not over yet still takes rows, whatever instant the cutoffs are of.
            break;
        }
        let name = &table.name;
        let latest = conn
            .query_one_raw(crate::db::statement(
                DatabaseBackend::Postgres,
                format!("SELECT max(received_at) AS latest FROM {name}"),
                vec![],
            ))
            .await?;
        let latest: Option<DateTime<Utc>> = match latest {
            Some(row) => row.try_get("", "latest")?,
            None => None,
        };
        let sources = sources_of(conn, name).await?;
        let past = match latest {
            // An empty day is dropped once its day is past every cutoff.
            None => sources.is_empty() && table_end(&table) <= earliest(cutoffs),
            Some(latest) => sources.iter().all(|source| latest < cutoffs.of(source)),
        };
        if !past {
            // A source kept longer holds this day; a later day may hold none of its rows.
            continue;
        }
        let rows = counts(conn, name).await?;
        due.push(DueDay { table, rows });
    }
    Ok(due)
}

/// When `table`'s day ends.
fn table_end(table: &DayTable) -> DateTime<Utc> {
    (table.day + Duration::days(1))
        .and_time(chrono::NaiveTime::MIN)
        .and_utc()
}

/// The earliest cutoff of any source.
fn earliest(cutoffs: &Cutoffs) -> DateTime<Utc> {
    cutoffs
        .own
        .values()
        .copied()
        .fold(cutoffs.rest, DateTime::min)
}

/// The sources with rows in the archive's table `name`, one index step each.
async fn sources_of<C: ConnectionTrait>(conn: &C, name: &str) -> Result<Vec<String>, DbErr> {
    let rows = conn
        .query_all_raw(crate::db::statement(
            DatabaseBackend::Postgres,
            format!(
                "WITH RECURSIVE s(source) AS (
                   (SELECT source FROM {name} ORDER BY source LIMIT 1)
                   UNION ALL
                   SELECT (SELECT t.source FROM {name} t WHERE t.source > s.source
                           ORDER BY t.source LIMIT 1)
                   FROM s WHERE s.source IS NOT NULL
                 )
                 SELECT source FROM s WHERE source IS NOT NULL"
            ),
            vec![],
        ))
        .await?;
    rows.iter().map(|row| row.try_get("", "source")).collect()
}

/// The rows of each source in the archive's table `name` that no restore keeps: every row of
/// each source read from an index alone, less the few a restore keeps (their partial index). Not
/// from the day's heap: a busy day's is a gigabyte, whose reading took the disk and a core from
/// the deliveries arriving meanwhile (docs/benchmarks.md, Retention); its indexes on `source` are
/// a small part of it, and an index-only scan of a past, vacuumed day reads nothing else.
/// (A day not yet vacuumed is counted as the planner chooses.)
async fn counts(conn: &DatabaseConnection, name: &str) -> Result<BySource, DbErr> {
    let transaction = conn.begin().await?;
    let run =
        |sql: String| crate::db::statement(DatabaseBackend::Postgres, sql, Vec::<Value>::new());
    // The planner reads the heap for a count of most of a table; here it must not, once the
    // day is vacuumed (an index-only scan of a day that is not would fetch its heap row by row).
    let visible = transaction
        .query_one_raw(run(format!(
            "SELECT relpages::bigint AS pages, relallvisible::bigint AS visible
             FROM pg_class WHERE oid = '{name}'::regclass"
        )))
        .await?;
    let vacuumed = match visible {
        Some(row) => {
            let (pages, visible): (i64, i64) =
                (row.try_get("", "pages")?, row.try_get("", "visible")?);
            visible * 10 >= pages * 9
        }
        None => false,
    };
    if vacuumed {
        for setting in ["enable_seqscan", "enable_bitmapscan"] {
            transaction
                .execute_raw(run(format!("SET LOCAL {setting} = off")))
                .await?;
        }
    }
    let read = |sql: String| {
        let transaction = &transaction;
        async move {
            let mut by_source = BySource::new();
            for row in &transaction.query_all_raw(run(sql)).await? {
                let n: i64 = row.try_get("", "n")?;
                by_source.insert(row.try_get("", "source")?, n.max(0).unsigned_abs());
            }
            Ok::<BySource, DbErr>(by_source)
        }
    };
    let mut by_source = read(format!(
        "SELECT source, count(*) AS n FROM {name} GROUP BY source"
    ))
    .await?;
    let kept = read(format!(
        "SELECT source, count(*) AS n FROM {name} WHERE kept_until >= now() GROUP BY source"
    ))
    .await?;
    transaction.commit().await?;
    for (source, n) in kept {
        if let Some(all) = by_source.get_mut(&source) {
            *all = all.saturating_sub(n);
        }
    }
    by_source.retain(|_, n| *n > 0);
    Ok(by_source)
}

/// What dropping days took: the days and the rows of each source they held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dropped {
    pub days: Vec<NaiveDate>,
    pub rows: BySource,
}

/// Drops the archive's days past every cutoff of `cutoffs` ([`due_days`]); a day the drop could
/// not lock in time ([`LOCK_TIMEOUT`]) waits for the next run.
pub async fn drop_due(db: &Db, cutoffs: &Cutoffs) -> Result<Dropped, DbErr> {
    drop_detached(db).await?;
    let mut dropped = Dropped::default();
    for due in due_days(db, cutoffs).await? {
        match drop_day(db, &due).await {
            Ok(true) => {
                dropped.days.push(due.table.day);
                for (source, n) in due.rows {
                    *dropped.rows.entry(source).or_default() += n;
                }
            }
            Ok(false) => {}
            Err(error) if lock_not_available(&error) => {
                tracing::warn!(
                    day = %due.table.day,
                    "archive retention: the day's drop waited {LOCK_TIMEOUT} for statements \
                     using the archive; trying again at the next run"
                );
                break;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(dropped)
}

/// Drops the day tables a run detached and was killed before dropping: a table named as a day
/// of a table laid out by day that is no partition of it. Nothing on SQLite.
async fn drop_detached(db: &Db) -> Result<(), DbErr> {
    if db.backend() != DatabaseBackend::Postgres {
        return Ok(());
    }
    let rows = db
        .maintenance()
        .query_all_raw(crate::db::statement(
            DatabaseBackend::Postgres,
            "SELECT relname::text AS name FROM pg_class
             WHERE relkind = 'r' AND NOT relispartition
               AND relnamespace = current_schema()::regnamespace
               AND relname ~ '^(webhook_events|forward_deliveries|forward_attempts)_d[0-9]{8}$'",
            vec![],
        ))
        .await?;
    for row in &rows {
        let name: String = row.try_get("", "name")?;
        tracing::info!(table = %name, "archive retention: dropping a day detached by a run that stopped");
        db.maintenance()
            .execute_raw(crate::db::statement(
                DatabaseBackend::Postgres,
                format!("DROP TABLE IF EXISTS {name}"),
                vec![],
            ))
            .await?;
    }
    Ok(())
}

/// Whether `error` is PostgreSQL's lock timeout (55P03).
fn lock_not_available(error: &DbErr) -> bool {
    error.to_string().contains("lock timeout")
}

/// Drops one day of the archive: in one transaction holding the archive's lock, detached, the
/// bodies its rows lend handed over, the rows a restore keeps moved to the default table, the
/// feed told where each source's rows end; then, the lock released, the day's table dropped.
/// False when another process dropped it first.
async fn drop_day(db: &Db, due: &DueDay) -> Result<bool, DbErr> {
    let name = &due.table.name;
    let started = std::time::Instant::now();
    let transaction = db.maintenance().begin().await?;
    let run =
        |sql: String| crate::db::statement(DatabaseBackend::Postgres, sql, Vec::<Value>::new());
    transaction
        .execute_raw(run(format!("SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")))
        .await?;
    transaction
        .execute_raw(run(
            "LOCK TABLE webhook_events IN ACCESS EXCLUSIVE MODE".into()
        ))
        .await?;
    if !still_there(&transaction, name).await? {
        return Ok(false);
    }
    transaction
        .execute_raw(run(format!(
            "ALTER TABLE webhook_events DETACH PARTITION {name}"
        )))
        .await?;
    let (lo, hi) = (
        first_id(due.table.number()),
        first_id(due.table.number() + 1),
    );
    transaction
        .execute_raw(run(format!(
            "UPDATE webhook_events w SET body = o.body, body_fields = o.body_fields, body_of = NULL
             FROM {name} o
             WHERE w.body_of = o.id AND w.body_of >= {lo} AND w.body_of < {hi}"
        )))
        .await?;
    transaction
        .execute_raw(run(format!(
            "UPDATE webhook_events SET replay_of = NULL WHERE replay_of >= {lo} AND replay_of < {hi}"
        )))
        .await?;
    transaction
        .execute_raw(run(format!(
            "INSERT INTO webhook_events SELECT * FROM {name} WHERE kept_until >= now()"
        )))
        .await?;
    for source in due.rows.keys() {
        let last = transaction
            .query_one_raw(crate::db::statement(
                DatabaseBackend::Postgres,
                format!(
                    "SELECT feed_tx, id FROM {name} WHERE source = $1
                     ORDER BY feed_tx DESC, id DESC LIMIT 1"
                ),
                vec![source.clone().into()],
            ))
            .await?;
        if let Some(row) = last {
            let place = Cursor {
                tx: row.try_get("", "feed_tx")?,
                id: row.try_get("", "id")?,
            };
            crate::feed::record_purged(&transaction, source, place).await?;
        }
    }
    transaction.commit().await?;
    let locked = started.elapsed();
    // Dropped outside the archive's lock: removing a day's files takes time, and the detached
    // table is no one's but this run's (one left by a run killed here goes at the next).
    db.maintenance()
        .execute_raw(run(format!("DROP TABLE IF EXISTS {name}")))
        .await?;
    tracing::info!(
        day = %due.table.day,
        rows = due.rows.values().sum::<u64>(),
        locked_ms = locked.as_millis() as u64,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "archive retention: dropped a day whole"
    );
    Ok(true)
}

/// Whether table `name` is still there (and attached), in `conn`'s transaction.
async fn still_there<C: ConnectionTrait>(conn: &C, name: &str) -> Result<bool, DbErr> {
    let row = conn
        .query_one_raw(crate::db::statement(
            DatabaseBackend::Postgres,
            "SELECT to_regclass($1) IS NOT NULL AS there",
            vec![name.into()],
        ))
        .await?;
    match row {
        Some(row) => row.try_get("", "there"),
        None => Ok(false),
    }
}

/// How far past the end of a day of forward deliveries every cutoff must be before the day is
/// dropped: an id's day is the database's clock, `created_at` hookbox's.
const FORWARD_MARGIN: Duration = Duration::hours(1);

/// Drops the days of forward deliveries (and their attempts) that ended before every source's
/// cutoff in `cutoffs` (by when a delivery was created); the deliveries still pending or dead
/// and their attempts are moved to the default tables first. Answers the days and the
/// deliveries dropped.
pub async fn drop_forward_due(db: &Db, cutoffs: &Cutoffs) -> Result<(Vec<NaiveDate>, u64), DbErr> {
    let conn = db.maintenance();
    let cutoff = earliest(cutoffs);
    let mut days = Vec::new();
    let mut rows = 0;
    for table in day_tables(conn, "forward_deliveries").await? {
        if table_end(&table) + FORWARD_MARGIN > cutoff.min(Utc::now()) {
            break;
        }
        match drop_forward_day(db, &table).await {
            Ok(Some(n)) => {
                days.push(table.day);
                rows += n;
            }
            Ok(None) => {}
            Err(error) if lock_not_available(&error) => {
                tracing::warn!(
                    day = %table.day,
                    "forwarding retention: the day's drop waited {LOCK_TIMEOUT} for statements \
                     using the forward deliveries; trying again at the next run"
                );
                break;
            }
            Err(error) => return Err(error),
        }
    }
    Ok((days, rows))
}

/// Drops one day of forward deliveries and its attempts; answers how many deliveries that were
/// done went, or none when another process dropped the day first.
async fn drop_forward_day(db: &Db, table: &DayTable) -> Result<Option<u64>, DbErr> {
    let (deliveries, attempts) = (table.of("forward_deliveries"), table.of("forward_attempts"));
    const STAYING: &str = "status NOT IN ('delivered', 'superseded')";
    // Counted before the lock, so the count holds up no delivery.
    let done = db
        .maintenance()
        .query_one_raw(crate::db::statement(
            DatabaseBackend::Postgres,
            format!("SELECT count(*) AS n FROM {deliveries} WHERE NOT ({STAYING})"),
            vec![],
        ))
        .await?;
    let done: i64 = match done {
        Some(row) => row.try_get("", "n")?,
        None => 0,
    };
    let transaction = db.maintenance().begin().await?;
    let run =
        |sql: String| crate::db::statement(DatabaseBackend::Postgres, sql, Vec::<Value>::new());
    transaction
        .execute_raw(run(format!("SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")))
        .await?;
    transaction
        .execute_raw(run(
            "LOCK TABLE forward_deliveries, forward_attempts IN ACCESS EXCLUSIVE MODE".into(),
        ))
        .await?;
    if !still_there(&transaction, &deliveries).await? {
        return Ok(None);
    }
    for (parent, day) in [
        ("forward_deliveries", &deliveries),
        ("forward_attempts", &attempts),
    ] {
        if still_there(&transaction, day).await? {
            transaction
                .execute_raw(run(format!("ALTER TABLE {parent} DETACH PARTITION {day}")))
                .await?;
        }
    }
    transaction
        .execute_raw(run(format!(
            "INSERT INTO forward_deliveries SELECT * FROM {deliveries} WHERE {STAYING}"
        )))
        .await?;
    if still_there(&transaction, &attempts).await? {
        transaction
            .execute_raw(run(format!(
                "INSERT INTO forward_attempts SELECT a.* FROM {attempts} a
                 JOIN {deliveries} d ON d.id = a.delivery_id WHERE d.{STAYING}"
            )))
            .await?;
    }
    transaction.commit().await?;
    for table in [&attempts, &deliveries] {
        db.maintenance()
            .execute_raw(run(format!("DROP TABLE IF EXISTS {table}")))
            .await?;
    }
    Ok(Some(done.max(0).unsigned_abs()))
}

/// Locks a statement reading every day of the archive takes, a day: the day's table and the
/// indexes the planner looks at. PostgreSQL's lock table is shared by every connection and holds
/// `max_locks_per_transaction` × `max_connections` locks.
pub const LOCKS_A_DAY: u32 = 16;

/// The archive's days and PostgreSQL's `max_locks_per_transaction`, when the lock table has no
/// room for a quarter of the connections to read every day at once ([`LOCKS_A_DAY`] each a
/// day): hookbox warns at start, as such statements could fail with "out of shared memory".
pub async fn short_of_locks(db: &Db) -> Result<Option<(u32, u32)>, DbErr> {
    if db.backend() != DatabaseBackend::Postgres {
        return Ok(None);
    }
    let days = u32::try_from(day_tables(db.maintenance(), "webhook_events").await?.len())
        .unwrap_or(u32::MAX);
    let row = db
        .maintenance()
        .query_one_raw(crate::db::statement(
            DatabaseBackend::Postgres,
            "SELECT CAST(current_setting('max_locks_per_transaction') AS integer) AS locks",
            vec![],
        ))
        .await?;
    let locks: i32 = match row {
        Some(row) => row.try_get("", "locks")?,
        None => return Ok(None),
    };
    let locks = locks.max(0).unsigned_abs();
    Ok((locks < wanted_locks(days)).then_some((days, locks)))
}

/// The `max_locks_per_transaction` that [`short_of_locks`] asks of an archive of `days` days.
pub fn wanted_locks(days: u32) -> u32 {
    LOCKS_A_DAY.saturating_mul(days) / 4
}
