//! Failures as problems (docs/decisions/0012-failures-as-problems.md):
//!
//! - `webhook_events.error_class`: a failed delivery's cause without ids, numbers or quoted
//!   values (`app::ingest::problem::error_class`), written by the write path with the row. Rows
//!   archived before it are classified at start-up, in batches, through
//!   `ix_webhook_events_unclassified` (a migration cannot run the Rust function, and SQL could
//!   only approximate it).
//! - `webhook_events.resolved_by`: the replay (an archive id) that resolved a failure: set in
//!   the replay's transaction when it applies, is stale, accepted or a duplicate. No foreign
//!   key: the purge deletes the older row first, and a dangling reference reads as "purged".
//! - `ix_webhook_events_open_failures`: the failures still needing attention as far as the row
//!   tells (not a replay, not resolved), by cause and time, so grouping them reads an index of
//!   open failures only, however large the archive.
//! - `problem_states`: what an operator said of a cause (acknowledged, resolved, ignored), when
//!   and who; no row is an open cause.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000013_problems"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let (int, time) = match manager.get_database_backend() {
            DatabaseBackend::Postgres => ("bigint", "timestamptz"),
            DatabaseBackend::Sqlite => ("INTEGER", "TEXT"),
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        for statement in [
            "ALTER TABLE webhook_events ADD COLUMN error_class TEXT".to_string(),
            format!("ALTER TABLE webhook_events ADD COLUMN resolved_by {int}"),
            "CREATE INDEX ix_webhook_events_open_failures
                ON webhook_events (source, outcome, error_class, received_at, id)
                WHERE status = 'failed' AND replayed_by IS NULL AND resolved_by IS NULL"
                .to_string(),
            "CREATE INDEX ix_webhook_events_unclassified ON webhook_events (id)
                WHERE status = 'failed' AND error_class IS NULL"
                .to_string(),
            format!(
                "CREATE TABLE problem_states (
                    source TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    error_class TEXT NOT NULL,
                    state TEXT NOT NULL,
                    changed_at {time} NOT NULL,
                    changed_by TEXT NOT NULL,
                    CONSTRAINT pk_problem_states PRIMARY KEY (source, outcome, error_class),
                    CONSTRAINT ck_problem_states_state
                        CHECK (state IN ('acknowledged', 'resolved', 'ignored'))
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
            "DROP TABLE IF EXISTS problem_states",
            "DROP INDEX IF EXISTS ix_webhook_events_unclassified",
            "DROP INDEX IF EXISTS ix_webhook_events_open_failures",
            "ALTER TABLE webhook_events DROP COLUMN resolved_by",
            "ALTER TABLE webhook_events DROP COLUMN error_class",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
