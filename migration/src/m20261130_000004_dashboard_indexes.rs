//! Indexes for the dashboard over a large archive (the dashboard benchmark,
//! `.ci/bench-dashboard`, on 1,000,000 archive rows over 90 days).
//!
//! - `ix_webhook_events_received_counts`: the overview counts the last seven days by source,
//!   status and day, about 78,000 rows of that archive. With only `ix_webhook_events_received`,
//!   PostgreSQL fetched every one of those rows from the heap (and, for the chart, read all of
//!   `ix_webhook_events_status_received`); with `source` and `status` next to `received_at` the
//!   counts are an index-only range scan. SQLite has no `INCLUDE`: there they are key columns,
//!   which covers the same query.
//! - `ix_webhook_events_object_received` replaces `ix_webhook_events_object` (object_id, source),
//!   which only the archive search used: a search by object id walks it newest first and stops
//!   after a page, where the old one made PostgreSQL fetch and sort every delivery of the object
//!   (10,000 heap rows for a busy one). The number of indexes ingest maintains stays the same.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261130_000004_dashboard_indexes"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let counts = match manager.get_database_backend() {
            DatabaseBackend::Postgres => {
                "CREATE INDEX ix_webhook_events_received_counts ON webhook_events (received_at) INCLUDE (source, status)"
            }
            DatabaseBackend::Sqlite => {
                "CREATE INDEX ix_webhook_events_received_counts ON webhook_events (received_at, source, status)"
            }
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        for statement in [
            counts,
            "CREATE INDEX ix_webhook_events_object_received ON webhook_events (object_id, received_at DESC, id DESC)",
            "DROP INDEX ix_webhook_events_object",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "CREATE INDEX IF NOT EXISTS ix_webhook_events_object ON webhook_events (object_id, source)",
            "DROP INDEX IF EXISTS ix_webhook_events_object_received",
            "DROP INDEX IF EXISTS ix_webhook_events_received_counts",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
