//! The common outcomes (applied, stale, accepted) of a delivery on PostgreSQL in one round trip:
//! one data-modifying statement in autocommit mode, so `BEGIN`, the claim, the projection, the
//! archive row, the forward deliveries and `COMMIT` cost the database one parse-bind-execute and
//! hookbox one wake-up ([decision 0007](../../../docs/decisions/0007-one-round-trip-per-delivery.md)).
//!
//! What the multi-statement transaction guaranteed still holds:
//! - The claim runs first (every later part reads its `RETURNING`), so a delivery takes the inbox
//!   row before the projection's row lock: the lock order of the transaction.
//! - The projection's "only a greater revision" comparison is the upsert's own `WHERE`, decided
//!   under the row lock `ON CONFLICT` takes, against the newest committed row.
//! - The statement is atomic: the inbox row, the projection, the archive row and the forward
//!   rows commit together or not at all.
//! - A delivery that is not claimed (a retry, a reused id or revision) writes nothing here and
//!   returns no row; it is then classified by a statement of its own (`Sql::classify`), whose
//!   fresh snapshot sees the row the claim met, and archived (`unclaimed` here on PostgreSQL,
//!   `super::record_unclaimed` on SQLite).
//!
//! One thing the statement's single snapshot cannot see: a revision committed by another delivery
//! after the statement began. The outcome never depends on it (the upsert sees it through the
//! lock), but the stale answer's `current_revision` is read from the snapshot; when that reading
//! cannot be the current revision (absent, or not greater than the delivery's), it is read again
//! in a statement of its own.

use super::sql::Sql;
use super::{Met, Outcome, Received, Recorded, Waiting, archived_event_id};
use crate::db::warm::Warm;
use crate::envelope::{Envelope, Mode};
use sea_orm::sqlx::{self, Row};
use sea_orm::{DbErr, RuntimeErr};
use std::sync::Arc;

/// A snapshot source's delivery: claim, project, archive, forward.
const PROJECTED: &str = "
WITH input AS (SELECT $5::jsonb AS snapshot),
claim AS (
    INSERT INTO webhook_inbox (source, event_id, object_id, revision, snapshot, received_at, signed_body_digest)
    SELECT $1, $2, $3, $4, input.snapshot, $6, $7 FROM input
    ON CONFLICT DO NOTHING
    RETURNING 1
),
advanced AS (
    INSERT INTO object_state AS cur (source, object_id, revision, snapshot, updated_at)
    SELECT $1, $3, $4, input.snapshot, $6 FROM input, claim
    ON CONFLICT (source, object_id) DO UPDATE
       SET revision = EXCLUDED.revision, snapshot = EXCLUDED.snapshot, updated_at = EXCLUDED.updated_at
     WHERE cur.revision < EXCLUDED.revision
    RETURNING 1
),
decided AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM advanced) THEN 'applied' ELSE 'stale' END AS outcome FROM claim
),
archived AS (
    INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status, outcome,
        error_message, headers, body, received_at, replay_of, replayed_by)
    SELECT $1, $2, $3, $4, $8, 'processed', decided.outcome, NULL, $9::jsonb, $10, $6, $11, $12 FROM decided
    RETURNING id, outcome
),
forwarded AS (
    INSERT INTO forward_deliveries (destination, source, event_id, object_id, revision, event_type,
        archive_id, status, attempts, next_attempt_at, created_at, received_at, payload)
    SELECT destination, $1, $2, $3, $4, $8, archived.id, 'pending', 0, $14, $14, $6, COALESCE($5, $15)
    FROM archived, unnest($13::text[]) AS destination
    WHERE archived.outcome = 'applied'
)
SELECT archived.id, archived.outcome,
    (SELECT revision FROM object_state WHERE source = $1 AND object_id = $3) AS current_revision
FROM archived";

/// A dedup source's delivery (or one without an object revision): claim, archive, forward.
const ACCEPTED: &str = "
WITH claim AS (
    INSERT INTO webhook_inbox (source, event_id, object_id, revision, snapshot, received_at, signed_body_digest)
    VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
    ON CONFLICT DO NOTHING
    RETURNING 1
),
archived AS (
    INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status, outcome,
        error_message, headers, body, received_at, replay_of, replayed_by)
    SELECT $1, $2, $3, $4, $8, 'processed', 'accepted', NULL, $9::jsonb, $10, $6, $11, $12 FROM claim
    RETURNING id, outcome
),
forwarded AS (
    INSERT INTO forward_deliveries (destination, source, event_id, object_id, revision, event_type,
        archive_id, status, attempts, next_attempt_at, created_at, received_at, payload)
    SELECT destination, $1, $2, $3, $4, $8, archived.id, 'pending', 0, $14, $14, $6, COALESCE($5, $15)
    FROM archived, unnest($13::text[]) AS destination
)
SELECT archived.id, archived.outcome, NULL::bigint AS current_revision FROM archived";

fn db_err(error: sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(Arc::new(error)))
}

/// Records a delivery on PostgreSQL on one parked connection ([`Warm`]): a claimed one in one
/// statement; an unclaimed one classified by a second statement (its own snapshot, taken after
/// the claim) and archived by a third. `None` when the classification found nothing (the row the
/// claim met was purged since): nothing was written, and the caller runs the transaction.
pub(super) async fn apply_postgres(
    warm: &Warm,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Option<Recorded>, DbErr> {
    let parts = Parts::of(mode, received, envelope);
    let query = sqlx::query(if parts.projected { PROJECTED } else { ACCEPTED })
        .bind(received.source)
        .bind(envelope.event_id.as_str())
        .bind(envelope.object_id.as_deref())
        .bind(parts.revision)
        .bind(parts.snapshot)
        .bind(received.received_at)
        .bind(received.signed_body_digest.as_ref().map(|d| &d[..]))
        .bind(envelope.event_type.as_deref())
        .bind(received.headers_json)
        .bind(received.body)
        .bind(received.replay_of)
        .bind(received.replayed_by)
        .bind(received.forward_to)
        .bind(chrono::Utc::now())
        .bind(parts.body_payload.as_deref());
    let mut lease = {
        let _waiting = Waiting::start();
        warm.lease().await.map_err(db_err)?
    };
    let recorded = match query.fetch_optional(lease.conn()).await.map_err(db_err)? {
        Some(row) => {
            let (archive_id, name, mut current) = returned(&row)?;
            if let (Some("stale"), Some(revision)) = (name.as_deref(), parts.revision)
                && current.is_none_or(|c| c <= revision)
            {
                // A greater revision committed after the statement's snapshot: read it now.
                current = sqlx::query_scalar::<_, i64>(
                    "SELECT revision FROM object_state WHERE source = $1 AND object_id = $2",
                )
                .bind(received.source)
                .bind(envelope.object_id.as_deref())
                .fetch_optional(lease.conn())
                .await
                .map_err(db_err)?;
            }
            Some(recorded(
                archive_id,
                name.as_deref(),
                parts.revision,
                current,
            ))
        }
        None => unclaimed(lease.conn(), mode, received, envelope).await?,
    };
    lease.done();
    Ok(recorded)
}

/// An unclaimed delivery on PostgreSQL: what the claim met, in a statement of its own (autocommit:
/// a snapshot taken after the claim), then its archive row, the only row it writes.
async fn unclaimed(
    conn: &mut sqlx::PgConnection,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Option<Recorded>, DbErr> {
    let sql = Sql::for_backend(sea_orm::DatabaseBackend::Postgres);
    let row = sqlx::query(sql.classify)
        .bind(received.source)
        .bind(envelope.event_id.as_str())
        .bind(envelope.object_id.as_deref())
        .bind(envelope.revision.map(|r| r.get()))
        .bind(envelope.snapshot.as_ref().map(|s| s.raw.as_str()))
        .bind(received.signed_body_digest.as_ref().map(|d| &d[..]))
        .fetch_one(&mut *conn)
        .await
        .map_err(db_err)?;
    let met = Met {
        same_content: row.try_get("same_content").map_err(db_err)?,
        body_holder: row.try_get("body_holder").map_err(db_err)?,
        revision_holder: row.try_get("revision_holder").map_err(db_err)?,
    };
    if met.is_empty() {
        return Ok(None);
    }
    let outcome = met.outcome(mode);
    let archive_id: i64 = sqlx::query_scalar(sql.archive)
        .bind(received.source)
        .bind(archived_event_id(&outcome, envelope))
        .bind(envelope.object_id.as_deref())
        .bind(envelope.revision.map(|r| r.get()))
        .bind(envelope.event_type.as_deref())
        .bind(outcome.status().as_str())
        .bind(outcome.name())
        .bind(outcome.error_message())
        .bind(received.headers_json)
        .bind(received.body)
        .bind(received.received_at)
        .bind(received.replay_of)
        .bind(received.replayed_by)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_err)?;
    Ok(Some(Recorded {
        archive_id,
        outcome,
    }))
}

/// What both backends' statements need of a delivery.
struct Parts<'a> {
    revision: Option<i64>,
    snapshot: Option<&'a str>,
    /// The snapshot's canonical form (SQLite's content identity).
    canonical: Option<&'a str>,
    /// A snapshot source's delivery with its object, revision and snapshot: it is projected.
    projected: bool,
    /// What a forward delivery carries without a snapshot: a dedup source's whole body (only
    /// when there is somewhere to forward it).
    body_payload: Option<std::borrow::Cow<'a, str>>,
}

impl<'a> Parts<'a> {
    fn of(mode: Mode, received: &Received<'a>, envelope: &'a Envelope) -> Parts<'a> {
        let revision = envelope.revision.map(|r| r.get());
        let snapshot = envelope.snapshot.as_ref();
        let projected = mode == Mode::Snapshot
            && envelope.object_id.is_some()
            && revision.is_some()
            && snapshot.is_some();
        let body_payload = (snapshot.is_none() && !received.forward_to.is_empty())
            .then(|| String::from_utf8_lossy(received.body));
        Parts {
            revision,
            snapshot: snapshot.map(|s| s.raw.as_str()),
            canonical: snapshot.map(|s| s.canonical()),
            projected,
            body_payload,
        }
    }
}

/// The archive row's id, its outcome and the projection's revision, as the statement returned
/// them.
fn returned<R>(row: &R) -> Result<(i64, Option<String>, Option<i64>), DbErr>
where
    R: Row,
    for<'c> &'c str: sqlx::ColumnIndex<R>,
    i64: sqlx::Type<R::Database> + for<'r> sqlx::Decode<'r, R::Database>,
    String: sqlx::Type<R::Database> + for<'r> sqlx::Decode<'r, R::Database>,
{
    Ok((
        row.try_get("id").map_err(db_err)?,
        row.try_get("outcome").map_err(db_err)?,
        row.try_get("current_revision").map_err(db_err)?,
    ))
}

/// The outcome the statement decided (`applied`, `stale`, `accepted`).
fn recorded(
    archive_id: i64,
    name: Option<&str>,
    revision: Option<i64>,
    current: Option<i64>,
) -> Recorded {
    let outcome = match (name, revision) {
        (Some("applied"), Some(revision)) => Outcome::Applied { revision },
        (Some("stale"), Some(revision)) => Outcome::Stale {
            revision,
            current_revision: current.unwrap_or(revision),
        },
        _ => Outcome::Accepted,
    };
    Recorded {
        archive_id,
        outcome,
    }
}

/// The SQLite form: one call with every statement of the transaction, so the delivery costs one
/// hand-over to the connection's worker thread instead of one per statement. SQLite has no
/// data-modifying `WITH`; what a later statement needs of an earlier one (claimed, advanced,
/// the archive row's id) goes through a temporary table of the connection's own, filled by
/// `changes()` and `last_insert_rowid()` right after the statement they describe.
const SQLITE_STEPS: &str = "CREATE TEMP TABLE IF NOT EXISTS hookbox_ingest_step (
    k INTEGER PRIMARY KEY, claimed INTEGER NOT NULL, advanced INTEGER NOT NULL, archive_id INTEGER);
BEGIN IMMEDIATE;
INSERT INTO webhook_inbox (source, event_id, object_id, revision, snapshot, snapshot_canonical, received_at, signed_body_digest)
    VALUES ($1, $2, $3, $4, $5, $8, $6, $7)
    ON CONFLICT DO NOTHING;
INSERT OR REPLACE INTO temp.hookbox_ingest_step (k, claimed, advanced, archive_id) VALUES (1, changes(), 0, NULL);";

const SQLITE_PROJECT: &str = "
INSERT INTO object_state AS cur (source, object_id, revision, snapshot, updated_at)
    SELECT $1, $3, $4, $5, $6 FROM temp.hookbox_ingest_step WHERE k = 1 AND claimed = 1
    ON CONFLICT (source, object_id) DO UPDATE
       SET revision = excluded.revision, snapshot = excluded.snapshot, updated_at = excluded.updated_at
     WHERE cur.revision < excluded.revision;
UPDATE temp.hookbox_ingest_step SET advanced = changes() WHERE k = 1 AND claimed = 1;
INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status, outcome,
        error_message, headers, body, received_at, replay_of, replayed_by)
    SELECT $1, $2, $3, $4, $9, 'processed', CASE WHEN advanced = 1 THEN 'applied' ELSE 'stale' END,
        NULL, $10, $11, $6, $12, $13
    FROM temp.hookbox_ingest_step WHERE k = 1 AND claimed = 1
    RETURNING id, outcome, (SELECT revision FROM object_state WHERE source = $1 AND object_id = $3) AS current_revision;";

const SQLITE_ACCEPT: &str = "
INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status, outcome,
        error_message, headers, body, received_at, replay_of, replayed_by)
    SELECT $1, $2, $3, $4, $9, 'processed', 'accepted', NULL, $10, $11, $6, $12, $13
    FROM temp.hookbox_ingest_step WHERE k = 1 AND claimed = 1
    RETURNING id, outcome, NULL AS current_revision;";

const SQLITE_FORWARD: &str = "
UPDATE temp.hookbox_ingest_step SET archive_id = last_insert_rowid() WHERE k = 1 AND claimed = 1;
INSERT INTO forward_deliveries (destination, source, event_id, object_id, revision, event_type,
        archive_id, status, attempts, next_attempt_at, created_at, received_at, payload)
    SELECT d.value, $1, $2, $3, $4, $9, s.archive_id, 'pending', 0, $15, $15, $6, COALESCE($5, $16)
    FROM temp.hookbox_ingest_step AS s, json_each($14) AS d
    WHERE s.k = 1 AND s.claimed = 1 AND (s.advanced = 1 OR $17);
COMMIT;";

/// The writer connection while a delivery's script runs on it. Dropped before the script has
/// answered (the request was cut off: its future is dropped), SQLite's worker stops stepping
/// the script wherever it is, possibly after its `BEGIN IMMEDIATE`: the guard then ends that
/// transaction, queued on the connection behind the script, before the connection serves anyone
/// else, so the next delivery never meets a transaction left open.
struct InScript(Option<sqlx::pool::PoolConnection<sqlx::Sqlite>>);

impl InScript {
    fn conn(&mut self) -> &mut sqlx::SqliteConnection {
        self.0.as_deref_mut().expect("held until answered")
    }

    /// The script answered: the connection, its transaction ended either way.
    fn answered(mut self) -> sqlx::pool::PoolConnection<sqlx::Sqlite> {
        self.0.take().expect("held until answered")
    }
}

impl Drop for InScript {
    fn drop(&mut self) {
        let Some(mut conn) = self.0.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    // An error here is "no transaction is active": the script had finished.
                    let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                });
            }
            // No runtime to roll back on: the connection is closed, not given back.
            Err(_) => conn.close_on_drop(),
        }
    }
}

/// The SQLite statements of a delivery, one string per shape (built once).
fn sqlite_sql(projected: bool) -> &'static str {
    static PROJECTED_SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    static ACCEPTED_SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if projected {
        PROJECTED_SQL.get_or_init(|| format!("{SQLITE_STEPS}{SQLITE_PROJECT}{SQLITE_FORWARD}"))
    } else {
        ACCEPTED_SQL.get_or_init(|| format!("{SQLITE_STEPS}{SQLITE_ACCEPT}{SQLITE_FORWARD}"))
    }
}

/// The claimed path of [`apply_postgres`] on SQLite: the transaction in one call on the writer connection. On an error
/// the transaction is rolled back before the connection goes back to the pool.
pub(super) async fn apply_claimed_sqlite(
    pool: &sqlx::SqlitePool,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Option<Recorded>, DbErr> {
    let parts = Parts::of(mode, received, envelope);
    let destinations =
        serde_json::to_string(received.forward_to).map_err(|e| DbErr::Custom(e.to_string()))?;
    let query = sqlx::query(sqlite_sql(parts.projected))
        .bind(received.source)
        .bind(envelope.event_id.as_str())
        .bind(envelope.object_id.as_deref())
        .bind(parts.revision)
        .bind(parts.snapshot)
        .bind(received.received_at)
        .bind(received.signed_body_digest.as_ref().map(|d| &d[..]))
        .bind(parts.canonical)
        .bind(envelope.event_type.as_deref())
        .bind(received.headers_json)
        .bind(received.body)
        .bind(received.replay_of)
        .bind(received.replayed_by)
        .bind(destinations)
        .bind(chrono::Utc::now())
        .bind(parts.body_payload.as_deref())
        .bind(!parts.projected);
    let mut conn = InScript({
        let _waiting = Waiting::start();
        Some(pool.acquire().await.map_err(db_err)?)
    });
    let answered = query.fetch_all(conn.conn()).await;
    let mut conn = conn.answered();
    let rows = match answered {
        Ok(rows) => rows,
        Err(error) => {
            // Whatever statement failed, the transaction it began must not outlive this call.
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
            return Err(db_err(error));
        }
    };
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    // The transaction is SQLite's single writer: the revision read is the current one.
    let (archive_id, name, current) = returned(row)?;
    Ok(Some(recorded(
        archive_id,
        name.as_deref(),
        parts.revision,
        current,
    )))
}
