//! Payload search on PostgreSQL: `/events?match={…}` finds the deliveries whose JSON body
//! contains the given object (`@>`). The body is stored as the bytes received, so the search runs
//! on `hookbox_body_json(body)`, the body as `jsonb` (NULL when it is not UTF-8 JSON), over a GIN
//! index of that expression (`jsonb_path_ops`, the operator class for `@>`). Ingest is unchanged:
//! the index is maintained as each archive row is inserted, and existing rows are indexed here.
//!
//! SQLite has no index for it: its search reads each body with the JSON functions.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261201_000009_payload_search"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        // IMMUTABLE holds: the result depends on the bytes alone (the encoding is fixed).
        db.execute_unprepared(
            "CREATE FUNCTION hookbox_body_json(body bytea) RETURNS jsonb
             LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
             BEGIN
                 RETURN convert_from(body, 'UTF8')::jsonb;
             EXCEPTION WHEN others THEN
                 RETURN NULL;
             END
             $$",
        )
        .await?;
        db.execute_unprepared(
            "CREATE INDEX ix_webhook_events_body_json ON webhook_events
             USING GIN (hookbox_body_json(body) jsonb_path_ops)",
        )
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        db.execute_unprepared("DROP INDEX IF EXISTS ix_webhook_events_body_json")
            .await?;
        db.execute_unprepared("DROP FUNCTION IF EXISTS hookbox_body_json(bytea)")
            .await?;
        Ok(())
    }
}
