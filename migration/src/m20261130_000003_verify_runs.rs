//! The results of `hookbox verify`, so the dashboard can show when the invariants were last
//! checked and what was found.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261130_000003_verify_runs"
    }
}

fn statements(backend: DatabaseBackend) -> Result<Vec<String>, DbErr> {
    let (id, time, int, text) = match backend {
        DatabaseBackend::Postgres => (
            "bigint GENERATED ALWAYS AS IDENTITY",
            "timestamptz",
            "bigint",
            "text",
        ),
        DatabaseBackend::Sqlite => ("INTEGER", "TEXT", "INTEGER", "TEXT"),
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
            "CREATE TABLE verify_runs (
                id {id} NOT NULL CONSTRAINT pk_verify_runs PRIMARY KEY{autoincrement},
                ran_at {time} NOT NULL,
                drift_count {int} NOT NULL,
                repaired {int} NOT NULL,
                summary {text} NOT NULL
            )"
        ),
        "CREATE INDEX ix_verify_runs_ran_at ON verify_runs (ran_at DESC, id DESC)".to_string(),
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
        manager
            .get_connection()
            .execute_unprepared("DROP TABLE IF EXISTS verify_runs")
            .await?;
        Ok(())
    }
}
