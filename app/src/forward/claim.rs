//! Claiming due forward deliveries: a round of claims is one transaction of a few statements
//! whatever its size ([decision 0008](../../../docs/decisions/0008-set-based-forward-claims.md)).
//!
//! The steps, each a function below: [`candidates`] (one statement per destination: its due
//! rows, locked), [`supersede`] (one statement: the candidates a greater revision makes
//! pointless), [`sendable`] (in hookbox: each object's first remaining row) and [`lease`] (one
//! statement: the rows that may be sent now).

use crate::db::Db;
use crate::db::dialect::Dialect;
use crate::db::statement;
use crate::model::ForwardStatus::{Dead, Delivered, Pending, Superseded};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DatabaseTransaction, DbErr, FromQueryResult, TransactionTrait};

/// A claimed forward delivery: what its request needs.
#[derive(Debug, Clone, FromQueryResult)]
pub struct Claimed {
    pub id: i64,
    pub destination: String,
    pub source: String,
    pub event_id: String,
    pub object_id: Option<String>,
    pub revision: Option<i64>,
    pub event_type: Option<String>,
    pub received_at: DateTime<Utc>,
    pub payload: String,
    pub attempts: i32,
    /// The attempt count at which the current retry schedule began (an operator's retry of a
    /// dead delivery starts it again).
    pub schedule_base: i32,
}

const CLAIM_COLUMNS: &str = "id, destination, source, event_id, object_id, revision, event_type, received_at, payload, attempts, schedule_base";

/// Claims up to `limit` due deliveries of the given destinations for `lease`: each is attempted
/// by one worker at a time; a worker that dies loses its claim when the lease ends. Paused
/// destinations are skipped; the destinations are served in the order given, each up to what
/// is left of `limit` (the forwarder rotates them).
///
/// On PostgreSQL the candidates' rows are locked (`SKIP LOCKED`: rows another worker is
/// claiming are left to it) and so is each candidate's object, by a transaction-scoped advisory
/// lock taken without waiting: an object another worker is deciding about is left for the next
/// round. The two later statements start after the locks are held, so their snapshots see every
/// lease a worker committed before it let go of the object; on SQLite the single writer
/// serialises the claims.
pub async fn claim_due(
    db: &Db,
    destinations: &[&str],
    worker: &str,
    lease_for: std::time::Duration,
    limit: usize,
) -> Result<Vec<Claimed>, DbErr> {
    if destinations.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let dialect = Dialect::of(db.backend());
    let now = Utc::now();
    let lease_until = now + Duration::from_std(lease_for).unwrap_or(Duration::seconds(60));
    let txn = db.writer.begin().await?;
    let candidates = candidates(&txn, dialect, destinations, now, limit).await?;
    if candidates.is_empty() {
        txn.commit().await?;
        return Ok(Vec::new());
    }
    let superseded = supersede(&txn, dialect, &candidates).await?;
    let sendable = sendable(&candidates, &superseded);
    let mut claimed = lease(&txn, dialect, &sendable, lease_until, worker, now).await?;
    txn.commit().await?;
    // In the order they came due (and the destinations' order).
    claimed.sort_by_key(|c| sendable.iter().position(|id| *id == c.id));
    Ok(claimed)
}

/// A candidate of a round of claims: its id and, when it has an object revision (whose order
/// matters), its object as (destination, source, object id).
struct Candidate {
    id: i64,
    object: Option<(String, String, String)>,
}

/// Step 1: each destination's due rows, in the order they come due, locked with their objects
/// (rows and objects another worker holds are skipped, never waited for). One destination at a
/// time: its pending rows in due order are an index range
/// (`ix_forward_deliveries_due_by_destination`), whatever the backlog.
async fn candidates(
    txn: &DatabaseTransaction,
    dialect: Dialect,
    destinations: &[&str],
    now: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<Candidate>, DbErr> {
    let sql = format!(
        "SELECT c.id, c.destination, c.source, c.object_id, c.revision FROM (
             SELECT id, destination, source, object_id, revision FROM forward_deliveries
             WHERE destination = $3 AND status = '{pending}' AND next_attempt_at <= $1
               AND (lease_until IS NULL OR lease_until < $1)
               AND NOT EXISTS (SELECT 1 FROM forward_destinations p
                               WHERE p.destination = $3 AND p.paused_at IS NOT NULL)
             ORDER BY next_attempt_at, id LIMIT $2{row_locks}
         ) c
         WHERE c.object_id IS NULL OR c.revision IS NULL OR {object_lock}",
        pending = Pending.as_str(),
        row_locks = dialect.lock_skipping_locked(),
        object_lock =
            dialect.try_lock_key("c.destination || '/' || c.source || '/' || c.object_id"),
    );
    let mut candidates: Vec<Candidate> = Vec::new();
    for destination in destinations {
        let room = limit.saturating_sub(candidates.len());
        if room == 0 {
            break;
        }
        let rows = txn
            .query_all_raw(statement(
                dialect,
                &sql,
                vec![now.into(), (room as i64).into(), (*destination).into()],
            ))
            .await?;
        for row in rows {
            let object = row.try_get::<Option<String>>("", "object_id")?;
            let revision = row.try_get::<Option<i64>>("", "revision")?;
            let object = match (object, revision) {
                (Some(object), Some(_)) => Some((
                    row.try_get::<String>("", "destination")?,
                    row.try_get::<String>("", "source")?,
                    object,
                )),
                _ => None,
            };
            candidates.push(Candidate {
                id: row.try_get::<i64>("", "id")?,
                object,
            });
        }
    }
    Ok(candidates)
}

/// Step 2: supersedes the candidates made pointless by a greater revision of their object that
/// is pending, was delivered, or is dead (a dead attempt may have reached the application), and
/// returns their ids.
///
/// Ids go as one parameter, so the statement's text (and its prepared plan) is the same whatever
/// the round's size. Every condition on a candidate's own columns is decided in hookbox, never in
/// SQL: the rows are locked (or behind SQLite's single writer), so only this round changes them,
/// and a condition such as `status = 'pending'` would invite a plan that reads the whole backlog
/// through a partial index.
async fn supersede(
    txn: &DatabaseTransaction,
    dialect: Dialect,
    candidates: &[Candidate],
) -> Result<Vec<i64>, DbErr> {
    let objects: Vec<i64> = candidates
        .iter()
        .filter(|c| c.object.is_some())
        .map(|c| c.id)
        .collect();
    if objects.is_empty() {
        return Ok(Vec::new());
    }
    txn.query_all_raw(statement(
        dialect,
        supersede_statement(dialect),
        vec![dialect.id_list(&objects).into()],
    ))
    .await?
    .iter()
    .map(|row| row.try_get::<i64>("", "id"))
    .collect()
}

/// The statement of [`supersede`]: `$1` the candidates' ids. A candidate is beaten when its
/// object's greatest revision that is pending, delivered or dead is greater than its own: read
/// per candidate, newest first along the object's index of each day's table (the order that
/// index gives, so it is the index read even where a table's statistics are missing, as in a
/// day's first minutes), never by a join that hashes a day's table whole.
pub fn supersede_statement(dialect: Dialect) -> String {
    format!(
        "UPDATE forward_deliveries AS f SET status = '{superseded}', lease_until = NULL, leased_by = NULL
         WHERE f.id {among}
           AND f.revision < (SELECT g.revision FROM forward_deliveries g
                             WHERE g.destination = f.destination AND g.source = f.source
                               AND g.object_id = f.object_id
                               AND g.status IN ('{pending}', '{delivered}', '{dead}')
                             ORDER BY g.revision DESC LIMIT 1)
         RETURNING id",
        among = dialect.among_ids("$1"),
        superseded = Superseded.as_str(),
        pending = Pending.as_str(),
        delivered = Delivered.as_str(),
        dead = Dead.as_str(),
    )
}

/// Step 3: what is left of an object's candidates is its greatest pending revision: one row, or
/// several of the same revision (replays), of which the first is sent and the others wait.
fn sendable(candidates: &[Candidate], superseded: &[i64]) -> Vec<i64> {
    let mut sendable: Vec<i64> = Vec::new();
    let mut taken: Vec<&(String, String, String)> = Vec::new();
    for Candidate { id, object } in candidates {
        if superseded.contains(id) {
            continue;
        }
        if let Some(object) = object {
            if taken.contains(&object) {
                continue;
            }
            taken.push(object);
        }
        sendable.push(*id);
    }
    sendable
}

/// Step 4: leases the sendable rows to `worker` until `lease_until`, except those of an object
/// with an attempt in flight, and returns what their requests need.
async fn lease(
    txn: &DatabaseTransaction,
    dialect: Dialect,
    sendable: &[i64],
    lease_until: DateTime<Utc>,
    worker: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Claimed>, DbErr> {
    if sendable.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "UPDATE forward_deliveries AS f SET lease_until = $2, leased_by = $3
         WHERE f.id {among}
           AND (f.object_id IS NULL OR f.revision IS NULL
                OR NOT EXISTS (SELECT 1 FROM forward_deliveries g
                               WHERE g.destination = f.destination AND g.source = f.source
                                 AND g.object_id = f.object_id
                                 AND g.status = '{pending}' AND g.lease_until >= $4))
         RETURNING {CLAIM_COLUMNS}",
        among = dialect.among_ids("$1"),
        pending = Pending.as_str(),
    );
    let rows = txn
        .query_all_raw(statement(
            dialect,
            &sql,
            vec![
                dialect.id_list(sendable).into(),
                lease_until.into(),
                worker.into(),
                now.into(),
            ],
        ))
        .await?;
    rows.iter()
        .map(|row| Claimed::from_query_result(row, ""))
        .collect()
}

/// Gives up the claims of `worker` on rows it did not finish (an attempt abandoned at shutdown):
/// they are due again at once, for another process or the next start.
pub async fn release_claims(db: &Db, worker: &str) -> Result<u64, DbErr> {
    let done = db
        .writer
        .execute_raw(statement(
            db,
            format!(
                "UPDATE forward_deliveries SET lease_until = NULL, leased_by = NULL
                 WHERE leased_by = $1 AND status = '{}'",
                Pending.as_str()
            ),
            vec![worker.into()],
        ))
        .await?;
    Ok(done.rows_affected())
}
