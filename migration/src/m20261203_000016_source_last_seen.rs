//! The sources page: when each source last sent a delivery, how many it sent in the last 24
//! hours, and its silence at the times the silent-source rule samples (`app::db::sources`).
//!
//! `ix_webhook_events_source_received` holds the deliveries a sender made (replays, which an
//! operator makes, are left out, as the silence metric leaves them out), by source and time:
//! each of those reads is one index seek or one range of a source's own rows, whatever the
//! archive's size. Without it, finding a silent source's last delivery read the archive back
//! from now to that delivery. Ingest maintains one index more per archive row.

use sea_orm_migration::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000016_source_last_seen"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE INDEX ix_webhook_events_source_received
                 ON webhook_events (source, received_at DESC) WHERE replay_of IS NULL",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("DROP INDEX IF EXISTS ix_webhook_events_source_received")
            .await?;
        Ok(())
    }
}
