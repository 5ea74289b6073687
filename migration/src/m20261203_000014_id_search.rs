//! The top bar's search (`/search`, `app::db::find`) on PostgreSQL: ids by prefix and suffix,
//! whatever their case, and any value inside a body.
//!
//! - Four B-tree indexes on the inbox (one row per accepted event), over the id in lower case and
//!   that string reversed, compared byte by byte (`COLLATE "C"`), so "starts with" is a range of
//!   the first and "ends with" a range of the second:
//!   `ix_webhook_inbox_object_lower` and `ix_webhook_inbox_object_reversed` carry `source` and
//!   `object_id` too, so the distinct objects in a range are read one index descent each (an
//!   object with 10,000 revisions is one step, not 10,000 rows); `ix_webhook_inbox_event_lower`
//!   and `ix_webhook_inbox_event_reversed` are on the event id alone (unique per source).
//!   Each costs every accepted event one more B-tree insert: about 4 µs of database CPU apiece,
//!   16 µs for the four (measured inserting 100,000 inbox rows with and without them), against a
//!   delivery's transaction of a millisecond or more.
//! - The body index of migration m20261201_000009 changes operator class, from `jsonb_path_ops`
//!   (which hashes each value with its path, so it can find a value only at a given path) to the
//!   default `jsonb_ops` (keys and values as entries of their own), which serves both `@>` (the
//!   `match` filter) and `@? '$.** ? (@ == "…")'`, a value anywhere in the body. Still one index:
//!   about 1.7 times the size, and about the same insert cost.
//!
//! SQLite gets no index: its search is a bounded scan of the newest deliveries.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000014_id_search"
    }
}

const UP: &[&str] = &[
    r#"CREATE INDEX ix_webhook_inbox_object_lower ON webhook_inbox ((lower(object_id) COLLATE "C"), source, object_id)"#,
    r#"CREATE INDEX ix_webhook_inbox_object_reversed ON webhook_inbox ((reverse(lower(object_id)) COLLATE "C"), source, object_id)"#,
    r#"CREATE INDEX ix_webhook_inbox_event_lower ON webhook_inbox ((lower(event_id) COLLATE "C"))"#,
    r#"CREATE INDEX ix_webhook_inbox_event_reversed ON webhook_inbox ((reverse(lower(event_id)) COLLATE "C"))"#,
    "DROP INDEX ix_webhook_events_body_json",
    "CREATE INDEX ix_webhook_events_body_json ON webhook_events USING GIN (hookbox_body_json(body))",
];

const DOWN: &[&str] = &[
    "DROP INDEX IF EXISTS ix_webhook_events_body_json",
    "CREATE INDEX ix_webhook_events_body_json ON webhook_events USING GIN (hookbox_body_json(body) jsonb_path_ops)",
    "DROP INDEX IF EXISTS ix_webhook_inbox_event_reversed",
    "DROP INDEX IF EXISTS ix_webhook_inbox_event_lower",
    "DROP INDEX IF EXISTS ix_webhook_inbox_object_reversed",
    "DROP INDEX IF EXISTS ix_webhook_inbox_object_lower",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        run(manager, UP).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        run(manager, DOWN).await
    }
}

async fn run(manager: &SchemaManager<'_>, statements: &[&str]) -> Result<(), DbErr> {
    if manager.get_database_backend() != DatabaseBackend::Postgres {
        return Ok(());
    }
    let db = manager.get_connection();
    for statement in statements {
        db.execute_unprepared(statement).await?;
    }
    Ok(())
}
