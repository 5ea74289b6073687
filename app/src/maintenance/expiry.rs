//! Body expiry: past its source's `body_retention_days` an archive row keeps its ids, outcome,
//! error and times, and gains the SHA-256 and size of its body as received; its body, headers
//! and form fields are dropped (null on PostgreSQL; an empty body and `{}` on SQLite, whose
//! columns stay `NOT NULL`: readers go by `body_expired_at`).
//!
//! A row that refers to an expiring row's identical body (`body_of`, a re-posted duplicate,
//! younger) is handed that body first, in the same transaction, so each row keeps its body as
//! long as its own retention says. Forward deliveries carry their own payload, so a pending one
//! never needs the archive's body.
//!
//! Each scope (a source with a body retention of its own, or `*`: every other source, when
//! `[server] body_retention_days` is set) keeps the time before which every due body has expired
//! (`body_expiry_horizons`); a run reads the archive from there to its cutoff, so its cost is
//! the rows that came due since, not the history kept.

pub use super::policy::{BodyPolicy, EVERY_OTHER_SOURCE, Scope};

use super::policy::{BySource, Cutoffs};
use crate::db::Db;
use crate::db::conditions::Conditions;
use crate::db::dialect::Dialect;
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait};
use sha2::{Digest, Sha256};

/// Rows per expiry transaction: each body is read and hashed one at a time, so a batch holds
/// at most one body in memory.
pub const DEFAULT_BATCH: usize = 500;

/// Drops the bodies of every archive row past its source's body retention at `at`, `batch`
/// rows per transaction; answers how many rows of each source expired.
pub async fn expire_bodies(
    db: &Db,
    policy: &BodyPolicy,
    at: DateTime<Utc>,
    batch: usize,
) -> Result<BySource, DbErr> {
    expire_scopes(db, policy.at(at), batch).await
}

/// [`expire_bodies`] of given scopes (a policy's, clamped to what the cold archive holds:
/// [`Scope::within`]).
pub async fn expire_scopes(db: &Db, scopes: Vec<Scope>, batch: usize) -> Result<BySource, DbErr> {
    let batch = batch.max(1);
    let started = Utc::now();
    let mut total = BySource::new();
    for scope in scopes {
        let from = horizon(db, &scope.name).await?;
        loop {
            let transaction = db.maintenance().begin().await?;
            let expired = expire_batch(&transaction, &scope, from, batch, started).await?;
            transaction.commit().await?;
            let count: u64 = expired.values().sum();
            for (source, n) in expired {
                *total.entry(source).or_default() += n;
            }
            if count < batch as u64 {
                break;
            }
        }
        advance_horizon(db, &scope, from, started).await?;
    }
    Ok(total)
}

/// What [`expire_bodies`] would expire at `at`, per source, without the rows a purge by
/// `retention` deletes first.
pub async fn due(
    db: &Db,
    policy: &BodyPolicy,
    retention: &Cutoffs,
    at: DateTime<Utc>,
) -> Result<BySource, DbErr> {
    let mut total = BySource::new();
    for scope in policy.at(at) {
        let from = horizon(db, &scope.name).await?;
        let mut c = Conditions::new();
        let due = scope.due(&mut c, from);
        let purged = retention.past(&mut c, "source", "received_at");
        let rows = db
            .maintenance()
            .query_all_raw(crate::db::statement(
                db.backend(),
                format!(
                    "SELECT source, count(*) AS n FROM webhook_events
                     WHERE {due} AND NOT {purged} GROUP BY source"
                ),
                c.values,
            ))
            .await?;
        for row in &rows {
            let n: i64 = row.try_get("", "n")?;
            *total.entry(row.try_get("", "source")?).or_default() += n.max(0).unsigned_abs();
        }
    }
    Ok(total)
}

/// Where the scope's next run starts: every due body before it has expired.
async fn horizon(db: &Db, scope: &str) -> Result<DateTime<Utc>, DbErr> {
    let row = db
        .maintenance()
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT through FROM body_expiry_horizons WHERE scope = $1",
            vec![scope.into()],
        ))
        .await?;
    match row {
        Some(row) => row.try_get("", "through"),
        None => Ok(DateTime::<Utc>::UNIX_EPOCH),
    }
}

/// Records where the scope's next run starts: the oldest body still due (one another process
/// held, or one that failed), else the cutoff; never past a day before this run started, so a
/// delivery committing late, or a cutoff in the future (`--as-of`), is never passed over.
async fn advance_horizon(
    db: &Db,
    scope: &Scope,
    from: DateTime<Utc>,
    started: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut c = Conditions::new();
    let due = scope.due(&mut c, from);
    let oldest = db
        .maintenance()
        .query_one_raw(crate::db::statement(
            db.backend(),
            format!("SELECT min(received_at) AS oldest FROM webhook_events WHERE {due}"),
            c.values,
        ))
        .await?
        .map(|row| row.try_get::<Option<DateTime<Utc>>>("", "oldest"))
        .transpose()?
        .flatten();
    let through = oldest
        .unwrap_or(scope.cutoff)
        .min(started - Duration::days(1))
        .max(from);
    db.maintenance()
        .execute_raw(crate::db::statement(
            db.backend(),
            "INSERT INTO body_expiry_horizons (scope, through) VALUES ($1, $2)
             ON CONFLICT (scope) DO UPDATE SET through = excluded.through",
            vec![scope.name.clone().into(), through.into()],
        ))
        .await?;
    Ok(())
}

/// Expires at most `batch` of the scope's oldest due bodies inside `conn` (a transaction):
/// hands each over to the rows that refer to it, hashes each as received, then drops them.
async fn expire_batch<C: ConnectionTrait>(
    conn: &C,
    scope: &Scope,
    from: DateTime<Utc>,
    batch: usize,
    now: DateTime<Utc>,
) -> Result<BySource, DbErr> {
    let backend = conn.get_database_backend();
    let dialect = Dialect::of(backend);
    let mut c = Conditions::new();
    let due = scope.due(&mut c, from);
    let limit = c.param(i64::try_from(batch).unwrap_or(i64::MAX));
    let chosen = conn
        .query_all_raw(crate::db::statement(
            backend,
            format!(
                "SELECT id, source FROM webhook_events WHERE {due}
                 ORDER BY received_at, id LIMIT {limit}{}",
                dialect.lock_for_update()
            ),
            c.values,
        ))
        .await?;
    let mut ids = Vec::with_capacity(chosen.len());
    let mut by_source = BySource::new();
    for row in &chosen {
        ids.push(row.try_get::<i64>("", "id")?);
        *by_source.entry(row.try_get("", "source")?).or_default() += 1;
    }
    if ids.is_empty() {
        return Ok(by_source);
    }
    super::purge::hand_over_bodies(conn, &ids).await?;
    let mut digests = Vec::with_capacity(ids.len());
    for id in &ids {
        digests.push((*id, digest_of(conn, *id).await?));
    }
    for (id, (sha256, bytes)) in digests {
        conn.execute_raw(crate::db::statement(
            backend,
            format!(
                "UPDATE webhook_events SET {}, body_fields = NULL, body_of = NULL,
                     body_sha256 = $1, body_bytes = $2, body_expired_at = $3
                 WHERE id = $4",
                dialect.expired_body()
            ),
            vec![sha256.into(), bytes.into(), now.into(), id.into()],
        ))
        .await?;
    }
    Ok(by_source)
}

/// The SHA-256 (hex) and size of an archive row's body as received: its own, or the body it
/// refers to.
async fn digest_of<C: ConnectionTrait>(conn: &C, id: i64) -> Result<(String, i64), DbErr> {
    let row = conn
        .query_one_raw(crate::db::statement(
            conn.get_database_backend(),
            format!(
                "SELECT {} FROM webhook_events WHERE id = $1",
                crate::db::events::ARCHIVED_BODY
            ),
            vec![id.into()],
        ))
        .await?;
    let body: Vec<u8> = match row {
        Some(row) => row
            .try_get::<Option<Vec<u8>>>("", "body")?
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let bytes = i64::try_from(body.len()).unwrap_or(i64::MAX);
    Ok((hex::encode(Sha256::digest(&body)), bytes))
}

/// The server's body expiry, one run: logged and counted, never returned. With a cold archive,
/// `written` holds each source's horizon there: no body expires before it is written.
pub async fn run_once(
    db: &Db,
    policy: &BodyPolicy,
    written: Option<&std::collections::BTreeMap<String, DateTime<Utc>>>,
) {
    if policy.default_days.is_none() && policy.own.is_empty() {
        return;
    }
    let started = std::time::Instant::now();
    match expire_scopes(db, policy.within(Utc::now(), written), DEFAULT_BATCH).await {
        Ok(by_source) => {
            let rows = by_source.values().sum();
            metrics::counter!("hookbox_purge_expired_bodies_total").increment(rows);
            tracing::info!(
                rows,
                per_source = %super::policy::per_source(&by_source),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "body retention: dropped the bodies of archive rows past their body retention"
            )
        }
        Err(error) => tracing::warn!(
            %error,
            "body retention: expiry failed; retrying at the next run"
        ),
    }
}
