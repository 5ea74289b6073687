//! The delivery transaction: claim the event, classify a non-claim, advance the projection,
//! archive, commit. One delivery is one transaction; nothing is answered before it commits. A
//! claimed delivery is one round trip (`single`: one statement on PostgreSQL, one call on
//! SQLite); an unclaimed one is classified in one statement and archived in another
//! ([`record_unclaimed`]), since it writes nothing else.
//!
//! The webhook route and replay both call [`apply_delivery`], so an outcome is decided in one place.

pub mod replay;
mod single;
mod sql;

use crate::db::Db;
use crate::envelope::{Envelope, Invalid, Mode};
use crate::model::{OutcomeKind, Status};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, Statement, TransactionTrait, Value};
use sql::Sql;

/// What became of a delivery: its answer and its archive status (`docs/webhooks.md`, sections 4
/// and 6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// New event; the projection moved to its revision.
    Applied { revision: i64 },
    /// New event, older than the object's current revision.
    Stale {
        revision: i64,
        current_revision: i64,
    },
    /// New event of a dedup source.
    Accepted,
    /// The same event again: recorded, nothing changed.
    Duplicate,
    /// A signed body that an earlier event carried, arriving under another delivery id: schemes
    /// that sign only the body (GitHub, Shopify) leave the id unsigned, so this is a replay of
    /// `original_event_id` (recorded as a duplicate of it), never a new event.
    ReplayedBody { original_event_id: String },
    /// The event id was accepted before with other content.
    ReusedEventId,
    /// Another event id already holds this object revision.
    ReusedRevision { existing_event_id: Option<String> },
    /// The body broke the envelope rules.
    Invalid { reason: String },
}

impl Outcome {
    /// The archive's `outcome` column.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Applied { .. } => OutcomeKind::Applied,
            Outcome::Stale { .. } => OutcomeKind::Stale,
            Outcome::Accepted => OutcomeKind::Accepted,
            Outcome::Duplicate | Outcome::ReplayedBody { .. } => OutcomeKind::Duplicate,
            Outcome::ReusedEventId => OutcomeKind::ReusedEventId,
            Outcome::ReusedRevision { .. } => OutcomeKind::ReusedRevision,
            Outcome::Invalid { .. } => OutcomeKind::Invalid,
        }
    }

    /// The archive's `status` column, from the one mapping (`OutcomeKind::status`).
    pub fn status(&self) -> Status {
        self.kind().status()
    }

    /// The outcome's name, as the archive, the answers and the metrics spell it.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The archive's `error_message` column.
    pub fn error_message(&self) -> Option<String> {
        match self {
            Outcome::ReusedEventId => {
                Some("event id was accepted before with other content".into())
            }
            Outcome::ReusedRevision {
                existing_event_id: Some(id),
            } => Some(format!("object revision is already held by event {id}")),
            Outcome::ReusedRevision {
                existing_event_id: None,
            } => Some("object revision is already held by another event".into()),
            Outcome::ReplayedBody { original_event_id } => Some(format!(
                "the signed body was delivered before as event {original_event_id}: a replay under another delivery id"
            )),
            Outcome::Invalid { reason } => Some(reason.clone()),
            _ => None,
        }
    }
}

/// One delivery as received: what the archive keeps of it, whatever its outcome.
#[derive(Debug, Clone)]
pub struct Received<'a> {
    pub source: &'a str,
    /// Header names and values as a JSON object, credentials already redacted.
    pub headers_json: &'a str,
    pub body: &'a [u8],
    pub received_at: DateTime<Utc>,
    /// The archive row a replay re-runs, and the operator who asked.
    pub replay_of: Option<i64>,
    pub replayed_by: Option<&'a str>,
    /// SHA-256 of the body when the source's scheme signs the body alone (see
    /// `Scheme::signs_body_only`): kept in the inbox, so the same signed body under a new
    /// delivery id is recognised as a replay for as long as the inbox remembers the event.
    pub signed_body_digest: Option<[u8; 32]>,
    /// The destinations an applied or accepted outcome is forwarded to (the source's `forward`):
    /// one `forward_deliveries` row each, in this transaction.
    pub forward_to: &'a [String],
}

/// The SHA-256 of a body, for [`Received::signed_body_digest`].
pub fn body_digest(body: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(body).into()
}

/// The result of a recorded delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub archive_id: i64,
    pub outcome: Outcome,
}

/// Ingests a valid delivery in one READ COMMITTED transaction and commits it.
pub async fn apply_delivery(
    db: &Db,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Recorded, DbErr> {
    let attempt = async {
        // The common outcomes are one round trip (`single`); a delivery it did not claim is
        // classified in the transaction below.
        let claimed = match db.backend() {
            sea_orm::DatabaseBackend::Postgres => match &db.warm {
                Some(warm) => single::apply_postgres(warm, mode, received, envelope).await?,
                None => None,
            },
            _ => {
                let pool = db.writer.get_sqlite_connection_pool();
                single::apply_claimed_sqlite(pool, mode, received, envelope).await?
            }
        };
        if let Some(recorded) = claimed {
            return Ok(recorded);
        }
        if db.backend() != sea_orm::DatabaseBackend::Postgres
            && let Some(recorded) = record_unclaimed(db, mode, received, envelope).await?
        {
            return Ok(recorded);
        }
        let txn = begin(db).await?;
        let recorded = apply_in(&txn, mode, received, envelope).await?;
        txn.commit().await?;
        Ok(recorded)
    };
    match attempt.await {
        Err(e) => match refusal(&e) {
            // The transaction rolled back; the delivery is archived as invalid in a new one, so
            // the sender gets a 422 it will not retry forever and the operator sees why.
            Some(reason) => {
                tracing::warn!(source = received.source, event_id = %envelope.event_id, error = %e, "the database refused a delivery");
                let invalid = Invalid {
                    kind: crate::envelope::InvalidKind::Unacceptable,
                    reason,
                    event_id: Some(envelope.event_id.clone()),
                    object_id: envelope.object_id.clone(),
                    event_type: envelope.event_type.clone(),
                };
                record_invalid(db, received, &invalid).await
            }
            None => Err(e),
        },
        ok => ok,
    }
}

/// Whether a database error is a deterministic refusal of this delivery's data, which a retry
/// would meet again (PostgreSQL classes 22 data exception, 23 integrity constraint violation and
/// 54 program limit exceeded; SQLite's too big, constraint, mismatch and range), and if so the
/// reason to archive. Connection failures, timeouts, serialization failures, deadlocks and
/// everything unknown stay errors: the sender gets a 503 and retries.
pub fn refusal(error: &DbErr) -> Option<String> {
    let (DbErr::Query(sea_orm::RuntimeErr::SqlxError(e))
    | DbErr::Exec(sea_orm::RuntimeErr::SqlxError(e))) = error
    else {
        return None;
    };
    let sea_orm::sqlx::Error::Database(database) = e.as_ref() else {
        return None;
    };
    let code = database.code()?;
    let deterministic =
        match database.try_downcast_ref::<sea_orm::sqlx::postgres::PgDatabaseError>() {
            Some(_) => ["22", "23", "54"]
                .iter()
                .any(|class| code.starts_with(class)),
            // SQLite reports its extended result code; the primary code is its low byte.
            None => code
                .parse::<i64>()
                .is_ok_and(|n| matches!(n & 0xff, 18 | 19 | 20 | 25)),
        };
    deterministic.then(|| format!("the database refused this delivery: {}", database.message()))
}

/// Archives a delivery whose body broke the envelope rules (status `failed`, outcome `invalid`).
pub async fn record_invalid(
    db: &Db,
    received: &Received<'_>,
    invalid: &Invalid,
) -> Result<Recorded, DbErr> {
    record_invalid_in(&db.writer, received, invalid).await
}

/// [`record_invalid`] on a given connection or transaction.
pub async fn record_invalid_in<C: ConnectionTrait>(
    conn: &C,
    received: &Received<'_>,
    invalid: &Invalid,
) -> Result<Recorded, DbErr> {
    let outcome = Outcome::Invalid {
        reason: invalid.reason.clone(),
    };
    let identity = ArchiveIdentity {
        event_id: invalid.event_id.as_deref(),
        object_id: invalid.object_id.as_deref(),
        revision: None,
        event_type: invalid.event_type.as_deref(),
    };
    let archive_id = archive(conn, received, &identity, &outcome).await?;
    Ok(Recorded {
        archive_id,
        outcome,
    })
}

/// Opens the ingest transaction, on the writer pool (see `Db::writer`). On PostgreSQL it is READ
/// COMMITTED because every connection is
/// opened with that default (`Db::connect`), so no `SET TRANSACTION` round trip is spent per
/// delivery; SQLite transactions are serializable.
///
/// While it waits for a pool connection (and the `BEGIN`), the delivery counts in the
/// `hookbox_db_pool_waiting` gauge.
pub async fn begin(db: &Db) -> Result<sea_orm::DatabaseTransaction, DbErr> {
    let _waiting = Waiting::start();
    db.writer.begin().await
}

/// One delivery in `hookbox_db_pool_waiting` for as long as it lives.
struct Waiting;

impl Waiting {
    fn start() -> Waiting {
        metrics::gauge!(POOL_WAITING).increment(1.0);
        Waiting
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        metrics::gauge!(POOL_WAITING).decrement(1.0);
    }
}

/// Deliveries waiting for a database connection to begin their transaction.
pub const POOL_WAITING: &str = "hookbox_db_pool_waiting";

/// The body of the delivery transaction, without the commit (tests hold it open to prove lock order).
pub async fn apply_in<C: ConnectionTrait>(
    txn: &C,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Recorded, DbErr> {
    let sql = Sql::for_backend(txn.get_database_backend());
    let source = received.source;
    let revision = envelope.revision.map(|r| r.get());
    let snapshot = envelope.snapshot.as_ref().map(|s| s.raw.as_str());

    // Claim. No conflict target: a clash on the primary key (a retry, or a reused event id) and a
    // clash on (object, revision) (a reused revision) must both end here as "not claimed".
    let mut claim_values: Vec<Value> = vec![
        source.into(),
        envelope.event_id.as_str().into(),
        envelope.object_id.as_deref().into(),
        revision.into(),
        snapshot.into(),
        received.received_at.into(),
        received.signed_body_digest.map(|d| d.to_vec()).into(),
    ];
    if sql.compares_canonical {
        claim_values.push(envelope.snapshot.as_ref().map(|s| s.canonical()).into());
    }
    let claimed = txn
        .query_one_raw(statement(txn, sql.claim, claim_values))
        .await?
        .is_some();

    let outcome = if !claimed {
        // A separate statement: at READ COMMITTED the claim may have waited for a concurrent
        // transaction whose row its snapshot could not see; this statement's snapshot can.
        met(txn, received, envelope).await?.outcome(mode)
    } else {
        match (mode, envelope.object_id.as_deref(), revision, snapshot) {
            (Mode::Snapshot, Some(object_id), Some(revision), Some(snapshot)) => {
                // The comparison lives in the statement: the row lock taken by ON CONFLICT makes
                // "only a greater revision wins" hold against every concurrent writer.
                let advanced = txn
                    .query_one_raw(statement(
                        txn,
                        sql.advance_projection,
                        vec![
                            source.into(),
                            object_id.into(),
                            revision.into(),
                            snapshot.into(),
                            received.received_at.into(),
                        ],
                    ))
                    .await?
                    .is_some();
                if advanced {
                    Outcome::Applied { revision }
                } else {
                    let current = txn
                        .query_one_raw(statement(
                            txn,
                            sql.current_revision,
                            vec![source.into(), object_id.into()],
                        ))
                        .await?
                        .map(|row| row.try_get::<i64>("", "revision"))
                        .transpose()?
                        .unwrap_or(revision);
                    Outcome::Stale {
                        revision,
                        current_revision: current,
                    }
                }
            }
            _ => Outcome::Accepted,
        }
    };

    let archive_id = archive_outcome(txn, received, envelope, &outcome).await?;
    if matches!(outcome, Outcome::Applied { .. } | Outcome::Accepted) {
        // What the request to the application carries: the snapshot as sent, or a dedup
        // source's whole body.
        let payload = match snapshot {
            Some(snapshot) => snapshot.to_string(),
            None => String::from_utf8_lossy(received.body).into_owned(),
        };
        for destination in received.forward_to {
            txn.execute_raw(statement(
                txn,
                sql.forward,
                vec![
                    destination.as_str().into(),
                    source.into(),
                    envelope.event_id.as_str().into(),
                    envelope.object_id.as_deref().into(),
                    revision.into(),
                    envelope.event_type.as_deref().into(),
                    archive_id.into(),
                    received.received_at.into(),
                    payload.as_str().into(),
                    chrono::Utc::now().into(),
                ],
            ))
            .await?;
        }
    }
    Ok(Recorded {
        archive_id,
        outcome,
    })
}

/// What the inbox holds that a delivery's claim met, read in one statement ([`Sql::classify`]).
struct Met {
    /// The row of the same event id, if any: whether its content is this delivery's.
    same_content: Option<bool>,
    /// The event that carried this signed body (schemes that sign the body alone).
    body_holder: Option<String>,
    /// The event holding this object revision.
    revision_holder: Option<String>,
}

impl Met {
    /// Nothing at all: the row the claim met is gone (purged since).
    fn is_empty(&self) -> bool {
        self.same_content.is_none() && self.body_holder.is_none() && self.revision_holder.is_none()
    }

    /// The outcome of a delivery that was not claimed.
    fn outcome(self, mode: Mode) -> Outcome {
        match self.same_content {
            None => match self.body_holder {
                Some(original_event_id) => Outcome::ReplayedBody { original_event_id },
                None => Outcome::ReusedRevision {
                    existing_event_id: self.revision_holder,
                },
            },
            // Dedup sources promise nothing about content: the event id alone is the identity.
            Some(_) if mode == Mode::Dedup => Outcome::Duplicate,
            Some(true) => Outcome::Duplicate,
            Some(false) => Outcome::ReusedEventId,
        }
    }
}

/// Reads, in one statement (so with one snapshot taken after the claim), what the claim met.
async fn met<C: ConnectionTrait>(
    conn: &C,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Met, DbErr> {
    let sql = Sql::for_backend(conn.get_database_backend());
    let content = envelope.snapshot.as_ref().map(|s| {
        if sql.compares_canonical {
            s.canonical()
        } else {
            s.raw.as_str()
        }
    });
    let row = conn
        .query_one_raw(statement(
            conn,
            sql.classify,
            vec![
                received.source.into(),
                envelope.event_id.as_str().into(),
                envelope.object_id.as_deref().into(),
                envelope.revision.map(|r| r.get()).into(),
                content.into(),
                received.signed_body_digest.map(|d| d.to_vec()).into(),
            ],
        ))
        .await?
        .ok_or(DbErr::RecordNotFound("the classification's row".into()))?;
    Ok(Met {
        same_content: row.try_get("", "same_content")?,
        body_holder: row.try_get("", "body_holder")?,
        revision_holder: row.try_get("", "revision_holder")?,
    })
}

/// On SQLite, a delivery the one-call path did not claim, classified and archived in two autocommit
/// statements (PostgreSQL does the same on its parked connection, `single::apply_postgres`): the classification's snapshot is taken after the claim, and an unclaimed outcome
/// writes nothing but its archive row. `None` when the row the claim met is gone: the caller runs
/// the whole transaction, which claims again.
async fn record_unclaimed(
    db: &Db,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Option<Recorded>, DbErr> {
    let met = met(&db.writer, received, envelope).await?;
    if met.is_empty() {
        return Ok(None);
    }
    let outcome = met.outcome(mode);
    let archive_id = archive_outcome(&db.writer, received, envelope, &outcome).await?;
    Ok(Some(Recorded {
        archive_id,
        outcome,
    }))
}

/// The event id a valid delivery is archived under: a replayed body under the event it replays.
fn archived_event_id<'a>(outcome: &'a Outcome, envelope: &'a Envelope) -> &'a str {
    match outcome {
        Outcome::ReplayedBody { original_event_id } => original_event_id,
        _ => &envelope.event_id,
    }
}

/// The archive row of a valid delivery's outcome.
async fn archive_outcome<C: ConnectionTrait>(
    conn: &C,
    received: &Received<'_>,
    envelope: &Envelope,
    outcome: &Outcome,
) -> Result<i64, DbErr> {
    let identity = ArchiveIdentity {
        event_id: Some(archived_event_id(outcome, envelope)),
        object_id: envelope.object_id.as_deref(),
        revision: envelope.revision.map(|r| r.get()),
        event_type: envelope.event_type.as_deref(),
    };
    archive(conn, received, &identity, outcome).await
}

struct ArchiveIdentity<'a> {
    event_id: Option<&'a str>,
    object_id: Option<&'a str>,
    revision: Option<i64>,
    event_type: Option<&'a str>,
}

async fn archive<C: ConnectionTrait>(
    conn: &C,
    received: &Received<'_>,
    identity: &ArchiveIdentity<'_>,
    outcome: &Outcome,
) -> Result<i64, DbErr> {
    let sql = Sql::for_backend(conn.get_database_backend());
    let row = conn
        .query_one_raw(statement(
            conn,
            sql.archive,
            vec![
                received.source.into(),
                identity.event_id.into(),
                identity.object_id.into(),
                identity.revision.into(),
                identity.event_type.into(),
                outcome.status().as_str().into(),
                outcome.name().into(),
                outcome.error_message().into(),
                received.headers_json.into(),
                Value::Bytes(Some(received.body.to_vec())),
                received.received_at.into(),
                received.replay_of.into(),
                received.replayed_by.into(),
            ],
        ))
        .await?
        .ok_or_else(|| DbErr::RecordNotInserted)?;
    row.try_get::<i64>("", "id")
}

fn statement<C: ConnectionTrait>(conn: &C, sql: &str, values: Vec<Value>) -> Statement {
    Statement::from_sql_and_values(conn.get_database_backend(), sql, values)
}
