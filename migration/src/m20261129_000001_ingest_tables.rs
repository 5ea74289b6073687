//! The inbox, the projection and the archive (the schema operators query: `docs/webhooks.md`,
//! section 7).
//!
//! Written as SQL per backend because operators query these column types (`jsonb`, `bytea`,
//! `timestamptz` on PostgreSQL) and every constraint and index carries an explicit name, so an
//! error can be recognised by it.
//!
//! SQLite has no `jsonb`: snapshots are stored as the sent text, and `snapshot_canonical` holds the
//! canonical form (see `app::json`) that gives SQLite the same content identity as PostgreSQL.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000001_ingest_tables"
    }
}

const OUTCOMES_BY_STATUS: &str =
    "(status = 'processed' AND outcome IN ('applied', 'stale', 'accepted'))
        OR (status = 'skipped' AND outcome = 'duplicate')
        OR (status = 'failed' AND outcome IN ('reused_event_id', 'reused_revision', 'invalid'))";

const INDEXES: &[&str] = &[
    "CREATE INDEX ix_webhook_events_received ON webhook_events (received_at DESC, id DESC)",
    "CREATE INDEX ix_webhook_events_status_received ON webhook_events (status, received_at DESC, id DESC)",
    "CREATE INDEX ix_webhook_events_event ON webhook_events (event_id, source)",
    "CREATE INDEX ix_webhook_events_object ON webhook_events (object_id, source)",
    "CREATE INDEX ix_webhook_events_replay_of ON webhook_events (replay_of)",
];

fn postgres_up() -> Vec<String> {
    let mut statements = vec![
        "CREATE TABLE webhook_inbox (
            source text NOT NULL,
            event_id text NOT NULL,
            object_id text,
            revision bigint,
            snapshot jsonb,
            received_at timestamptz NOT NULL,
            CONSTRAINT pk_webhook_inbox PRIMARY KEY (source, event_id),
            CONSTRAINT uq_webhook_inbox_object_revision UNIQUE (source, object_id, revision),
            CONSTRAINT ck_webhook_inbox_revision_positive CHECK (revision IS NULL OR revision > 0)
        )"
        .to_string(),
        "CREATE TABLE object_state (
            source text NOT NULL,
            object_id text NOT NULL,
            revision bigint NOT NULL,
            snapshot jsonb NOT NULL,
            updated_at timestamptz NOT NULL,
            CONSTRAINT pk_object_state PRIMARY KEY (source, object_id),
            CONSTRAINT ck_object_state_revision_positive CHECK (revision > 0)
        )"
        .to_string(),
        format!(
            "CREATE TABLE webhook_events (
            id bigint GENERATED ALWAYS AS IDENTITY,
            source text NOT NULL,
            event_id text,
            object_id text,
            revision bigint,
            event_type text,
            status text NOT NULL,
            outcome text NOT NULL,
            error_message text,
            headers jsonb NOT NULL,
            body bytea NOT NULL,
            received_at timestamptz NOT NULL,
            replay_of bigint,
            replayed_by text,
            CONSTRAINT pk_webhook_events PRIMARY KEY (id),
            CONSTRAINT fk_webhook_events_replay_of FOREIGN KEY (replay_of)
                REFERENCES webhook_events (id) ON DELETE SET NULL,
            CONSTRAINT ck_webhook_events_outcome CHECK ({OUTCOMES_BY_STATUS})
        )"
        ),
    ];
    statements.extend(INDEXES.iter().map(|s| String::from(*s)));
    statements
}

fn sqlite_up() -> Vec<String> {
    let mut statements = vec![
        "CREATE TABLE webhook_inbox (
            source TEXT NOT NULL,
            event_id TEXT NOT NULL,
            object_id TEXT,
            revision INTEGER,
            snapshot TEXT,
            snapshot_canonical TEXT,
            received_at TEXT NOT NULL,
            CONSTRAINT pk_webhook_inbox PRIMARY KEY (source, event_id),
            CONSTRAINT uq_webhook_inbox_object_revision UNIQUE (source, object_id, revision),
            CONSTRAINT ck_webhook_inbox_revision_positive CHECK (revision IS NULL OR revision > 0)
        )"
        .to_string(),
        "CREATE TABLE object_state (
            source TEXT NOT NULL,
            object_id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            snapshot TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            CONSTRAINT pk_object_state PRIMARY KEY (source, object_id),
            CONSTRAINT ck_object_state_revision_positive CHECK (revision > 0)
        )"
        .to_string(),
        format!(
            "CREATE TABLE webhook_events (
            id INTEGER NOT NULL CONSTRAINT pk_webhook_events PRIMARY KEY AUTOINCREMENT,
            source TEXT NOT NULL,
            event_id TEXT,
            object_id TEXT,
            revision INTEGER,
            event_type TEXT,
            status TEXT NOT NULL,
            outcome TEXT NOT NULL,
            error_message TEXT,
            headers TEXT NOT NULL,
            body BLOB NOT NULL,
            received_at TEXT NOT NULL,
            replay_of INTEGER CONSTRAINT fk_webhook_events_replay_of
                REFERENCES webhook_events (id) ON DELETE SET NULL,
            replayed_by TEXT,
            CONSTRAINT ck_webhook_events_outcome CHECK ({OUTCOMES_BY_STATUS})
        )"
        ),
    ];
    statements.extend(INDEXES.iter().map(|s| String::from(*s)));
    statements
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements = match manager.get_database_backend() {
            DatabaseBackend::Postgres => postgres_up(),
            DatabaseBackend::Sqlite => sqlite_up(),
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        for statement in statements {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for table in ["webhook_events", "object_state", "webhook_inbox"] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
                .await?;
        }
        Ok(())
    }
}
