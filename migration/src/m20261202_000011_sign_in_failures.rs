//! `sign_in_failures`: sign-ins that did not succeed, counted per client, user name and minute
//! instead of one audit row each, so a flood of wrong passwords costs a bounded number of rows.
//!
//! `failed` counts passwords checked and found wrong, `throttled` attempts refused by the
//! throttle before any check, `busy` attempts refused because no password check slot was free.
//! `counted` is the part of `failed` the throttle still counts (a successful sign-in of that name
//! from that client sets it to 0); `last_failed_at` is the time of the newest failure of the row,
//! from which the throttle's growing delay runs. Every hookbox process on the database reads and
//! writes the same rows, so the throttle is shared.
//!
//! The primary key serves the throttle's reads (one client, the last hour); the index on
//! `minute` the audit page (newest first) and the age purge.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261202_000011_sign_in_failures"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let (int, time) = match manager.get_database_backend() {
            DatabaseBackend::Postgres => ("bigint", "timestamptz"),
            DatabaseBackend::Sqlite => ("INTEGER", "TEXT"),
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let db = manager.get_connection();
        for statement in [
            format!(
                "CREATE TABLE sign_in_failures (
                    client TEXT NOT NULL,
                    name TEXT NOT NULL,
                    minute {time} NOT NULL,
                    failed {int} NOT NULL DEFAULT 0,
                    counted {int} NOT NULL DEFAULT 0,
                    throttled {int} NOT NULL DEFAULT 0,
                    busy {int} NOT NULL DEFAULT 0,
                    last_failed_at {time},
                    CONSTRAINT pk_sign_in_failures PRIMARY KEY (client, name, minute)
                )"
            ),
            "CREATE INDEX ix_sign_in_failures_minute ON sign_in_failures (minute)".into(),
        ] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("DROP TABLE IF EXISTS sign_in_failures")
            .await?;
        Ok(())
    }
}
