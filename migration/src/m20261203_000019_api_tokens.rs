//! `api_tokens`: the tokens programs call `/api/v1` with (`hookbox token add|list|revoke`). Only
//! the SHA-256 of a token is kept; the token itself is printed once, when it is made. A token has
//! a role (viewer or operator), may be limited to some sources (`sources`, a JSON array; NULL:
//! every source), may expire, and is revoked rather than deleted, so the audit log's actor stays
//! a name that meant something. `last_used_at` is written at most once a minute per token.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000019_api_tokens"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let (id, time) = match manager.get_database_backend() {
            DatabaseBackend::Postgres => ("bigserial PRIMARY KEY", "timestamptz"),
            DatabaseBackend::Sqlite => ("INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT"),
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        for statement in [format!(
            "CREATE TABLE api_tokens (
                    id {id},
                    name TEXT NOT NULL,
                    token_hash TEXT NOT NULL,
                    role TEXT NOT NULL,
                    sources TEXT,
                    created_at {time} NOT NULL,
                    expires_at {time},
                    revoked_at {time},
                    last_used_at {time},
                    CONSTRAINT uq_api_tokens_name UNIQUE (name),
                    CONSTRAINT uq_api_tokens_hash UNIQUE (token_hash)
                )"
        )] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("DROP TABLE IF EXISTS api_tokens")
            .await?;
        Ok(())
    }
}
