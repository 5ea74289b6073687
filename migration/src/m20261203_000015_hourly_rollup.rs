//! The overview's counts by quarter hour instead of by UTC day, so its charts and tables follow
//! the viewer's time zone: every zone's hours and days (+05:30 and +05:45 included) begin on a
//! quarter hour, so each is a sum of whole quarters. Only sender traffic is counted (archive
//! rows that are not replays). Replaces the daily rollup of m20261130_000005
//! (decision 0011 supersedes 0004).
//!
//! - `archive_quarter_counts`: per quarter hour (`quarter`: its start in Unix seconds, UTC),
//!   source and status, how many deliveries arrived that were not replays;
//! - `archive_quarters_counted`: the one range of quarters `[first_quarter, end_quarter)` whose
//!   counts are complete. The overview fills what it needs on first need, some minutes after a
//!   quarter ended; ingest never writes here; the daily purge deletes quarters older than it
//!   needs.
//!
//! And for forwarding (issue 23's re-send):
//! - `forward_deliveries.resend_of`: the id of the delivered row an operator's re-send copied
//!   (the original keeps its status and attempts); no foreign key, so it still says so once
//!   retention has purged the original;
//! - an index on a destination's delivered rows by delivery time (re-send since a time), and
//!   one on an event's rows at a destination (whether a row is its event's newest there).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000015_hourly_rollup"
    }
}

fn statements(backend: DatabaseBackend) -> Result<Vec<String>, DbErr> {
    let (int, time) = match backend {
        DatabaseBackend::Postgres => ("bigint", "timestamptz"),
        DatabaseBackend::Sqlite => ("INTEGER", "TEXT"),
        other => {
            return Err(DbErr::Migration(format!(
                "unsupported database backend {other:?}"
            )));
        }
    };
    Ok(vec![
        "DROP TABLE IF EXISTS archive_days_counted".into(),
        "DROP TABLE IF EXISTS archive_day_counts".into(),
        format!(
            "CREATE TABLE archive_quarter_counts (
                quarter {int} NOT NULL,
                source TEXT NOT NULL,
                status TEXT NOT NULL,
                n {int} NOT NULL,
                CONSTRAINT pk_archive_quarter_counts PRIMARY KEY (quarter, source, status)
            )"
        ),
        format!(
            "CREATE TABLE archive_quarters_counted (
                id INTEGER NOT NULL CONSTRAINT pk_archive_quarters_counted PRIMARY KEY
                    CONSTRAINT ck_archive_quarters_counted_one CHECK (id = 1),
                first_quarter {int} NOT NULL,
                end_quarter {int} NOT NULL,
                counted_at {time} NOT NULL,
                CONSTRAINT ck_archive_quarters_counted_range CHECK (first_quarter <= end_quarter)
            )"
        ),
        format!("ALTER TABLE forward_deliveries ADD COLUMN resend_of {int}"),
        "CREATE INDEX ix_forward_deliveries_delivered
             ON forward_deliveries (destination, delivered_at) WHERE status = 'delivered'"
            .into(),
        "CREATE INDEX ix_forward_deliveries_event
             ON forward_deliveries (destination, source, event_id, id)"
            .into(),
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

    /// The daily rollup's tables come back empty: they are derived data, filled again from the
    /// archive on first need.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let (int, time) = match manager.get_database_backend() {
            DatabaseBackend::Postgres => ("bigint", "timestamptz"),
            _ => ("INTEGER", "TEXT"),
        };
        let db = manager.get_connection();
        for statement in [
            "DROP INDEX IF EXISTS ix_forward_deliveries_event".to_string(),
            "DROP INDEX IF EXISTS ix_forward_deliveries_delivered".to_string(),
            "ALTER TABLE forward_deliveries DROP COLUMN resend_of".to_string(),
            "DROP TABLE IF EXISTS archive_quarters_counted".to_string(),
            "DROP TABLE IF EXISTS archive_quarter_counts".to_string(),
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
        ] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }
}
