//! The outbox of notifications, as the transactions that change something write to it: a
//! change of a problem or a destination's deaths recorded with the change ([`record`]). What
//! becomes of it (handed to the channels, sent, folded) is `crate::notify::outbox`'s.

use crate::db::statement;
use crate::model::NotifyEvent;
use sea_orm::{ConnectionTrait, DbErr};

/// What a change is about: a problem (by its id), or a destination's dead deliveries of one
/// source (so a channel of some sources is told of its sources' deaths alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    Problem(i64),
    Destination { name: String, source: String },
}

impl Subject {
    /// `problem:17`, `destination:orders-app/shop`: the column's spelling.
    pub fn key(&self) -> String {
        match self {
            Subject::Problem(id) => format!("problem:{id}"),
            Subject::Destination { name, source } => format!("destination:{name}/{source}"),
        }
    }
}

/// Records a change of `subject` (of `source`) in `conn`'s transaction: a row of its own, or,
/// while the last change of the subject is not handed to the channels yet, that row made this
/// change and counted once more.
pub async fn record<C: ConnectionTrait>(
    conn: &C,
    event: NotifyEvent,
    subject: &Subject,
    source: &str,
    facts: &impl serde::Serialize,
) -> Result<(), DbErr> {
    let facts = serde_json::to_string(facts).map_err(|e| DbErr::Custom(e.to_string()))?;
    conn.execute_raw(statement(
        conn.get_database_backend(),
        "INSERT INTO notifications (event, subject, source, facts, created_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (subject) WHERE NOT fanned_out DO UPDATE
            SET event = excluded.event, facts = excluded.facts, source = excluded.source,
                changes = notifications.changes + 1, created_at = excluded.created_at",
        vec![
            event.as_str().into(),
            subject.key().into(),
            source.into(),
            facts.into(),
            crate::clock::now().into(),
        ],
    ))
    .await?;
    Ok(())
}
