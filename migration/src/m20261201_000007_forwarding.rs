//! The transactional outbox: one `forward_deliveries` row per destination for each applied or
//! accepted delivery, written in the ingest transaction, and every attempt to send it.
//!
//! A row carries what its request needs (`payload`: the snapshot, or a dedup source's body, as
//! received), so it can be sent after the archive row that produced it is purged.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261201_000007_forwarding"
    }
}

const STATUSES: &str = "status IN ('pending', 'delivered', 'superseded', 'dead')";

fn statements(backend: DatabaseBackend) -> Result<Vec<String>, DbErr> {
    let (id, int, time, autoincrement) = match backend {
        DatabaseBackend::Postgres => (
            "bigint GENERATED ALWAYS AS IDENTITY",
            "bigint",
            "timestamptz",
            "",
        ),
        DatabaseBackend::Sqlite => ("INTEGER", "INTEGER", "TEXT", " AUTOINCREMENT"),
        other => {
            return Err(DbErr::Migration(format!(
                "unsupported database backend {other:?}"
            )));
        }
    };
    Ok(vec![
        format!(
            "CREATE TABLE forward_deliveries (
                id {id} NOT NULL CONSTRAINT pk_forward_deliveries PRIMARY KEY{autoincrement},
                destination TEXT NOT NULL,
                source TEXT NOT NULL,
                event_id TEXT NOT NULL,
                object_id TEXT,
                revision {int},
                event_type TEXT,
                archive_id {int} CONSTRAINT fk_forward_deliveries_archive
                    REFERENCES webhook_events (id) ON DELETE SET NULL,
                status TEXT NOT NULL CONSTRAINT ck_forward_deliveries_status CHECK ({STATUSES}),
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at {time} NOT NULL,
                last_status_code INTEGER,
                last_error TEXT,
                delivered_at {time},
                created_at {time} NOT NULL,
                received_at {time} NOT NULL,
                payload TEXT NOT NULL,
                lease_until {time},
                leased_by TEXT
            )"
        ),
        "CREATE INDEX ix_forward_deliveries_due ON forward_deliveries (next_attempt_at)
             WHERE status = 'pending'"
            .into(),
        "CREATE INDEX ix_forward_deliveries_destination ON forward_deliveries (destination, status, id)"
            .into(),
        "CREATE INDEX ix_forward_deliveries_object ON forward_deliveries (destination, source, object_id, revision)
             WHERE object_id IS NOT NULL"
            .into(),
        "CREATE INDEX ix_forward_deliveries_archive ON forward_deliveries (archive_id)".into(),
        format!(
            "CREATE TABLE forward_attempts (
                delivery_id {int} NOT NULL CONSTRAINT fk_forward_attempts_delivery
                    REFERENCES forward_deliveries (id) ON DELETE CASCADE,
                attempt INTEGER NOT NULL,
                started_at {time} NOT NULL,
                duration_ms {int} NOT NULL,
                status_code INTEGER,
                error TEXT,
                response_excerpt TEXT,
                CONSTRAINT pk_forward_attempts PRIMARY KEY (delivery_id, attempt)
            )"
        ),
    ])
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in statements(manager.get_database_backend())? {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for table in ["forward_attempts", "forward_deliveries"] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
                .await?;
        }
        Ok(())
    }
}
