//! Dashboard users, their server-side sessions and the audit log.
//!
//! Sessions are stored as the SHA-256 of their token, so a copy of the table cannot sign anyone
//! in; they expire and can be revoked. The audit log also serves sign-in throttling: failed
//! sign-ins are counted from it, so every hookbox process sees the same count.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000002_operators"
    }
}

fn statements(backend: DatabaseBackend) -> Result<Vec<String>, DbErr> {
    let (id, time, text) = match backend {
        DatabaseBackend::Postgres => ("bigint GENERATED ALWAYS AS IDENTITY", "timestamptz", "text"),
        DatabaseBackend::Sqlite => ("INTEGER", "TEXT", "TEXT"),
        other => {
            return Err(DbErr::Migration(format!(
                "unsupported database backend {other:?}"
            )));
        }
    };
    let autoincrement = if backend == DatabaseBackend::Sqlite {
        " AUTOINCREMENT"
    } else {
        ""
    };
    Ok(vec![
        format!(
            "CREATE TABLE users (
                id {id} NOT NULL CONSTRAINT pk_users PRIMARY KEY{autoincrement},
                name {text} NOT NULL CONSTRAINT uq_users_name UNIQUE,
                password_hash {text} NOT NULL,
                role {text} NOT NULL CONSTRAINT ck_users_role CHECK (role IN ('viewer', 'operator')),
                created_at {time} NOT NULL
            )"
        ),
        format!(
            "CREATE TABLE sessions (
                token_hash {text} NOT NULL CONSTRAINT pk_sessions PRIMARY KEY,
                user_id bigint NOT NULL CONSTRAINT fk_sessions_user REFERENCES users (id) ON DELETE CASCADE,
                created_at {time} NOT NULL,
                expires_at {time} NOT NULL,
                revoked_at {time}
            )"
        ),
        "CREATE INDEX ix_sessions_user ON sessions (user_id)".to_string(),
        format!(
            "CREATE TABLE audit_log (
                id {id} NOT NULL CONSTRAINT pk_audit_log PRIMARY KEY{autoincrement},
                at {time} NOT NULL,
                actor {text} NOT NULL,
                action {text} NOT NULL,
                target {text},
                outcome {text} NOT NULL,
                detail {text},
                address {text}
            )"
        ),
        "CREATE INDEX ix_audit_log_at ON audit_log (at DESC, id DESC)".to_string(),
        "CREATE INDEX ix_audit_log_action_actor ON audit_log (action, actor, at)".to_string(),
        "CREATE INDEX ix_audit_log_action_address ON audit_log (action, address, at)".to_string(),
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
        for table in ["audit_log", "sessions", "users"] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
                .await?;
        }
        Ok(())
    }
}
