//! `ix_forward_deliveries_due` (`next_attempt_at` of the pending rows) has had no reader since
//! migration m20261201_000008: the forwarder's claim reads what is due one destination at a time,
//! through `ix_forward_deliveries_due_by_destination` (destination, `next_attempt_at`, id, of the
//! pending rows). It cost every forward row an index entry when written and another at each
//! claim (a new row version while pending). Dropped on both backends.

use sea_orm_migration::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261207_000030_one_index_of_what_is_due"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("DROP INDEX IF EXISTS ix_forward_deliveries_due")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE INDEX IF NOT EXISTS ix_forward_deliveries_due ON forward_deliveries (next_attempt_at)
                     WHERE status = 'pending'",
            )
            .await?;
        Ok(())
    }
}
