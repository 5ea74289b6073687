//! Indexes for the dashboard over a large archive (the dashboard benchmark,
//! `.ci/bench-dashboard`, on 1,000,000 archive rows over 90 days).
//!
//! - `ix_webhook_events_received_counts` replaces `ix_webhook_events_received` (received_at
//!   DESC, id DESC): the same keys, which still order the archive's pages, plus `source` and
//!   `status`, so the overview's live counts (the days not yet rolled up, see migration
//!   m20261130_000005) are an index-only range scan. With only the old index PostgreSQL fetched
//!   every counted row from the heap. SQLite has no `INCLUDE`: there they are trailing key
//!   columns, which covers the same queries.
//! - `ix_webhook_events_object_received` replaces `ix_webhook_events_object` (object_id, source),
//!   which only the archive search used: a search by object id walks it newest first and stops
//!   after a page, where the old one made PostgreSQL fetch and sort every delivery of the object
//!   (10,000 heap rows for a busy one).
//!
//! The number of indexes ingest maintains stays the same.

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
                "CREATE INDEX ix_webhook_events_received_counts ON webhook_events (received_at DESC, id DESC) INCLUDE (source, status)"
            }
            DatabaseBackend::Sqlite => {
                "CREATE INDEX ix_webhook_events_received_counts ON webhook_events (received_at DESC, id DESC, source, status)"
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
            "DROP INDEX ix_webhook_events_received",
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
            "CREATE INDEX IF NOT EXISTS ix_webhook_events_received ON webhook_events (received_at DESC, id DESC)",
            "DROP INDEX IF EXISTS ix_webhook_events_object_received",
            "DROP INDEX IF EXISTS ix_webhook_events_received_counts",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
