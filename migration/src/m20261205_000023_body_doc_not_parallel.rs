//! `hookbox_body_doc` and `hookbox_body_json` (the body searches' expressions on PostgreSQL) catch
//! a body `jsonb` cannot hold in an `EXCEPTION` block, which is a subtransaction, and PostgreSQL
//! starts none during a parallel query: a plan that scanned the archive in parallel (an export's
//! batch of 1,000 places over a large archive) failed with "cannot start subtransactions during a
//! parallel operation". Marked `PARALLEL UNSAFE`, a statement that calls them is never planned in
//! parallel. The index on the expression is unchanged (the functions are still `IMMUTABLE`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261205_000023_body_doc_not_parallel"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        set(manager, "UNSAFE").await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        set(manager, "SAFE").await
    }
}

async fn set(manager: &SchemaManager<'_>, parallel: &str) -> Result<(), DbErr> {
    if manager.get_database_backend() != DatabaseBackend::Postgres {
        return Ok(());
    }
    let db = manager.get_connection();
    for function in ["hookbox_body_doc(bytea, text)", "hookbox_body_json(bytea)"] {
        db.execute_unprepared(&format!("ALTER FUNCTION {function} PARALLEL {parallel}"))
            .await?;
    }
    Ok(())
}
