//! `webhook_events.body_of`: an archived duplicate whose body is byte for byte the body of an
//! earlier archive row of the same event keeps a reference to that row instead of a second copy
//! (its own `body` is empty). A captured GitHub or Shopify delivery, which signs no timestamp and
//! verifies forever, can be re-posted any number of times: each re-post costs a row of headers,
//! not another copy of the body. Readers take the body through the reference; a row whose
//! original was purged since says so.

use sea_orm_migration::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261202_000012_archive_body_reference"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        // No foreign key: the purge deletes originals before their (newer) duplicates, and a
        // dangling reference is read as "purged", without a cascade on every purged row.
        db.execute_unprepared("ALTER TABLE webhook_events ADD COLUMN body_of bigint")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("ALTER TABLE webhook_events DROP COLUMN body_of")
            .await?;
        Ok(())
    }
}
