//! The outbox's other side: claiming due forward deliveries ([`claim`]), the request each one is
//! ([`request`]), and what an attempt's answer does to its row ([`attempt`]). The HTTP call
//! itself is the server's (`server::forwarder`); no database transaction is open while it runs.
//!
//! Order per object (snapshot sources): a claim takes only the greatest pending revision of an
//! object, and only while no attempt of that object is in flight (leased); every smaller pending
//! revision is `superseded` then, and so is a pending revision smaller than one already
//! delivered or dead (a dead attempt may have reached the application). So a destination never
//! receives a revision after a greater one. The claim of an object's rows is serialised: on
//! PostgreSQL by a transaction-scoped advisory lock per object, taken without waiting (an object
//! another worker holds waits for the next round), on SQLite by its single writer
//! ([decision 0008](../../../docs/decisions/0008-set-based-forward-claims.md)).

pub mod attempt;
pub mod claim;
pub mod request;

pub use attempt::{
    AfterAttempt, AttemptResult, MAX_RETRY_AFTER_SECS, record_attempt, retry_after_secs,
};
pub use claim::{Claimed, claim_due, release_claims};
pub use request::{message_id, request_body, signed_headers};

use crate::db::Db;
use crate::model::ForwardStatus;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};

/// The forwarder's wake-up: a confirmed replay (or retry) notifies it instead of waiting for its
/// next poll. The server puts it in the dashboard's context (`guard::wake_forwarder`).
#[derive(Clone, Debug, Default)]
pub struct Wake(pub std::sync::Arc<tokio::sync::Notify>);

impl Wake {
    pub fn notify(&self) {
        self.0.notify_one();
    }
}

/// Each destination's pending deliveries: how many, and when the oldest was created.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct Backlog {
    pub destination: String,
    pub pending: i64,
    pub oldest: Option<DateTime<Utc>>,
}

/// The backlog of every destination with pending deliveries (the dashboard's pool: a scrape
/// never takes a connection deliveries need).
pub async fn backlog(db: &Db) -> Result<Vec<Backlog>, DbErr> {
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT destination, count(*) AS pending, min(created_at) AS oldest
                 FROM forward_deliveries WHERE status = '{}' GROUP BY destination",
                ForwardStatus::Pending.as_str()
            ),
            vec![],
        ))
        .await?;
    rows.iter()
        .map(|row| Backlog::from_query_result(row, ""))
        .collect()
}
