//! `handshake_waits`: a provider that hands its signing secret over in an unsigned first request
//! (Asana's `X-Hook-Secret`, Notion's `verification_token`) is answered only while an operator
//! waits for it with `hookbox handshake SOURCE`. The command inserts a row with the public half
//! of a key pair it keeps in memory; the endpoint seals the secret to that key (`sealed`), and
//! the command opens it and prints it. The database holds no secret, only what the command's
//! private key opens.
//!
//! Rows are written only by the command (at most a few open per source, each for minutes); the
//! endpoint fills one, never inserts.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000018_handshake_waits"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let (id, time, bytes) = match manager.get_database_backend() {
            DatabaseBackend::Postgres => ("bigserial PRIMARY KEY", "timestamptz", "bytea"),
            DatabaseBackend::Sqlite => ("INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT", "BLOB"),
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        for statement in [
            format!(
                "CREATE TABLE handshake_waits (
                    id {id},
                    source TEXT NOT NULL,
                    public_key {bytes} NOT NULL,
                    created_at {time} NOT NULL,
                    expires_at {time} NOT NULL,
                    sealed {bytes},
                    answered_at {time},
                    client_address TEXT
                )"
            ),
            "CREATE INDEX ix_handshake_waits_source ON handshake_waits (source, id)".into(),
        ] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("DROP TABLE IF EXISTS handshake_waits")
            .await?;
        Ok(())
    }
}
