//! Feed consumers belong to the API token that made them (`docs/feed.md`), and the feed finds a
//! source's latest row by index.
//!
//! - `feed_consumers.owner_token_id`: the `api_tokens.id` of the token that created the
//!   consumer; only it, or an operator's token, uses it. Consumers made before this migration
//!   have none: only operators' tokens use them.
//! - `ix_webhook_events_feed_source` on (source, feed_tx, id): the latest place of a token's
//!   sources, where an empty page of a token limited to some sources moves its reader (one look
//!   per source, whatever the others' traffic).

use sea_orm_migration::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261205_000021_feed_owners"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "ALTER TABLE feed_consumers ADD COLUMN owner_token_id BIGINT",
            "CREATE INDEX ix_feed_consumers_owner ON feed_consumers (owner_token_id)",
            "CREATE INDEX ix_webhook_events_feed_source ON webhook_events (source, feed_tx, id)",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "DROP INDEX IF EXISTS ix_webhook_events_feed_source",
            "DROP INDEX IF EXISTS ix_feed_consumers_owner",
            "ALTER TABLE feed_consumers DROP COLUMN owner_token_id",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
