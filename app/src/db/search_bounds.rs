//! Running a payload search (the `match` filter of `/events`, [`super::contains`]) within
//! bounds: a deadline that cancels the statement in the database (PostgreSQL:
//! `statement_timeout`; SQLite: a progress handler, also when the request is dropped), one
//! search per user and a few per process.

use super::Db;
use super::conditions::QueryError;
use sea_orm::sqlx::{self, Arguments, Sqlite, pool::PoolConnection, sqlite::SqliteArguments};
use sea_orm::{
    ConnectionTrait, DatabaseBackend, DbErr, QueryResult, RuntimeErr, Statement, TransactionTrait,
    Value,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

/// The longest a payload search runs: its statement is cancelled in the database then (see
/// [`query_within`]). Never more than half the request's own deadline ([`search_deadline`]),
/// so the search is over well before the request would answer 408.
pub const SEARCH_DEADLINE: Duration = Duration::from_secs(5);
/// Payload searches one user may run at once; the next is a 429.
pub const SEARCHES_PER_USER: usize = 1;
/// Payload searches this process runs at once, all users together; the next is a 429. Half the
/// dashboard's PostgreSQL pool (4), so searches never take the connections pages and sign-ins
/// need.
pub const SEARCHES_AT_ONCE: usize = 2;
/// SQLite virtual-machine steps between two looks at the deadline.
const PROGRESS_STEPS: i32 = 1000;

/// The deadline of a search under a request deadline of `request_timeout`.
pub fn search_deadline(request_timeout: Duration) -> Duration {
    SEARCH_DEADLINE.min(request_timeout / 2)
}

/// Why a payload search gave no page.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Query(#[from] QueryError),
    /// It ran past its deadline and was cancelled.
    #[error(
        "match: the search ran past its deadline of {} ms and was stopped; narrow it (a source, dates, a more specific match)",
        .0.as_millis()
    )]
    TimedOut(Duration),
    /// Too many searches are running (the reason says whose).
    #[error("{0}")]
    Busy(String),
}

impl From<DbErr> for SearchError {
    fn from(e: DbErr) -> Self {
        SearchError::Query(QueryError::Db(e))
    }
}

/// The payload searches running, by user.
static RUNNING: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);

/// A running search's place in the limits; dropping it frees the place.
#[derive(Debug)]
pub struct SearchPermit {
    user: String,
}

/// A place for one more search by `user`, or [`SearchError::Busy`]: at most
/// [`SEARCHES_PER_USER`] per user and [`SEARCHES_AT_ONCE`] in all.
pub fn begin_search(user: &str) -> Result<SearchPermit, SearchError> {
    begin_search_as(user, "match")
}

/// [`begin_search`] for the search a refusal names by its `field` (`match`, the top bar's `q`):
/// every body search shares the same places.
pub fn begin_search_as(user: &str, field: &str) -> Result<SearchPermit, SearchError> {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    let total: usize = running.values().sum();
    let mine = running.get(user).copied().unwrap_or(0);
    if mine >= SEARCHES_PER_USER {
        return Err(SearchError::Busy(format!(
            "{field}: you already have {mine} body search running (at most {SEARCHES_PER_USER} at once); wait for it to finish"
        )));
    }
    if total >= SEARCHES_AT_ONCE {
        return Err(SearchError::Busy(format!(
            "{field}: {total} body searches are running, the most hookbox runs at once; try again shortly"
        )));
    }
    *running.entry(user.to_string()).or_default() += 1;
    Ok(SearchPermit {
        user: user.to_string(),
    })
}

impl Drop for SearchPermit {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = running.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                running.remove(&self.user);
            }
        }
    }
}

/// Payload searches running now, all users together.
pub fn searches_running() -> usize {
    RUNNING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .sum()
}

/// Runs a read-only `statement` on the dashboard's pool, cancelled in the database when
/// `deadline` passes or when the caller is dropped (a request that timed out, a browser gone):
///
/// - PostgreSQL: in a transaction of its own with `SET LOCAL statement_timeout`, so the server
///   itself ends the statement (SQLSTATE 57014) whatever happens to the request;
/// - SQLite: on a connection of the read pool with a progress handler that interrupts the
///   statement at the deadline, or as soon as the caller is dropped; the handler is removed
///   before the connection goes back to the pool.
pub async fn query_within(
    db: &Db,
    statement: Statement,
    deadline: Duration,
) -> Result<Vec<QueryResult>, SearchError> {
    let end = Instant::now() + deadline;
    // Not a spelling (`db::dialect`) but two ways of cancelling: PostgreSQL's own
    // `statement_timeout`; on SQLite a progress handler on the connection.
    match db.backend() {
        DatabaseBackend::Postgres => {
            let txn = db.dashboard.begin().await?;
            txn.execute_unprepared(&format!(
                "SET LOCAL statement_timeout = {}",
                deadline.as_millis().max(1)
            ))
            .await?;
            match txn.query_all_raw(statement).await {
                Ok(rows) => {
                    txn.commit().await?;
                    Ok(rows)
                }
                Err(e) => {
                    // Ended now rather than when the connection is next used.
                    let _ = txn.rollback().await;
                    if database_code(&e).as_deref() == Some("57014") {
                        Err(SearchError::TimedOut(deadline))
                    } else {
                        Err(e.into())
                    }
                }
            }
        }
        _ => {
            let pool = db.dashboard.get_sqlite_connection_pool();
            let conn = pool.acquire().await.map_err(sqlx_err)?;
            let mut run = Interruptible {
                conn: Some(conn),
                stop: Arc::new(AtomicBool::new(false)),
            };
            let result = run.fetch(&statement, end).await;
            run.finish().await;
            match result {
                Ok(rows) => Ok(rows.into_iter().map(QueryResult::from).collect()),
                Err(e) if interrupted(&e) || Instant::now() >= end => {
                    Err(SearchError::TimedOut(deadline))
                }
                Err(e) => Err(sqlx_err(e).into()),
            }
        }
    }
}

/// A SQLite connection with a progress handler installed for one statement.
struct Interruptible {
    conn: Option<PoolConnection<Sqlite>>,
    /// Set when the search is dropped mid-statement: the handler interrupts it.
    stop: Arc<AtomicBool>,
}

impl Interruptible {
    async fn fetch(
        &mut self,
        statement: &Statement,
        end: Instant,
    ) -> Result<Vec<sqlx::sqlite::SqliteRow>, sqlx::Error> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(sqlx::Error::PoolClosed);
        };
        let stop = self.stop.clone();
        conn.lock_handle()
            .await?
            .set_progress_handler(PROGRESS_STEPS, move || {
                !stop.load(Ordering::Relaxed) && Instant::now() < end
            });
        let arguments = sqlite_arguments(statement).map_err(sqlx::Error::Encode)?;
        sqlx::query_with(sqlx::AssertSqlSafe(statement.sql.as_str()), arguments)
            .fetch_all(&mut **conn)
            .await
    }

    /// Removes the handler; the connection goes back to the pool (closed if that failed).
    async fn finish(mut self) {
        if let Some(conn) = self.conn.take() {
            remove_handler(conn).await;
        }
    }
}

impl Drop for Interruptible {
    /// Dropped mid-statement (the request ended): the statement is interrupted at the handler's
    /// next look, and the handler removed once it has stopped.
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.stop.store(true, Ordering::Relaxed);
            tokio::spawn(remove_handler(conn));
        }
    }
}

async fn remove_handler(mut conn: PoolConnection<Sqlite>) {
    let removed = match conn.lock_handle().await {
        Ok(mut handle) => {
            handle.remove_progress_handler();
            true
        }
        Err(_) => false,
    };
    if !removed {
        conn.close_on_drop();
    }
}

/// The statement's values as SQLite arguments, bound as SeaORM binds them.
fn sqlite_arguments(statement: &Statement) -> Result<SqliteArguments, sqlx::error::BoxDynError> {
    let mut arguments = SqliteArguments::default();
    for value in statement.values.iter().flat_map(|v| v.0.iter()) {
        match value.clone() {
            Value::Bool(v) => arguments.add(v)?,
            Value::Int(v) => arguments.add(v)?,
            Value::BigInt(v) => arguments.add(v)?,
            Value::Double(v) => arguments.add(v)?,
            Value::String(v) => arguments.add(v)?,
            Value::ChronoDateTimeUtc(v) => arguments.add(v)?,
            other => return Err(format!("a search cannot bind {other:?}").into()),
        }
    }
    Ok(arguments)
}

/// SQLite's `SQLITE_INTERRUPT`.
fn interrupted(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == "9")
}

/// The SQLSTATE (or SQLite code) of a database error.
fn database_code(e: &DbErr) -> Option<String> {
    let (DbErr::Query(RuntimeErr::SqlxError(e))
    | DbErr::Exec(RuntimeErr::SqlxError(e))
    | DbErr::Conn(RuntimeErr::SqlxError(e))) = e
    else {
        return None;
    };
    e.as_database_error()
        .and_then(|d| d.code())
        .map(|c| c.into_owned())
}

fn sqlx_err(e: sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(Arc::new(e)))
}
