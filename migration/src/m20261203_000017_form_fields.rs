//! Form-encoded bodies (Twilio, GitHub's default content type) are searched like JSON:
//! `webhook_events.body_fields` holds the JSON object a form body is read as (its fields; see
//! `app::envelope::form`), NULL for every other body. The raw bytes stay in `body`.
//!
//! On PostgreSQL the body search runs on `hookbox_body_doc(body, body_fields)`: the fields when
//! there are some, else the body as `jsonb` (NULL when it is neither), over a GIN index of that
//! expression that replaces the index of `hookbox_body_json(body)` (same operator class,
//! `jsonb_ops`). SQLite reads `COALESCE(body_fields, body)` in its scan.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000017_form_fields"
    }
}

const PG_UP: &[&str] = &[
    // IMMUTABLE holds: the result depends on the two values alone. A value `jsonb` cannot hold
    // (`\u0000`, a number beyond `numeric`) is NULL, never an error at insert.
    "CREATE FUNCTION hookbox_body_doc(body bytea, fields text) RETURNS jsonb
     LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
     BEGIN
         IF fields IS NOT NULL THEN
             RETURN fields::jsonb;
         END IF;
         RETURN hookbox_body_json(body);
     EXCEPTION WHEN others THEN
         RETURN NULL;
     END
     $$",
    "CREATE INDEX ix_webhook_events_body_doc ON webhook_events
     USING GIN (hookbox_body_doc(body, body_fields))",
    "DROP INDEX ix_webhook_events_body_json",
];

const PG_DOWN: &[&str] = &[
    "CREATE INDEX ix_webhook_events_body_json ON webhook_events USING GIN (hookbox_body_json(body))",
    "DROP INDEX IF EXISTS ix_webhook_events_body_doc",
    "DROP FUNCTION IF EXISTS hookbox_body_doc(bytea, text)",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("ALTER TABLE webhook_events ADD COLUMN body_fields text")
            .await?;
        if manager.get_database_backend() == DatabaseBackend::Postgres {
            for statement in PG_UP {
                db.execute_unprepared(statement).await?;
            }
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if manager.get_database_backend() == DatabaseBackend::Postgres {
            for statement in PG_DOWN {
                db.execute_unprepared(statement).await?;
            }
        }
        db.execute_unprepared("ALTER TABLE webhook_events DROP COLUMN body_fields")
            .await?;
        Ok(())
    }
}
