//! The database handle: PostgreSQL in production, an embedded SQLite file by default.
//!
//! Pools are built with sqlx directly so every setting that decides behaviour under load is
//! explicit here, then handed to SeaORM.

use sea_orm::sqlx::postgres::PgPoolOptions;
use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sea_orm::{
    DatabaseBackend, DatabaseConnection, DbErr, SqlxPostgresConnector, SqlxSqliteConnector,
};
use std::str::FromStr;
use std::time::Duration;

/// The database used when `DATABASE_URL` is unset.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://hookbox.db?mode=rwc";

/// How long a request waits for a connection before it answers 503: a bounded wait, never a hang.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a SQLite writer waits for the write lock before giving up.
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct Db {
    /// Every query but the ingest transaction.
    pub conn: DatabaseConnection,
    /// Where ingest transactions run (`ingest::begin`). On PostgreSQL the same pool. SQLite lets
    /// one writer in at a time, so there it is a pool of one connection: deliveries queue for it
    /// in the pool, woken in turn, instead of polling SQLite's busy handler (which sleeps 1, 2,
    /// 5 … 100 ms; `.ci/bench-sqlite` measured twice the p99 and nine times the fsyncs with eight
    /// writers). The dashboard's reads keep their own pool beside it (WAL).
    pub writer: DatabaseConnection,
}

impl Db {
    pub fn backend(&self) -> DatabaseBackend {
        self.conn.get_database_backend()
    }

    /// `DATABASE_URL`, else the embedded default.
    pub fn url_from_env() -> String {
        std::env::var("DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| DEFAULT_DATABASE_URL.into())
    }

    pub async fn connect(url: &str) -> Result<Db, DbErr> {
        let db = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // The ingest transaction reasons about READ COMMITTED (each statement sees what
            // committed before it; conflicting writers wait on the row lock). Asking for it in
            // the startup packet makes every connection's default READ COMMITTED whatever the
            // server or database default says, at no cost per transaction.
            let options = sea_orm::sqlx::postgres::PgConnectOptions::from_str(url)
                .map_err(|e| DbErr::Custom(e.to_string()))?
                .options([("default_transaction_isolation", "read committed")]);
            let pool = PgPoolOptions::new()
                .max_connections(pool_size(16))
                .min_connections(0)
                .acquire_timeout(ACQUIRE_TIMEOUT)
                .connect_with(options)
                .await
                .map_err(|e| DbErr::Conn(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(e))))?;
            let conn = SqlxPostgresConnector::from_sqlx_postgres_pool(pool);
            Db {
                writer: conn.clone(),
                conn,
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
            let pool = |size: u32| {
                SqlitePoolOptions::new()
                    .max_connections(size)
                    .acquire_timeout(SQLITE_BUSY_TIMEOUT + ACQUIRE_TIMEOUT)
                    .connect_with(options.clone())
            };
            let sqlx_err = |e| DbErr::Conn(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(e)));
            let conn = pool(pool_size(8)).await.map_err(sqlx_err)?;
            let writer = pool(1).await.map_err(sqlx_err)?;
            Db {
                conn: SqlxSqliteConnector::from_sqlx_sqlite_pool(conn),
                writer: SqlxSqliteConnector::from_sqlx_sqlite_pool(writer),
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

/// `HOOKBOX_DB_POOL_SIZE`, else the backend's default.
fn pool_size(default: u32) -> u32 {
    std::env::var("HOOKBOX_DB_POOL_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}
