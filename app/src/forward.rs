//! The outbox's other side: claiming due forward deliveries, the request each one is, and what an
//! attempt's answer does to its row. The HTTP call itself is the server's (`server::forwarder`);
//! no database transaction is open while it runs.
//!
//! Order per object (snapshot sources): a claim takes only the greatest pending revision of an
//! object, and only while no attempt of that object is in flight (leased); every smaller pending
//! revision is `superseded` then, and so is a pending revision smaller than one already
//! delivered or dead (a dead attempt may have reached the application). So a destination never
//! receives a revision after a greater one. The claim of an object's rows is serialised: on
//! PostgreSQL by a transaction-scoped advisory lock per object, taken without waiting (an object
//! another worker holds waits for the next round), on SQLite by its single writer
//! ([decision 0008](../../docs/decisions/0008-set-based-forward-claims.md)).

use crate::config::Destination;
use crate::db::Db;
use crate::schemes::Scheme;
use chrono::{DateTime, Duration, Utc};
use sea_orm::{
    ConnectionTrait, DatabaseBackend, DbErr, FromQueryResult, Statement, TransactionTrait, Value,
};

/// The forwarder's wake-up, in the dashboard's context: a confirmed replay (or retry) wakes it
/// instead of waiting for its next poll.
#[derive(Clone, Debug, Default)]
pub struct Wake(pub std::sync::Arc<tokio::sync::Notify>);

/// Wakes this process's forwarder, if the context has one.
pub fn wake() {
    if let Some(Wake(notify)) = leptos::prelude::use_context::<Wake>() {
        notify.notify_one();
    }
}

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

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptResult {
    pub started_at: DateTime<Utc>,
    pub duration_ms: i64,
    /// The answer's status, if one came.
    pub status_code: Option<u16>,
    /// Why it failed (a refused connection, a timeout, a non-2xx status).
    pub error: Option<String>,
    /// At most 1 KiB of the answer's body.
    pub response_excerpt: Option<String>,
    /// A `Retry-After` in seconds carried by a 429 or 503.
    pub retry_after_secs: Option<u64>,
}

impl AttemptResult {
    pub fn delivered(&self) -> bool {
        self.status_code.is_some_and(|s| (200..300).contains(&s))
    }
}

/// What became of a row after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterAttempt {
    Delivered,
    /// Pending again, due at this time.
    Retry(DateTime<Utc>),
    Dead,
}

fn statement(backend: DatabaseBackend, sql: &str, values: Vec<Value>) -> Statement {
    Statement::from_sql_and_values(backend, sql, values)
}

const CLAIM_COLUMNS: &str = "id, destination, source, event_id, object_id, revision, event_type, received_at, payload, attempts, schedule_base";

/// Claims up to `limit` due deliveries of the given destinations for `lease`: each is attempted
/// by one worker at a time; a worker that dies loses its claim when the lease ends. Paused
/// destinations are skipped; the destinations are served in the order given, each up to what
/// is left of `limit` (the forwarder rotates them).
///
/// A round of claims is one transaction of a few statements whatever its size: the candidates
/// (one statement per destination), then one that supersedes the candidates a greater revision
/// makes pointless, then one that leases the rest that may be sent now (at most one per object,
/// none of an object with an attempt in flight). On PostgreSQL the candidates' rows are locked
/// (`SKIP LOCKED`: rows another worker is claiming are left to it) and so is each candidate's
/// object, by a transaction-scoped advisory lock taken without waiting: an object another worker
/// is deciding about is left for the next round. The two later statements start after the locks
/// are held, so their snapshots see every lease a worker committed before it let go of the
/// object; on SQLite the single writer serialises the claims.
pub async fn claim_due(
    db: &Db,
    destinations: &[&str],
    worker: &str,
    lease: std::time::Duration,
    limit: usize,
) -> Result<Vec<Claimed>, DbErr> {
    if destinations.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let backend = db.backend();
    let now = Utc::now();
    let lease_until = now + Duration::from_std(lease).unwrap_or(Duration::seconds(60));
    let (row_locks, object_locks) = if backend == DatabaseBackend::Postgres {
        (
            " FOR UPDATE SKIP LOCKED",
            " WHERE c.object_id IS NULL OR c.revision IS NULL
                OR pg_try_advisory_xact_lock(hashtextextended(c.destination || '/' || c.source || '/' || c.object_id, 0))",
        )
    } else {
        ("", "")
    };
    let txn = db.writer.begin().await?;
    // One destination at a time: its pending rows in the order they come due are an index range
    // (ix_forward_deliveries_due_by_destination), whatever the backlog.
    let mut candidates: Vec<Candidate> = Vec::new();
    for destination in destinations {
        let room = limit.saturating_sub(candidates.len());
        if room == 0 {
            break;
        }
        let rows = txn
            .query_all_raw(statement(
                backend,
                &format!(
                    "SELECT c.id, c.destination, c.source, c.object_id, c.revision FROM (
                         SELECT id, destination, source, object_id, revision FROM forward_deliveries
                         WHERE destination = $3 AND status = 'pending' AND next_attempt_at <= $1
                           AND (lease_until IS NULL OR lease_until < $1)
                           AND NOT EXISTS (SELECT 1 FROM forward_destinations p
                                           WHERE p.destination = $3 AND p.paused_at IS NOT NULL)
                         ORDER BY next_attempt_at, id LIMIT $2{row_locks}
                     ) c{object_locks}"
                ),
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
    if candidates.is_empty() {
        txn.commit().await?;
        return Ok(Vec::new());
    }
    // Ids as one parameter, so each statement's text (and its prepared plan) is the same whatever
    // the round's size. Every condition on a candidate's own columns is decided here, never in
    // SQL: the rows are locked (or behind SQLite's single writer), so only this round changes
    // them, and a condition such as `status = 'pending'` would invite a plan that reads the whole
    // backlog through a partial index.
    let (among, id_list): (&str, fn(&[i64]) -> String) = if backend == DatabaseBackend::Postgres {
        ("= ANY(CAST($1 AS TEXT)::bigint[])", |ids| {
            format!("{{{}}}", joined(ids))
        })
    } else {
        ("IN (SELECT value FROM json_each($1))", |ids| {
            format!("[{}]", joined(ids))
        })
    };
    // A pending revision is pointless once a greater one is pending, was delivered, or is dead
    // (a dead attempt may have reached the application).
    let objects: Vec<i64> = candidates
        .iter()
        .filter(|c| c.object.is_some())
        .map(|c| c.id)
        .collect();
    let superseded: Vec<i64> = if objects.is_empty() {
        Vec::new()
    } else {
        txn.query_all_raw(statement(
            backend,
            &format!(
                "UPDATE forward_deliveries AS f SET status = 'superseded', lease_until = NULL, leased_by = NULL
                 WHERE f.id {among}
                   AND EXISTS (SELECT 1 FROM forward_deliveries g
                               WHERE g.destination = f.destination AND g.source = f.source
                                 AND g.object_id = f.object_id AND g.revision > f.revision
                                 AND g.status IN ('pending', 'delivered', 'dead'))
                 RETURNING id"
            ),
            vec![id_list(&objects).into()],
        ))
        .await?
        .iter()
        .map(|row| row.try_get::<i64>("", "id"))
        .collect::<Result<_, _>>()?
    };
    // What is left of an object's candidates is its greatest pending revision: one row, or
    // several of the same revision (replays), of which the first is sent and the others wait.
    let mut sendable: Vec<i64> = Vec::new();
    let mut taken: Vec<&(String, String, String)> = Vec::new();
    for Candidate { id, object } in &candidates {
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
    // Sent now unless an attempt of the object is in flight.
    let rows = if sendable.is_empty() {
        Vec::new()
    } else {
        txn.query_all_raw(statement(
            backend,
            &format!(
                "UPDATE forward_deliveries AS f SET lease_until = $2, leased_by = $3
                 WHERE f.id {among}
                   AND (f.object_id IS NULL OR f.revision IS NULL
                        OR NOT EXISTS (SELECT 1 FROM forward_deliveries g
                                       WHERE g.destination = f.destination AND g.source = f.source
                                         AND g.object_id = f.object_id
                                         AND g.status = 'pending' AND g.lease_until >= $4))
                 RETURNING {CLAIM_COLUMNS}"
            ),
            vec![
                id_list(&sendable).into(),
                lease_until.into(),
                worker.into(),
                now.into(),
            ],
        ))
        .await?
    };
    let mut claimed = rows
        .iter()
        .map(|row| Claimed::from_query_result(row, ""))
        .collect::<Result<Vec<_>, _>>()?;
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

fn joined(ids: &[i64]) -> String {
    ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// The request body: the event with its snapshot (or a dedup source's payload) embedded as
/// received, so no number changes on the way.
pub fn request_body(claimed: &Claimed) -> String {
    let text = |v: &str| serde_json::Value::String(v.to_string()).to_string();
    let optional = |v: &Option<String>| v.as_deref().map_or("null".to_string(), text);
    let received_at = claimed
        .received_at
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // A snapshot source's revision and snapshot, or a dedup source's payload.
    let (kind, content) = match claimed.revision {
        Some(revision) => (
            "object.updated",
            format!(r#""revision":{revision},"snapshot":{}"#, claimed.payload),
        ),
        None => (
            "event.accepted",
            format!(r#""payload":{}"#, claimed.payload),
        ),
    };
    format!(
        r#"{{"type":"{kind}","source":{},"event_id":{},"object_id":{},{content},"event_type":{},"received_at":{}}}"#,
        text(&claimed.source),
        text(&claimed.event_id),
        optional(&claimed.object_id),
        optional(&claimed.event_type),
        text(&received_at),
    )
}

/// The `webhook-id` of a forward delivery: the same on every attempt, another for every row.
pub fn message_id(claimed: &Claimed) -> String {
    format!("fwd_{}", claimed.id)
}

/// The Standard Webhooks headers signing `body` for `destination` now.
pub fn signed_headers(
    destination: &Destination,
    claimed: &Claimed,
    body: &str,
) -> Vec<(http::HeaderName, String)> {
    Scheme::StandardWebhooks.sign(
        &destination.key,
        &message_id(claimed),
        body.as_bytes(),
        Utc::now().timestamp(),
    )
}

/// The longest a destination's `Retry-After` can make a delivery wait: a day. A larger one (or
/// a date years away) is cut to it, so a destination cannot park a delivery forever.
pub const MAX_RETRY_AFTER_SECS: u64 = 24 * 60 * 60;

/// `now` plus `wait_secs`, saturating at the latest time hookbox can store instead of
/// overflowing.
fn retry_at(now: DateTime<Utc>, wait_secs: u64) -> DateTime<Utc> {
    i64::try_from(wait_secs)
        .ok()
        .and_then(Duration::try_seconds)
        .and_then(|wait| now.checked_add_signed(wait))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// A `Retry-After` value in seconds from `now`: whole seconds, or an HTTP date (a date in the
/// past is no wait). `None` when it is neither.
pub fn retry_after_secs(value: &str, now: DateTime<Utc>) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs);
    }
    let at = DateTime::parse_from_rfc2822(value).ok()?;
    Some(u64::try_from((at.with_timezone(&Utc) - now).num_seconds()).unwrap_or(0))
}

/// Records an attempt and moves the row on: delivered on a 2xx; else the next wait of the
/// schedule (or a larger `Retry-After`), or dead after the last one. The lease is released.
pub async fn record_attempt(
    db: &Db,
    destination: &Destination,
    claimed: &Claimed,
    result: &AttemptResult,
) -> Result<AfterAttempt, DbErr> {
    let backend = db.backend();
    let attempt = claimed.attempts + 1;
    let now = Utc::now();
    let after = if result.delivered() {
        AfterAttempt::Delivered
    } else {
        match destination
            .retry_schedule_secs
            .get(usize::try_from(claimed.attempts - claimed.schedule_base).unwrap_or(usize::MAX))
        {
            None => AfterAttempt::Dead,
            Some(wait) => {
                let wait = (*wait).max(
                    result
                        .retry_after_secs
                        .unwrap_or(0)
                        .min(MAX_RETRY_AFTER_SECS),
                );
                AfterAttempt::Retry(retry_at(now, wait))
            }
        }
    };
    let (status, next_attempt_at, delivered_at) = match after {
        AfterAttempt::Delivered => ("delivered", now, Some(now)),
        AfterAttempt::Retry(at) => ("pending", at, None),
        AfterAttempt::Dead => ("dead", now, None),
    };
    let mut parts: Vec<(&str, Vec<Value>)> = vec![
        (
            "INSERT INTO forward_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            vec![
                claimed.id.into(),
                attempt.into(),
                result.started_at.into(),
                result.duration_ms.into(),
                result.status_code.map(i32::from).into(),
                result.error.clone().into(),
                result.response_excerpt.clone().into(),
            ],
        ),
        (
            "UPDATE forward_deliveries SET status = $2, attempts = $3, next_attempt_at = $4,
                    last_status_code = $5, last_error = $6, delivered_at = $7,
                    lease_until = NULL, leased_by = NULL
             WHERE id = $1",
            vec![
                claimed.id.into(),
                status.into(),
                attempt.into(),
                next_attempt_at.into(),
                result.status_code.map(i32::from).into(),
                result.error.clone().into(),
                delivered_at.into(),
            ],
        ),
    ];
    if let Some(error) = result.error.as_deref() {
        // The destination's last error, for its dashboard page.
        parts.push((
            "INSERT INTO forward_destinations (destination, last_error, last_status_code, last_error_at)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (destination) DO UPDATE SET last_error = excluded.last_error,
                 last_status_code = excluded.last_status_code, last_error_at = excluded.last_error_at",
            vec![
                claimed.destination.as_str().into(),
                error.into(),
                result.status_code.map(i32::from).into(),
                now.into(),
            ],
        ));
    }
    if backend == DatabaseBackend::Postgres {
        // One statement in autocommit, atomic as the transaction was: one round trip.
        let (mut sql, mut values) = (String::from("WITH "), Vec::new());
        for (n, (part, part_values)) in parts.into_iter().enumerate() {
            if n > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("part{n} AS ({})", shifted(part, values.len())));
            values.extend(part_values);
        }
        sql.push_str(" SELECT 1");
        db.writer
            .execute_raw(statement(backend, &sql, values))
            .await?;
        return Ok(after);
    }
    let txn = db.writer.begin().await?;
    for (part, values) in parts {
        txn.execute_raw(statement(backend, part, values)).await?;
    }
    txn.commit().await?;
    Ok(after)
}

/// `sql` with every parameter `$n` renumbered `$(n + by)`.
fn shifted(sql: &str, by: usize) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        match rest[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + by).to_string()),
            Err(_) => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// Gives up the claims of `worker` on rows it did not finish (an attempt abandoned at shutdown):
/// they are due again at once, for another process or the next start.
pub async fn release_claims(db: &Db, worker: &str) -> Result<u64, DbErr> {
    let done = db
        .writer
        .execute_raw(statement(
            db.backend(),
            "UPDATE forward_deliveries SET lease_until = NULL, leased_by = NULL
             WHERE leased_by = $1 AND status = 'pending'",
            vec![worker.into()],
        ))
        .await?;
    Ok(done.rows_affected())
}

/// Each destination's pending deliveries: how many, and when the oldest was created.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct Backlog {
    pub destination: String,
    pub pending: i64,
    pub oldest: Option<DateTime<Utc>>,
}

/// The backlog of every destination with pending deliveries (the dashboard's pool: a scrape
/// never takes a connection deliveries need).
pub async fn backlog(db: &Db) -> Result<Vec<Backlog>, DbErr> {
    let rows = db
        .conn
        .query_all_raw(Statement::from_string(
            db.backend(),
            "SELECT destination, count(*) AS pending, min(created_at) AS oldest
             FROM forward_deliveries WHERE status = 'pending' GROUP BY destination",
        ))
        .await?;
    rows.iter()
        .map(|row| Backlog::from_query_result(row, ""))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(revision: Option<i64>, payload: &str) -> Claimed {
        Claimed {
            id: 7,
            destination: "orders-app".into(),
            source: "shop".into(),
            event_id: "event-\"3\"".into(),
            object_id: revision.map(|_| "order-1".into()),
            revision,
            event_type: Some("order.paid".into()),
            received_at: DateTime::parse_from_rfc3339("2026-12-01T10:00:00.123Z")
                .expect("time")
                .with_timezone(&Utc),
            payload: payload.into(),
            attempts: 0,
            schedule_base: 0,
        }
    }

    #[test]
    fn a_retry_after_is_seconds_or_a_date_and_any_wait_saturates() {
        let now = DateTime::parse_from_rfc3339("2015-10-21T07:27:00Z")
            .expect("time")
            .with_timezone(&Utc);
        assert_eq!(retry_after_secs(" 120 ", now), Some(120));
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(60)
        );
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(0)
        );
        assert_eq!(retry_after_secs("soon", now), None);
        assert_eq!(retry_after_secs("-5", now), None);
        assert_eq!(retry_at(now, u64::MAX), DateTime::<Utc>::MAX_UTC);
        assert_eq!(retry_at(now, 60), now + Duration::seconds(60));
    }

    #[test]
    fn shifted_renumbers_every_parameter_and_nothing_else() {
        assert_eq!(
            shifted("VALUES ($1, $2, $10) -- '$' costs $ 3", 7),
            "VALUES ($8, $9, $17) -- '$' costs $ 3"
        );
        assert_eq!(shifted("SELECT 1", 3), "SELECT 1");
    }

    #[test]
    fn a_snapshot_sources_request_carries_the_revision_and_the_snapshot_as_received() {
        assert_eq!(
            request_body(&claimed(
                Some(3),
                r#"{"total": 12345678901234567890, "rate": 0.1}"#
            )),
            r#"{"type":"object.updated","source":"shop","event_id":"event-\"3\"","object_id":"order-1","revision":3,"snapshot":{"total": 12345678901234567890, "rate": 0.1},"event_type":"order.paid","received_at":"2026-12-01T10:00:00.123Z"}"#
        );
    }

    #[test]
    fn a_dedup_sources_request_carries_the_payload_as_received_and_no_revision() {
        let body = request_body(&claimed(None, r#"{"id": "evt_1", "n": 1.50}"#));
        assert_eq!(
            body,
            r#"{"type":"event.accepted","source":"shop","event_id":"event-\"3\"","object_id":null,"payload":{"id": "evt_1", "n": 1.50},"event_type":"order.paid","received_at":"2026-12-01T10:00:00.123Z"}"#
        );
        let parsed: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert!(parsed.get("revision").is_none() && parsed.get("snapshot").is_none());
    }
}
