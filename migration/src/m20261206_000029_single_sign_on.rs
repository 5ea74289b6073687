//! Single sign-on (OpenID Connect, contract section 17):
//!
//! - `users.issuer` and `users.subject`: a user who signs in through the identity provider is
//!   found by (issuer, `sub`), never by name; both NULL for a local (password) user.
//!   `password_hash` is empty for them: no password matches it. `last_sign_in_at`: when the user
//!   last signed in, either way (the `/users` page).
//! - `sign_in_flows`: the sign-ins started and not yet finished, so a flow may start on one
//!   process and end on another. Keyed by its `state`; it holds the `nonce`, the PKCE challenge
//!   (the verifier stays in the browser's cookie, never here), where to go after, and the client
//!   that started it (the bound per client). Taken once by the callback, expired after minutes.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261206_000029_single_sign_on"
    }
}

fn statements(backend: DatabaseBackend) -> Result<Vec<String>, DbErr> {
    let time = match backend {
        DatabaseBackend::Postgres => "timestamptz",
        DatabaseBackend::Sqlite => "TEXT",
        other => {
            return Err(DbErr::Migration(format!(
                "unsupported database backend {other:?}"
            )));
        }
    };
    Ok(vec![
        "ALTER TABLE users ADD COLUMN issuer TEXT".into(),
        "ALTER TABLE users ADD COLUMN subject TEXT".into(),
        format!("ALTER TABLE users ADD COLUMN last_sign_in_at {time}"),
        "CREATE UNIQUE INDEX uq_users_identity ON users (issuer, subject)".into(),
        format!(
            "CREATE TABLE sign_in_flows (
                state TEXT NOT NULL CONSTRAINT pk_sign_in_flows PRIMARY KEY,
                nonce TEXT NOT NULL,
                challenge TEXT NOT NULL,
                next TEXT NOT NULL,
                client TEXT NOT NULL,
                created_at {time} NOT NULL,
                expires_at {time} NOT NULL
            )"
        ),
        "CREATE INDEX ix_sign_in_flows_client ON sign_in_flows (client, expires_at)".into(),
        "CREATE INDEX ix_sign_in_flows_expires ON sign_in_flows (expires_at)".into(),
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
        for statement in [
            "DROP TABLE IF EXISTS sign_in_flows",
            "DROP INDEX IF EXISTS uq_users_identity",
            "ALTER TABLE users DROP COLUMN last_sign_in_at",
            "ALTER TABLE users DROP COLUMN subject",
            "ALTER TABLE users DROP COLUMN issuer",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
