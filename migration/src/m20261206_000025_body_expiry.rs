//! Body expiry: past its source's `body_retention_days` an archive row keeps its ids, outcome
//! and error, and its body and headers are dropped (`app::maintenance::expiry`).
//!
//! - `webhook_events.body_sha256` (hex) and `body_bytes`: the digest and size of the body as
//!   received, written when it expires; `body_expired_at`: when it did. On PostgreSQL `body` and
//!   `headers` become nullable and an expired row holds null there; SQLite cannot drop a
//!   column's `NOT NULL` without rebuilding the table, so an expired row holds an empty body and
//!   `{}` there, and readers go by `body_expired_at` on both.
//! - `body_expiry_horizons`: per source (or `*`, every source without a body retention of its
//!   own), the time before which every body past its retention has expired; the next run reads
//!   the archive from there, so its cost is the rows that came due, not the history kept.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261206_000025_body_expiry"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements: &[&str] = match manager.get_database_backend() {
            DatabaseBackend::Postgres => &[
                "ALTER TABLE webhook_events
                     ADD COLUMN body_sha256 text,
                     ADD COLUMN body_bytes bigint,
                     ADD COLUMN body_expired_at timestamptz,
                     ALTER COLUMN body DROP NOT NULL,
                     ALTER COLUMN headers DROP NOT NULL",
                "CREATE TABLE body_expiry_horizons (
                     scope text NOT NULL CONSTRAINT pk_body_expiry_horizons PRIMARY KEY,
                     through timestamptz NOT NULL
                 )",
            ],
            DatabaseBackend::Sqlite => &[
                "ALTER TABLE webhook_events ADD COLUMN body_sha256 TEXT",
                "ALTER TABLE webhook_events ADD COLUMN body_bytes INTEGER",
                "ALTER TABLE webhook_events ADD COLUMN body_expired_at TEXT",
                "CREATE TABLE body_expiry_horizons (
                     scope TEXT NOT NULL CONSTRAINT pk_body_expiry_horizons PRIMARY KEY,
                     through TEXT NOT NULL
                 )",
            ],
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        for statement in statements {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("DROP TABLE IF EXISTS body_expiry_horizons")
            .await?;
        if manager.get_database_backend() == DatabaseBackend::Postgres {
            // Expired bodies and headers come back empty: the columns are NOT NULL again.
            db.execute_unprepared(
                "UPDATE webhook_events SET body = COALESCE(body, ''::bytea),
                     headers = COALESCE(headers, '{}'::jsonb)
                 WHERE body IS NULL OR headers IS NULL",
            )
            .await?;
            db.execute_unprepared(
                "ALTER TABLE webhook_events ALTER COLUMN body SET NOT NULL,
                     ALTER COLUMN headers SET NOT NULL",
            )
            .await?;
        }
        for column in ["body_sha256", "body_bytes", "body_expired_at"] {
            db.execute_unprepared(&format!("ALTER TABLE webhook_events DROP COLUMN {column}"))
                .await?;
        }
        Ok(())
    }
}
