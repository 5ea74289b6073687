//! The database handle: PostgreSQL in production, an embedded SQLite file by default.
//!
//! Pools are built with sqlx directly so every setting that decides behaviour under load is
//! explicit here, then handed to SeaORM.

pub mod audit;
pub mod batches;
pub mod conditions;
pub mod contains;
pub mod days;
pub mod destinations;
pub mod dialect;
pub mod events;
pub mod export;
pub mod filter;
pub mod handshakes;
pub mod notifications;
pub mod objects;
pub mod open_failures;
pub mod overview;
pub mod problems;
pub mod rejected;
pub mod routes;
pub mod search_bounds;
pub mod sign_in_flows;
pub mod sources;
pub mod support_search;
pub mod users;
pub mod verify_runs;
pub mod warm;

use sea_orm::sqlx::postgres::PgPoolOptions;
use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sea_orm::{
    DatabaseBackend, DatabaseConnection, DbErr, SqlxPostgresConnector, SqlxSqliteConnector,
};
use std::str::FromStr;
use std::time::Duration;

pub use crate::config::{DEFAULT_DATABASE_URL, Pools};

/// How long a request waits for a connection before it answers 503: a bounded wait, never a hang.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a SQLite writer waits for the write lock before giving up.
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one statement of the dashboard (a page, a sign-in) may run on PostgreSQL.
pub const DASHBOARD_STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a dashboard statement waits for a lock on PostgreSQL.
pub const DASHBOARD_LOCK_TIMEOUT: Duration = Duration::from_secs(2);

/// SQLite: dashboard writes of this process waiting for or holding the single writer connection
/// at once, at most ([`Db::dashboard_writer`]): a delivery queued for the writer waits behind at
/// most this many short dashboard writes, however many sign-ins arrive.
pub const DASHBOARD_WRITES: usize = 2;

fn dashboard_write_slots() -> &'static tokio::sync::Semaphore {
    static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(DASHBOARD_WRITES);
    &SLOTS
}

/// SQLite: the dashboard writes of this process past [`Db::dashboard_writer`]'s bound, that is
/// waiting for the writer connection or writing on it (at most [`DASHBOARD_WRITES`]).
pub fn dashboard_writes_in_flight() -> usize {
    DASHBOARD_WRITES - dashboard_write_slots().available_permits()
}

/// The connection of one dashboard write ([`Db::dashboard_writer`]): dereferences to it, and on
/// SQLite holds the write's place among [`DASHBOARD_WRITES`] until dropped.
pub struct DashboardWriter<'a> {
    conn: &'a DatabaseConnection,
    _slot: Option<tokio::sync::SemaphorePermit<'static>>,
}

impl std::ops::Deref for DashboardWriter<'_> {
    type Target = DatabaseConnection;

    fn deref(&self) -> &DatabaseConnection {
        self.conn
    }
}

#[derive(Clone, Debug)]
pub struct Db {
    /// The dashboard's pool: pages, server functions, sign-in, the audit log. On PostgreSQL a
    /// pool of its own (`HOOKBOX_DASHBOARD_POOL_SIZE`, 4) whose statements stop after
    /// [`DASHBOARD_STATEMENT_TIMEOUT`] and whose lock waits after [`DASHBOARD_LOCK_TIMEOUT`], so
    /// a flood of sign-ins or heavy pages can neither take the connections deliveries need nor
    /// hold locks they wait for.
    pub dashboard: DatabaseConnection,
    /// Where ingest transactions run (`ingest::begin`), and replays, maintenance and migrations:
    /// `HOOKBOX_DB_POOL_SIZE` connections (16) on PostgreSQL. SQLite lets one writer in at a
    /// time, so there it is a pool of one connection: deliveries queue for it in the pool, woken
    /// in turn, instead of polling SQLite's busy handler (which sleeps 1, 2, 5 … 100 ms;
    /// `.ci/bench-sqlite` measured twice the p99 and nine times the fsyncs with eight writers).
    /// The dashboard's reads keep their own pool beside it (WAL).
    pub writer: DatabaseConnection,
    /// PostgreSQL: writer connections the deliveries park between them (`warm`), a quarter of
    /// the pool always left to the rest.
    pub warm: Option<std::sync::Arc<warm::Warm>>,
}

/// What knows which database a statement is for.
pub trait Backend {
    fn database_backend(&self) -> DatabaseBackend;
}

impl Backend for DatabaseBackend {
    fn database_backend(&self) -> DatabaseBackend {
        *self
    }
}

impl Backend for Db {
    fn database_backend(&self) -> DatabaseBackend {
        self.backend()
    }
}

impl Backend for DatabaseConnection {
    fn database_backend(&self) -> DatabaseBackend {
        self.get_database_backend()
    }
}

impl Backend for dialect::Dialect {
    fn database_backend(&self) -> DatabaseBackend {
        self.backend()
    }
}

impl<T: Backend + ?Sized> Backend for &T {
    fn database_backend(&self) -> DatabaseBackend {
        (**self).database_backend()
    }
}

/// A hand-written statement with positional parameters (`$1`, `$2`, … on both databases) for
/// `on`'s database: the one helper that makes one. Statements with named parameters are
/// [`dialect::Named`]'s.
pub fn statement(
    on: impl Backend,
    sql: impl Into<String>,
    values: Vec<sea_orm::Value>,
) -> sea_orm::Statement {
    sea_orm::Statement::from_sql_and_values(on.database_backend(), sql, values)
}

impl Db {
    pub fn backend(&self) -> DatabaseBackend {
        self.dashboard.get_database_backend()
    }

    /// Where a dashboard write runs (sign-in records, sessions, audit rows, user management),
    /// for as long as the returned guard lives. PostgreSQL: the dashboard's pool. SQLite: the
    /// single writer connection, so the write queues in the pool beside deliveries instead of
    /// taking SQLite's write lock from the read pool (which polls for the lock on a path the
    /// writer does not order); at most [`DASHBOARD_WRITES`] dashboard writes of the process wait
    /// for or hold it at once, the others wait here, before any delivery's turn, at most
    /// [`ACQUIRE_TIMEOUT`] (then a timeout error: 503).
    pub async fn dashboard_writer(&self) -> Result<DashboardWriter<'_>, DbErr> {
        // A difference of the pools, not of SQL (`dialect`): which connection, not which words.
        if self.backend() == DatabaseBackend::Postgres {
            return Ok(DashboardWriter {
                conn: &self.dashboard,
                _slot: None,
            });
        }
        let slot = tokio::time::timeout(ACQUIRE_TIMEOUT, dashboard_write_slots().acquire())
            .await
            .map_err(|_| DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout))?
            .map_err(|_| DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::ConnectionClosed))?;
        Ok(DashboardWriter {
            conn: &self.writer,
            _slot: Some(slot),
        })
    }

    /// Where long maintenance statements run (purge, verify): without the dashboard's
    /// statement timeout on PostgreSQL; on SQLite the read pool, so a long check never holds
    /// the single writer connection.
    pub fn maintenance(&self) -> &DatabaseConnection {
        // A difference of the pools, not of SQL (`dialect`).
        match self.backend() {
            DatabaseBackend::Postgres => &self.writer,
            _ => &self.dashboard,
        }
    }

    /// Pools of the default sizes.
    pub async fn connect(url: &str) -> Result<Db, DbErr> {
        Db::connect_with(url, Pools::default()).await
    }

    /// Pools of the given sizes (`HOOKBOX_DB_POOL_SIZE`, `HOOKBOX_DASHBOARD_POOL_SIZE`).
    pub async fn connect_with(url: &str, pools: Pools) -> Result<Db, DbErr> {
        let db = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // The ingest transaction reasons about READ COMMITTED (each statement sees what
            // committed before it; conflicting writers wait on the row lock). Asking for it in
            // the startup packet makes every connection's default READ COMMITTED whatever the
            // server or database default says, at no cost per transaction.
            let options = sea_orm::sqlx::postgres::PgConnectOptions::from_str(url)
                .map_err(|e| DbErr::Custom(e.to_string()))?
                .options([("default_transaction_isolation", "read committed")]);
            let dashboard_options = options.clone().options([
                (
                    "statement_timeout",
                    format!("{}ms", DASHBOARD_STATEMENT_TIMEOUT.as_millis()),
                ),
                (
                    "lock_timeout",
                    format!("{}ms", DASHBOARD_LOCK_TIMEOUT.as_millis()),
                ),
            ]);
            let sqlx_err = |e| DbErr::Conn(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(e)));
            let pool = |size: u32| {
                PgPoolOptions::new()
                    .max_connections(size)
                    .min_connections(0)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
            };
            let size = pools.ingest.unwrap_or(16);
            let writer = pool(size).connect_with(options).await.map_err(sqlx_err)?;
            let warm = warm::Warm::start(writer.clone(), (size - size / 4) as usize);

            let conn = pool(pools.dashboard.unwrap_or(4))
                .connect_with(dashboard_options)
                .await
                .map_err(sqlx_err)?;
            Db {
                writer: SqlxPostgresConnector::from_sqlx_postgres_pool(writer),
                dashboard: SqlxPostgresConnector::from_sqlx_postgres_pool(conn),
                warm: Some(warm),
            }
        } else if url.starts_with("sqlite:") {
            // WAL lets readers run beside the writer; the busy timeout makes concurrent writers
            // queue for the lock instead of failing with "database is locked". Every ingest
            // transaction writes in its first statement, so it takes the write lock at its start.
            let options = SqliteConnectOptions::from_str(url)
                .map_err(|e| DbErr::Custom(e.to_string()))?
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true);
            // No ping before a connection is handed out: a SQLite connection is a file handle
            // that cannot go stale as a network one can, and the ping is a round trip to the
            // connection's thread on every delivery (sqlx still pings it on the way back).
            let pool = |size: u32| {
                SqlitePoolOptions::new()
                    .max_connections(size)
                    .test_before_acquire(false)
                    .acquire_timeout(SQLITE_BUSY_TIMEOUT + ACQUIRE_TIMEOUT)
                    .connect_with(options.clone())
            };
            let sqlx_err = |e| DbErr::Conn(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(e)));
            let conn = pool(pools.ingest.unwrap_or(8)).await.map_err(sqlx_err)?;
            let writer = pool(1).await.map_err(sqlx_err)?;
            Db {
                dashboard: SqlxSqliteConnector::from_sqlx_sqlite_pool(conn),
                writer: SqlxSqliteConnector::from_sqlx_sqlite_pool(writer),
                warm: None,
            }
        } else {
            return Err(DbErr::Custom(format!(
                "DATABASE_URL must start with postgres:// or sqlite:, not {:?}",
                url.split(':').next().unwrap_or_default()
            )));
        };
        Ok(db)
    }
}
