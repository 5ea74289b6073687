//! Retention per source: each source's archive rows are kept for its own `retention_days`, so
//! the feed's purged place is kept per source.
//!
//! - `feed_source_horizons`: per source, the greatest (feed_tx, id) the purge deleted of its
//!   rows; a reader of that source with a cursor before it asks for rows that are gone (410).
//!   `feed_horizon`'s one row, written before, still counts for every source.
//! - `ix_webhook_events_body_of`: the rows referring to another's identical body (`body_of`,
//!   archived duplicates only), which a purge batch hands the bodies it deletes over to.

use sea_orm_migration::prelude::*;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261206_000024_retention_per_source"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "CREATE TABLE feed_source_horizons (
                source TEXT NOT NULL,
                feed_tx BIGINT NOT NULL,
                id BIGINT NOT NULL,
                CONSTRAINT pk_feed_source_horizons PRIMARY KEY (source)
            )",
            "CREATE INDEX ix_webhook_events_body_of ON webhook_events (body_of)
                WHERE body_of IS NOT NULL",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "DROP INDEX IF EXISTS ix_webhook_events_body_of",
            "DROP TABLE feed_source_horizons",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
