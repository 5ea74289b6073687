//! `rejected_requests`: the requests to `/hooks/{source}` refused before ingest (unknown source,
//! failed authentication, over the rate limit, too large, unreadable, too slow), for the
//! dashboard's `/rejected` page. Never a body: its size and SHA-256 only; headers are stored with
//! credentials and signatures redacted.
//!
//! `bucket` is the configured source a row counts against (`(unknown)` for every name that is
//! not configured), so the per-source bound holds whatever names a sender makes up; `source` is
//! the name as requested. The indexes serve the bound (a bucket's newest rows), the age purge and
//! the overview's last 24 hours.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261201_000010_rejected_requests"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let (id, int, time, autoincrement) = match manager.get_database_backend() {
            DatabaseBackend::Postgres => (
                "bigint GENERATED ALWAYS AS IDENTITY",
                "bigint",
                "timestamptz",
                "",
            ),
            DatabaseBackend::Sqlite => ("INTEGER", "INTEGER", "TEXT", " AUTOINCREMENT"),
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        for statement in [
            format!(
                "CREATE TABLE rejected_requests (
                    id {id} NOT NULL CONSTRAINT pk_rejected_requests PRIMARY KEY{autoincrement},
                    received_at {time} NOT NULL,
                    bucket TEXT NOT NULL,
                    source TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    cause TEXT NOT NULL,
                    client_address TEXT NOT NULL,
                    request_id TEXT,
                    headers TEXT NOT NULL,
                    body_bytes {int},
                    body_sha256 TEXT
                )"
            ),
            "CREATE INDEX ix_rejected_requests_bucket ON rejected_requests (bucket, id)".into(),
            "CREATE INDEX ix_rejected_requests_received ON rejected_requests (received_at)".into(),
        ] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("DROP TABLE IF EXISTS rejected_requests")
            .await?;
        Ok(())
    }
}
