//! Problems with ids, and the outbox of notifications (contract section 14):
//!
//! - `problems`: one row per cause (source, stage, error class) that ever failed: its `id` is
//!   the cause's id in the API (`GET /api/v1/problems`), stable whatever happens to its failures;
//!   `open` is whether the last message recorded for it said open (a change is a difference
//!   between it and the failures, decided under the row's lock: one message per change);
//!   `changes` counts them.
//! - `notifications`: the outbox of changes, written in the transaction that decided the change
//!   (`facts`: what the message says, as JSON, never a body, a header or a secret). Changes of
//!   one subject (a problem, a destination's deaths) not yet handed to the channels are one row
//!   that counts them (`changes`; the partial unique index).
//! - `notification_sends`: each change a channel wants, to send (pending → sent; said by a later
//!   message of the same subject → folded, `folded_into` naming it; not taken for 24 hours →
//!   failed). One per change and channel.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261206_000028_notifications"
    }
}

const EVENTS: &str =
    "event IN ('problem.opened', 'problem.reopened', 'problem.resolved', 'destination.dead')";
const STATUSES: &str = "status IN ('pending', 'sent', 'folded', 'failed')";

fn statements(backend: DatabaseBackend) -> Result<Vec<String>, DbErr> {
    let (id, int, time, boolean, autoincrement) = match backend {
        DatabaseBackend::Postgres => (
            "bigint GENERATED ALWAYS AS IDENTITY",
            "bigint",
            "timestamptz",
            "boolean",
            "",
        ),
        DatabaseBackend::Sqlite => ("INTEGER", "INTEGER", "TEXT", "INTEGER", " AUTOINCREMENT"),
        other => {
            return Err(DbErr::Migration(format!(
                "unsupported database backend {other:?}"
            )));
        }
    };
    Ok(vec![
        format!(
            "CREATE TABLE problems (
                id {id} NOT NULL CONSTRAINT pk_problems PRIMARY KEY{autoincrement},
                source TEXT NOT NULL,
                outcome TEXT NOT NULL,
                error_class TEXT NOT NULL,
                open {boolean} NOT NULL DEFAULT FALSE,
                changes {int} NOT NULL DEFAULT 0,
                changed_at {time},
                CONSTRAINT uq_problems_cause UNIQUE (source, outcome, error_class)
            )"
        ),
        // The causes open now, without a message: the first change after the upgrade of each
        // is a reopening or its resolution, not a flood of openings.
        format!(
            "INSERT INTO problems (source, outcome, error_class, open, changes)
             SELECT DISTINCT e.source, e.outcome, e.error_class, TRUE, 1 FROM webhook_events e
             WHERE e.status = 'failed' AND e.replayed_by IS NULL AND e.resolved_by IS NULL
               AND e.error_class IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM problem_states ps
                   WHERE ps.source = e.source AND ps.outcome = e.outcome
                     AND ps.error_class = e.error_class AND ps.state = 'ignored')"
        ),
        format!(
            "CREATE TABLE notifications (
                id {id} NOT NULL CONSTRAINT pk_notifications PRIMARY KEY{autoincrement},
                event TEXT NOT NULL CONSTRAINT ck_notifications_event CHECK ({EVENTS}),
                subject TEXT NOT NULL,
                source TEXT NOT NULL,
                facts TEXT NOT NULL,
                changes {int} NOT NULL DEFAULT 1,
                fanned_out {boolean} NOT NULL DEFAULT FALSE,
                created_at {time} NOT NULL
            )"
        ),
        "CREATE UNIQUE INDEX ux_notifications_unsent ON notifications (subject)
            WHERE NOT fanned_out"
            .into(),
        "CREATE INDEX ix_notifications_created ON notifications (created_at)".into(),
        format!(
            "CREATE TABLE notification_sends (
                id {id} NOT NULL CONSTRAINT pk_notification_sends PRIMARY KEY{autoincrement},
                notification_id {int} NOT NULL,
                channel TEXT NOT NULL,
                subject TEXT NOT NULL,
                changes {int} NOT NULL,
                status TEXT NOT NULL CONSTRAINT ck_notification_sends_status CHECK ({STATUSES}),
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at {time} NOT NULL,
                lease_until {time},
                leased_by TEXT,
                last_error TEXT,
                folded_into {int},
                created_at {time} NOT NULL,
                sent_at {time},
                CONSTRAINT uq_notification_sends UNIQUE (notification_id, channel)
            )"
        ),
        "CREATE INDEX ix_notification_sends_pending
            ON notification_sends (channel, next_attempt_at, id) WHERE status = 'pending'"
            .into(),
        "CREATE INDEX ix_notification_sends_sent
            ON notification_sends (channel, subject, sent_at) WHERE status = 'sent'"
            .into(),
        "CREATE INDEX ix_notification_sends_created ON notification_sends (created_at)".into(),
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
            "DROP TABLE IF EXISTS notification_sends",
            "DROP TABLE IF EXISTS notifications",
            "DROP TABLE IF EXISTS problems",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
