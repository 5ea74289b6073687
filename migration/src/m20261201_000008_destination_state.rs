//! What the dashboard needs of forwarding beside the outbox itself:
//! - `forward_destinations`: one row per destination an operator paused or that failed, with who
//!   paused it and its last error (written by the failed attempt, so the page reads it at once);
//! - `forward_deliveries.schedule_base`: the attempt count at which the current retry schedule
//!   began (0; an operator's retry of a dead delivery starts the schedule again from there);
//! - an index on `forward_attempts (started_at)` for the last hour's success rate;
//! - the claim's indexes: a destination's pending rows in the order they come due (without it a
//!   claim reads and sorts the whole backlog, and slows as the backlog grows), and an object's
//!   attempt in flight (a handful of rows, whatever the backlog).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261201_000008_destination_state"
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
            format!(
                "CREATE TABLE forward_destinations (
                    destination TEXT NOT NULL CONSTRAINT pk_forward_destinations PRIMARY KEY,
                    paused_at {time},
                    paused_by TEXT,
                    last_error TEXT,
                    last_status_code INTEGER,
                    last_error_at {time}
                )"
            ),
            "ALTER TABLE forward_deliveries ADD COLUMN schedule_base INTEGER NOT NULL DEFAULT 0"
                .to_string(),
            "CREATE INDEX ix_forward_attempts_started ON forward_attempts (started_at)".to_string(),
            "CREATE INDEX ix_forward_deliveries_due_by_destination
                 ON forward_deliveries (destination, next_attempt_at, id) WHERE status = 'pending'"
                .to_string(),
            "CREATE INDEX ix_forward_deliveries_in_flight
                 ON forward_deliveries (destination, source, object_id)
                 WHERE status = 'pending' AND lease_until IS NOT NULL"
                .to_string(),
        ] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "DROP INDEX IF EXISTS ix_forward_deliveries_in_flight",
            "DROP INDEX IF EXISTS ix_forward_deliveries_due_by_destination",
            "DROP INDEX IF EXISTS ix_forward_attempts_started",
            "ALTER TABLE forward_deliveries DROP COLUMN schedule_base",
            "DROP TABLE IF EXISTS forward_destinations",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
