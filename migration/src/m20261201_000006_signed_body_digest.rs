//! The signed-body digest of inbox rows whose scheme signs the body alone (GitHub, Shopify).
//!
//! Their delivery-id headers are not covered by the signature, so a captured body re-posted under
//! a fresh id would otherwise be a new event. The digest is unique per source: the claim conflicts
//! on it like on the primary key, and ingest records the request as a duplicate of the event that
//! first carried the body. Rows of other schemes, and rows from before this migration, have none.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261201_000006_signed_body_digest"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let bytes = match manager.get_database_backend() {
            DatabaseBackend::Postgres => "bytea",
            DatabaseBackend::Sqlite => "BLOB",
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        db.execute_unprepared(&format!(
            "ALTER TABLE webhook_inbox ADD COLUMN signed_body_digest {bytes}"
        ))
        .await?;
        db.execute_unprepared(
            "CREATE UNIQUE INDEX uq_webhook_inbox_signed_body ON webhook_inbox (source, signed_body_digest)
             WHERE signed_body_digest IS NOT NULL",
        )
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("DROP INDEX IF EXISTS uq_webhook_inbox_signed_body")
            .await?;
        db.execute_unprepared("ALTER TABLE webhook_inbox DROP COLUMN signed_body_digest")
            .await?;
        Ok(())
    }
}
