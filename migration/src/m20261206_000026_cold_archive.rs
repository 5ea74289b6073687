//! The cold archive (`app::maintenance::cold`):
//!
//! - `cold_archive_horizons`: per source, the time before which every archive row is written to
//!   the cold archive (the purge and body expiry stop there), and the lease of the process
//!   writing it (`lease_until`), so one process at a time writes a source.
//! - `webhook_events.kept_until`: set on a row `hookbox archive restore` put back; the purge and
//!   body expiry leave it until then. A partial index: only restored rows have an entry, so
//!   ingest writes none.
//! - `cold_archive_state`: one row, the last time a run wrote the cold archive, since when it
//!   has kept failing and why (the overview shows it; several processes, one database).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261206_000026_cold_archive"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let time = match manager.get_database_backend() {
            DatabaseBackend::Postgres => "timestamptz",
            DatabaseBackend::Sqlite => "TEXT",
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        for statement in [
            format!("ALTER TABLE webhook_events ADD COLUMN kept_until {time}"),
            "CREATE INDEX ix_webhook_events_kept_until ON webhook_events (kept_until)
                 WHERE kept_until IS NOT NULL"
                .to_string(),
            format!(
                "CREATE TABLE cold_archive_state (
                     id INTEGER NOT NULL CONSTRAINT pk_cold_archive_state PRIMARY KEY
                         CONSTRAINT ck_cold_archive_state_one CHECK (id = 1),
                     last_written_at {time},
                     failing_since {time},
                     last_error TEXT
                 )"
            ),
            format!(
                "CREATE TABLE cold_archive_horizons (
                     source TEXT NOT NULL CONSTRAINT pk_cold_archive_horizons PRIMARY KEY,
                     through {time} NOT NULL,
                     lease_until {time} NOT NULL
                 )"
            ),
        ] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "DROP TABLE IF EXISTS cold_archive_horizons",
            "DROP TABLE IF EXISTS cold_archive_state",
            "DROP INDEX IF EXISTS ix_webhook_events_kept_until",
            "ALTER TABLE webhook_events DROP COLUMN kept_until",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
