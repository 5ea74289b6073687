//! Daily counts of finished days for the overview, so it counts live only the rows of today and
//! yesterday instead of a week of the archive on every request (`.ci/bench-dashboard`: counting
//! seven days of 1,000,000 archive rows cost 60 to 100 ms whatever the index).
//!
//! A day's counts never change once it is over: `received_at` is the arrival time, the archive is
//! append-only, and replays arrive "now". `app::archive::overview` fills a day (one row per source
//! and status, and a row in `archive_days_counted`) the first time it needs it, an hour after the
//! day ended (the hour covers transactions in flight across midnight). Ingest never writes here.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261130_000005_overview_rollup"
    }
}

fn statements(backend: DatabaseBackend) -> Result<Vec<String>, DbErr> {
    let (time, int) = match backend {
        DatabaseBackend::Postgres => ("timestamptz", "bigint"),
        DatabaseBackend::Sqlite => ("TEXT", "INTEGER"),
        other => {
            return Err(DbErr::Migration(format!(
                "unsupported database backend {other:?}"
            )));
        }
    };
    Ok(vec![
        // `day` is the UTC date, YYYY-MM-DD.
        format!(
            "CREATE TABLE archive_day_counts (
                day TEXT NOT NULL,
                source TEXT NOT NULL,
                status TEXT NOT NULL,
                n {int} NOT NULL,
                CONSTRAINT pk_archive_day_counts PRIMARY KEY (day, source, status)
            )"
        ),
        format!(
            "CREATE TABLE archive_days_counted (
                day TEXT NOT NULL CONSTRAINT pk_archive_days_counted PRIMARY KEY,
                counted_at {time} NOT NULL
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
        for table in ["archive_days_counted", "archive_day_counts"] {
            db.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}"))
                .await?;
        }
        Ok(())
    }
}
