//! Problems of forwarding, and why an operator resolved or ignored a cause:
//!
//! - `problem_states.reason`: what the operator said when resolving or ignoring a cause (required
//!   to ignore one); shown in the list of resolved and ignored causes and in the audit entry.
//! - `ix_forward_deliveries_dead`: the dead forward deliveries by destination and time, so the
//!   problems of forwarding (a destination's dead deliveries by answer class) read the dead rows
//!   alone, however many were delivered.

use sea_orm_migration::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261205_000022_problem_reasons"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "ALTER TABLE problem_states ADD COLUMN reason TEXT",
            "CREATE INDEX ix_forward_deliveries_dead
                ON forward_deliveries (destination, next_attempt_at, id) WHERE status = 'dead'",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "DROP INDEX IF EXISTS ix_forward_deliveries_dead",
            "ALTER TABLE problem_states DROP COLUMN reason",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
