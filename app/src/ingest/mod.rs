//! The delivery transaction: claim the event, classify a non-claim, advance the projection,
//! archive, forward, commit. One delivery is one transaction; nothing is answered before it
//! commits.
//!
//! - `write`: the statements, the only ones that write the inbox, the projection, the archive
//!   and the forward rows on the ingest path, built once for both databases;
//! - `connection`: where they run (a parked PostgreSQL connection, SQLite's writer, a caller's
//!   transaction) and the one sequence every valid delivery follows ([`connection::record`]);
//! - `outcome`: what became of a delivery, and the table that decides an unclaimed one;
//! - `problem`: a failure's error class, the cause problems are grouped by;
//! - `resolution`: the statement of the write path by which a replay resolves failures.
//!
//! The webhook route ([`apply_delivery`]) and replay ([`apply_in`]) both go through
//! `connection::record`, so an outcome is decided in one place.

mod binds;
mod connection;
mod outcome;
pub mod problem;
pub mod replay;
mod resolution;
mod write;

pub use outcome::Outcome;

/// The one statement a new delivery with nowhere to go runs on PostgreSQL, with its named
/// parameters (`:name`): what `.ci/bench` (whose source forwards nowhere) has pgbench send, the
/// ceiling of hookbox's own statements.
pub fn postgres_delivery_statement() -> String {
    write::postgres_claimed(false)
}

use crate::db::Db;
use crate::envelope::{Envelope, Invalid, Mode};
use binds::ArchiveRow;
use chrono::{DateTime, Utc};
use connection::{On, Step};
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait};

/// One delivery as received: what the archive keeps of it, whatever its outcome.
#[derive(Debug, Clone)]
pub struct Received<'a> {
    pub source: &'a str,
    /// Header names and values as a JSON object, credentials already redacted.
    pub headers_json: &'a str,
    pub body: &'a [u8],
    /// The JSON object a form-encoded body is read as (`envelope::form_document`): archived
    /// beside the raw bytes, so search finds its fields. `None` for every other body.
    pub body_fields: Option<String>,
    pub received_at: DateTime<Utc>,
    /// The archive row a replay re-runs, and the operator who asked.
    pub replay_of: Option<i64>,
    pub replayed_by: Option<&'a str>,
    /// SHA-256 of the body when the source's scheme signs the body alone (see
    /// `Scheme::signs_body_only`): kept in the inbox, so the same signed body under a new
    /// delivery id is recognised as a replay for as long as the inbox remembers the event.
    pub signed_body_digest: Option<[u8; 32]>,
    /// The destinations an applied or accepted outcome is forwarded to (the source's `forward`
    /// and the routes it matches, [`Read::destinations`]): one `forward_deliveries` row each,
    /// in this transaction.
    pub forward_to: &'a [String],
}

/// What a delivery without a snapshot hands on, to a destination (forwarding) and to the pull
/// feed alike: a form body's fields as a JSON object, else the body as received.
pub fn payload_text(body_fields: Option<&str>, body: &[u8]) -> String {
    body_fields.map_or_else(
        || String::from_utf8_lossy(body).into_owned(),
        str::to_string,
    )
}

/// Bodies larger than this are read (a form's fields, the envelope) on a blocking thread: an
/// async worker never spends a large body's time, whatever the body holds.
pub const READ_ON_WORKER_BYTES: usize = 64 * 1024;

/// A delivery's body read once: as a form's fields when it is a form ([`crate::envelope::FormRead::of`]), then
/// through the source's mapping, then by its routes (where a valid delivery goes). Off the async
/// workers when the body is large ([`crate::blocking`]). What ingest and replay both run; the
/// fields are archived, so no reader after them parses the form again.
pub async fn read_delivery<'s>(
    source: &'s crate::config::Source,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Read<'s> {
    fn read<'s>(
        plan: crate::routing::Plan<'s>,
        mapping: &crate::envelope::Mapping,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Read<'s> {
        let form = crate::envelope::FormRead::of(headers, body);
        let parsed = crate::envelope::parse_envelope_as(mapping, headers, body, &form);
        let destinations = match &parsed {
            Ok(envelope) => plan.destinations(&crate::routing::Delivery {
                event_type: envelope.event_type.as_deref(),
                body_fields: form.fields(),
                body,
            }),
            Err(_) => std::borrow::Cow::Borrowed(&[][..]),
        };
        Read {
            form,
            parsed,
            destinations,
        }
    }
    let plan = crate::routing::Plan {
        forward: &source.forward,
        routes: &source.routes,
    };
    if body.len() <= READ_ON_WORKER_BYTES {
        return read(plan, &source.mapping, headers, body);
    }
    let (mapping, headers, body) = (source.mapping.clone(), headers.clone(), body.to_vec());
    let (forward, routes) = (source.forward.clone(), source.routes.clone());
    crate::blocking::run(move || {
        let plan = crate::routing::Plan {
            forward: &forward,
            routes: &routes,
        };
        let read = read(plan, &mapping, &headers, &body);
        Read {
            destinations: std::borrow::Cow::Owned(read.destinations.into_owned()),
            form: read.form,
            parsed: read.parsed,
        }
    })
    .await
    .unwrap_or_else(|| {
        let invalid = Invalid {
            kind: crate::envelope::InvalidKind::Unreadable,
            reason: "the body could not be read".into(),
            event_id: None,
            object_id: None,
            event_type: None,
        };
        Read {
            form: crate::envelope::FormRead::NotForm,
            parsed: Err(invalid),
            destinations: std::borrow::Cow::Borrowed(&[][..]),
        }
    })
}

/// A delivery read by [`read_delivery`].
pub struct Read<'s> {
    pub form: crate::envelope::FormRead,
    pub parsed: Result<Envelope, Invalid>,
    /// Where a valid delivery goes if it applies or is accepted: the source's `forward` and the
    /// destinations of its routes it matches, each once ([`crate::routing::Plan`]).
    pub destinations: std::borrow::Cow<'s, [String]>,
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
        // Which connection a delivery takes is the pools' difference (`Db::writer`, `Db::warm`),
        // not the statements': those are the same on both (`write`).
        let step = match (db.backend(), &db.warm) {
            (sea_orm::DatabaseBackend::Postgres, Some(warm)) => {
                connection::on_postgres(warm, mode, received, envelope).await?
            }
            (sea_orm::DatabaseBackend::Postgres, None) => {
                let txn = begin(db).await?;
                let recorded = apply_in(&txn, mode, received, envelope).await?;
                txn.commit().await?;
                return Ok(recorded);
            }
            _ => {
                let pool = db.writer.get_sqlite_connection_pool();
                connection::on_sqlite(pool, mode, received, envelope).await?
            }
        };
        match step {
            Step::Recorded(recorded) => Ok(recorded),
            // Rare (a reused identity): the autocommit connection is given back first.
            Step::Failing(failing) => {
                let txn = begin(db).await?;
                let recorded = failing.record_in(&txn, received, envelope).await?;
                txn.commit().await?;
                Ok(recorded)
            }
        }
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

/// Archives a delivery whose body broke the envelope rules (status `failed`, outcome `invalid`),
/// with what it changes of its cause's problem, in one transaction.
pub async fn record_invalid(
    db: &Db,
    received: &Received<'_>,
    invalid: &Invalid,
) -> Result<Recorded, DbErr> {
    let txn = begin(db).await?;
    let recorded = record_invalid_in(&txn, received, invalid).await?;
    txn.commit().await?;
    Ok(recorded)
}

/// [`record_invalid`] in a caller's transaction.
pub async fn record_invalid_in<C: ConnectionTrait>(
    txn: &C,
    received: &Received<'_>,
    invalid: &Invalid,
) -> Result<Recorded, DbErr> {
    let outcome = Outcome::Invalid {
        reason: invalid.reason.clone(),
    };
    let row = ArchiveRow::of(
        received,
        &outcome,
        (
            invalid.event_id.as_deref(),
            invalid.object_id.as_deref(),
            None,
            invalid.event_type.as_deref(),
        ),
    );
    let archive_id = connection::failure(txn, &row).await?;
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
pub(crate) struct Waiting;

impl Waiting {
    pub(crate) fn start() -> Waiting {
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

/// The delivery inside a caller's transaction, without the commit: replay, and the tests that
/// hold a delivery's locks open to prove their order. The same statements as [`apply_delivery`].
pub async fn apply_in<C: ConnectionTrait>(
    txn: &C,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Recorded, DbErr> {
    match connection::record(&mut On::Orm(txn), mode, received, envelope).await? {
        Step::Recorded(recorded) => Ok(recorded),
        // `record` archives a failure in the transaction it runs in; kept for the type's sake.
        Step::Failing(failing) => failing.record_in(txn, received, envelope).await,
    }
}
