//! Where the write path's statements run ([`On`]): a parked PostgreSQL connection, the SQLite
//! writer connection, or a caller's SeaORM transaction; and [`record`], the one sequence every
//! valid delivery goes through on any of them: the claimed path (one statement on PostgreSQL,
//! one script on SQLite, `write`), else the classification and the archive row (on PostgreSQL
//! one statement for a duplicate of an event received the same day).
//!
//! One thing the claimed statement's single snapshot cannot see on PostgreSQL: a revision
//! committed by another delivery after the statement began. The outcome never depends on it (the
//! upsert sees it through the lock), but the stale answer's `current_revision` is read from the
//! snapshot; when that reading cannot be the current revision (absent, or not greater than the
//! delivery's), it is read again in a statement of its own.

use super::binds::{ArchiveRow, Delivery};
use super::outcome::{Met, Outcome};
use super::write::Statements;
use super::{Received, Recorded, Waiting};
use crate::db::dialect::{Binds, Dialect, Fields, Named, db_err};
use crate::db::warm::Warm;
use crate::envelope::{Envelope, Mode};
use crate::model::OutcomeKind;
use sea_orm::sqlx;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr};

/// A connection the write path's statements run on.
pub(super) enum On<'c, C> {
    /// A parked PostgreSQL connection, in autocommit mode.
    Postgres(&'c mut sqlx::PgConnection),
    /// The SQLite writer connection, in autocommit mode (the script opens its own transaction).
    Sqlite(&'c mut sqlx::SqliteConnection),
    /// A caller's SeaORM transaction: the claimed path runs without a transaction of its own
    /// (`write::Claimed::in_transaction`), and a failure's archive row is written
    /// beside its problem's change.
    Orm(&'c C),
}

/// A returned row, whichever connection answered it.
enum AnyRow {
    Postgres(sqlx::postgres::PgRow),
    Sqlite(sqlx::sqlite::SqliteRow),
    Orm(sea_orm::QueryResult),
}

impl Fields for AnyRow {
    fn int(&self, column: &str) -> Result<Option<i64>, DbErr> {
        match self {
            AnyRow::Postgres(row) => row.int(column),
            AnyRow::Sqlite(row) => row.int(column),
            AnyRow::Orm(row) => row.int(column),
        }
    }
    fn text(&self, column: &str) -> Result<Option<String>, DbErr> {
        match self {
            AnyRow::Postgres(row) => row.text(column),
            AnyRow::Sqlite(row) => row.text(column),
            AnyRow::Orm(row) => row.text(column),
        }
    }
    fn flag(&self, column: &str) -> Result<Option<bool>, DbErr> {
        match self {
            AnyRow::Postgres(row) => row.flag(column),
            AnyRow::Sqlite(row) => row.flag(column),
            AnyRow::Orm(row) => row.flag(column),
        }
    }
}

impl<C: ConnectionTrait> On<'_, C> {
    fn dialect(&self) -> Dialect {
        match self {
            On::Postgres(_) => Dialect::Postgres,
            On::Sqlite(_) => Dialect::Sqlite,
            On::Orm(conn) => Dialect::of(conn.get_database_backend()),
        }
    }

    /// The claimed path's statement for this connection, with the forward rows when `forwards`.
    fn claimed(&self, statements: &'static Statements, forwards: bool) -> &'static Named {
        let claimed = if forwards {
            &statements.forwarding
        } else {
            &statements.unforwarded
        };
        match self {
            On::Orm(_) => &claimed.in_transaction,
            _ => &claimed.own,
        }
    }

    /// Every row `named` answers (a script answers those of all its statements).
    async fn rows(
        &mut self,
        named: &'static Named,
        binds: &impl Binds,
    ) -> Result<Vec<AnyRow>, DbErr> {
        Ok(match self {
            On::Postgres(conn) => named
                .postgres(binds)?
                .fetch_all(&mut **conn)
                .await
                .map_err(db_err)?
                .into_iter()
                .map(AnyRow::Postgres)
                .collect(),
            On::Sqlite(conn) => named
                .sqlite(binds)?
                .fetch_all(&mut **conn)
                .await
                .map_err(db_err)?
                .into_iter()
                .map(AnyRow::Sqlite)
                .collect(),
            On::Orm(conn) => {
                let dialect = Dialect::of(conn.get_database_backend());
                conn.query_all_raw(named.statement(dialect, binds)?)
                    .await?
                    .into_iter()
                    .map(AnyRow::Orm)
                    .collect()
            }
        })
    }

    async fn one(&mut self, named: &'static Named, binds: &impl Binds) -> Result<AnyRow, DbErr> {
        self.rows(named, binds)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                DbErr::RecordNotFound("the write path's statement answered no row".into())
            })
    }
}

/// How many times a delivery claims before it is archived with what its classification read:
/// a claim that meets a row the classification then finds gone (purged in between) claims again.
const CLAIMS: usize = 2;

/// What [`record`] did: the delivery recorded, or, on a connection in autocommit, a failure
/// left for a transaction of the caller's ([`Failing::record_in`]): a failure's archive row and
/// what it changes of its cause's problem are written in one transaction.
pub(super) enum Step {
    Recorded(Recorded),
    Failing(Failing),
}

/// A valid delivery that fails, not yet archived: its outcome, and the day the inbox received
/// its event (see [`ArchiveRow::event_day`]).
pub(super) struct Failing {
    outcome: Outcome,
    event_day: Option<i64>,
}

impl Failing {
    /// Archives the failure in `txn`, with its problem's change ([`failure`]).
    pub(super) async fn record_in<C: ConnectionTrait>(
        self,
        txn: &C,
        received: &Received<'_>,
        envelope: &Envelope,
    ) -> Result<Recorded, DbErr> {
        let row = valid_row(received, envelope, &self.outcome, self.event_day);
        let archive_id = failure(txn, &row).await?;
        Ok(Recorded {
            archive_id,
            outcome: self.outcome,
        })
    }
}

/// The archive row of a valid delivery's unclaimed outcome.
fn valid_row<'a>(
    received: &'a Received<'a>,
    envelope: &'a Envelope,
    outcome: &'a Outcome,
    event_day: Option<i64>,
) -> ArchiveRow<'a> {
    let mut row = ArchiveRow::of(
        received,
        outcome,
        (
            Some(archived_event_id(outcome, envelope)),
            envelope.object_id.as_deref(),
            envelope.revision.map(|r| r.get()),
            envelope.event_type.as_deref(),
        ),
    );
    row.event_day = event_day;
    row
}

/// A failure's archive row and what it changes of its cause's problem
/// (`db::problems::marks::failed`), on `txn`, the failing delivery's transaction: its id.
pub(super) async fn failure<C: ConnectionTrait>(
    txn: &C,
    row: &ArchiveRow<'_>,
) -> Result<i64, DbErr> {
    let archive_id = archive(&mut On::Orm(txn), row).await?;
    let cause = crate::model::Cause {
        source: row.received.source.to_string(),
        outcome: crate::model::Stage::Ingest(row.outcome.kind()),
        class: row.error_class.clone(),
    };
    crate::db::problems::marks::failed(txn, &cause).await?;
    Ok(archive_id)
}

/// Records a valid delivery on `on`: the claimed path, else what the claim met and the archive
/// row of its outcome (a failure's with its problem's change, in `on`'s transaction, or left to
/// the caller's when `on` is in autocommit).
pub(super) async fn record<C: ConnectionTrait>(
    on: &mut On<'_, C>,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Step, DbErr> {
    let dialect = on.dialect();
    let statements = Statements::of(dialect);
    let delivery = Delivery::new(dialect, mode, received, envelope);
    let mut claims = 0;
    loop {
        claims += 1;
        let claimed = on.claimed(statements, !received.forward_to.is_empty());
        if let Some(row) = on.rows(claimed, &delivery).await?.first() {
            let (archive_id, kind, mut current) = super::outcome::claimed_answer(row)?;
            if let (OutcomeKind::Stale, Some(revision)) = (kind, delivery.revision())
                && current.is_none_or(|c| c <= revision)
            {
                // A greater revision committed after the statement's snapshot: read it now.
                current = on
                    .rows(&statements.current_revision, &delivery)
                    .await?
                    .first()
                    .map(|row| row.int("revision"))
                    .transpose()?
                    .flatten();
            }
            let outcome = Outcome::claimed(kind, delivery.revision(), current)?;
            return Ok(Step::Recorded(Recorded {
                archive_id,
                outcome,
            }));
        }
        // A statement of its own: at READ COMMITTED the claim may have waited for a concurrent
        // transaction whose row its snapshot could not see; this statement's snapshot can.
        let classified = on.one(&statements.classify, &delivery).await?;
        let met = Met::of(&classified)?;
        if met.is_empty() && claims < CLAIMS {
            continue;
        }
        let event_day = met.event_day;
        let outcome = met.outcome(mode);
        if let Some(archive_id) = classified.int("archived")? {
            // The statement archived a duplicate: what it read must decide one here too.
            if outcome != Outcome::Duplicate {
                return Err(DbErr::Type(format!(
                    "the classification archived a duplicate of what decides {}",
                    outcome.name()
                )));
            }
            return Ok(Step::Recorded(Recorded {
                archive_id,
                outcome,
            }));
        }
        let failed = outcome.status() == crate::model::Status::Failed;
        let row = valid_row(received, envelope, &outcome, event_day);
        let archive_id = match on {
            On::Orm(txn) if failed => failure(*txn, &row).await?,
            _ if failed => {
                // In autocommit: a failure of a cause it changes nothing of is one statement;
                // otherwise its archive row and its problem's change are the caller's
                // transaction.
                let unchanged = &statements.failure_of_unchanged_problem;
                match on.rows(unchanged, &row).await?.first() {
                    Some(archived) => archived.int("id")?.ok_or(DbErr::RecordNotInserted)?,
                    None => return Ok(Step::Failing(Failing { outcome, event_day })),
                }
            }
            _ => archive(on, &row).await?,
        };
        return Ok(Step::Recorded(Recorded {
            archive_id,
            outcome,
        }));
    }
}

/// One archive row ([`Statements::archive`]): its id.
pub(super) async fn archive<C: ConnectionTrait>(
    on: &mut On<'_, C>,
    row: &ArchiveRow<'_>,
) -> Result<i64, DbErr> {
    let statements = Statements::of(on.dialect());
    on.one(&statements.archive, row)
        .await?
        .int("id")?
        .ok_or(DbErr::RecordNotInserted)
}

/// Marks the failure `replayed` (and the failures up its chain of replays) resolved by the
/// archive row `replay` (`Statements::resolve`): on a caller's transaction, the replay's.
pub(super) async fn resolve<C: ConnectionTrait>(
    on: &mut On<'_, C>,
    replayed: i64,
    replay: i64,
) -> Result<(), DbErr> {
    let statements = Statements::of(on.dialect());
    on.rows(
        &statements.resolve,
        &super::resolution::Resolution { replayed, replay },
    )
    .await?;
    Ok(())
}

/// The event id a valid delivery is archived under: a replayed body under the event it replays.
fn archived_event_id<'a>(outcome: &'a Outcome, envelope: &'a Envelope) -> &'a str {
    match outcome {
        Outcome::ReplayedBody { original_event_id } => original_event_id,
        _ => &envelope.event_id,
    }
}

/// Records a delivery on PostgreSQL on one parked connection ([`Warm`]).
pub(super) async fn on_postgres(
    warm: &Warm,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Step, DbErr> {
    let mut lease = {
        let _waiting = Waiting::start();
        warm.lease().await.map_err(db_err)?
    };
    let recorded = record(
        &mut On::<DatabaseConnection>::Postgres(lease.conn()),
        mode,
        received,
        envelope,
    )
    .await?;
    lease.done();
    Ok(recorded)
}

/// Records a delivery on SQLite's single writer connection. On an error the transaction the
/// script began is rolled back before the connection goes back to the pool.
pub(super) async fn on_sqlite(
    pool: &sqlx::SqlitePool,
    mode: Mode,
    received: &Received<'_>,
    envelope: &Envelope,
) -> Result<Step, DbErr> {
    let mut conn = InScript({
        let _waiting = Waiting::start();
        Some(pool.acquire().await.map_err(db_err)?)
    });
    let recorded = record(
        &mut On::<DatabaseConnection>::Sqlite(conn.conn()),
        mode,
        received,
        envelope,
    )
    .await;
    let mut conn = conn.answered();
    if recorded.is_err() {
        // Whatever statement failed, the transaction it began must not outlive this call.
        let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
    }
    recorded
}

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
