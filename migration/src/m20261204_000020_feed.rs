//! The pull feed (`docs/feed.md`): each archive row's place in commit order, the named consumers
//! with their committed cursors, and the feed's horizon (the last place the purge took).
//!
//! - `webhook_events.feed_tx`: on PostgreSQL the id of the transaction that wrote the row
//!   (`pg_current_xact_id()`), so the feed orders by (feed_tx, id) and serves only rows whose
//!   transaction is older than every transaction still running; a row committed later always
//!   sorts after what was served. Rows written before this migration keep 0 (they are all
//!   committed) and come first, in id order; the volatile default is set after the column is
//!   added, so adding it rewrites no row. On SQLite 0 always: one writer at a time, so id order
//!   is commit order.
//! - `feed_consumers`: a consumer's filters (JSON arrays; NULL: all), its committed cursor (0, 0:
//!   nothing committed), and its lease.
//! - `feed_horizon`: one row, the greatest (feed_tx, id) the archive's purge deleted; a cursor
//!   before it asks for rows that are gone (410).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261204_000020_feed"
    }
}

fn tables(time: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE feed_consumers (
                name TEXT NOT NULL,
                sources TEXT,
                types TEXT,
                committed_tx BIGINT NOT NULL DEFAULT 0,
                committed_id BIGINT NOT NULL DEFAULT 0,
                committed_at {time},
                created_at {time} NOT NULL,
                created_by TEXT NOT NULL,
                lease_holder TEXT,
                lease_until {time},
                CONSTRAINT pk_feed_consumers PRIMARY KEY (name)
            )"
        ),
        "CREATE TABLE feed_horizon (
            k INTEGER NOT NULL,
            feed_tx BIGINT NOT NULL,
            id BIGINT NOT NULL,
            CONSTRAINT pk_feed_horizon PRIMARY KEY (k),
            CONSTRAINT ck_feed_horizon_one_row CHECK (k = 1)
        )"
        .to_string(),
        "CREATE INDEX ix_webhook_events_feed ON webhook_events (feed_tx, id)".to_string(),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let mut statements = match manager.get_database_backend() {
            DatabaseBackend::Postgres => vec![
                "ALTER TABLE webhook_events ADD COLUMN feed_tx bigint NOT NULL DEFAULT 0"
                    .to_string(),
                "ALTER TABLE webhook_events ALTER COLUMN feed_tx
                     SET DEFAULT CAST(CAST(pg_current_xact_id() AS text) AS bigint)"
                    .to_string(),
            ],
            DatabaseBackend::Sqlite => vec![
                "ALTER TABLE webhook_events ADD COLUMN feed_tx INTEGER NOT NULL DEFAULT 0"
                    .to_string(),
            ],
            other => {
                return Err(DbErr::Migration(format!(
                    "unsupported database backend {other:?}"
                )));
            }
        };
        let time = match manager.get_database_backend() {
            DatabaseBackend::Postgres => "timestamptz",
            _ => "TEXT",
        };
        statements.extend(tables(time));
        let db = manager.get_connection();
        for statement in statements {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "DROP TABLE IF EXISTS feed_horizon",
            "DROP TABLE IF EXISTS feed_consumers",
            "DROP INDEX IF EXISTS ix_webhook_events_feed",
            "ALTER TABLE webhook_events DROP COLUMN feed_tx",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
