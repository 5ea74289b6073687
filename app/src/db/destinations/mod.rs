//! `forward_deliveries`, `forward_attempts` and `forward_destinations` as the dashboard reads and
//! changes them: each destination's backlog, success rate and last error (here); its deliveries
//! with their attempts (`deliveries`); its attempts by hour ([`series`]); pausing, resuming and
//! retrying dead deliveries (`actions`); re-sending delivered ones ([`resend`]). Each change is
//! audited in its own transaction.

mod actions;
mod deliveries;
pub mod resend;
pub mod series;

pub use actions::{Actor, Retried, RetryError, retry_dead, retry_one, retry_scope, set_paused};
pub use deliveries::{PRODUCED_LIMIT, deliveries, produced_by};

use super::Db;
use crate::db::statement;
use crate::model::{DestinationSummary, ForwardStatus};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};

/// Rows a page of `/destinations/{name}` shows.
pub const PAGE_SIZE: usize = 50;

#[derive(FromQueryResult)]
struct BacklogRow {
    destination: String,
    status: ForwardStatus,
    n: i64,
    oldest: Option<DateTime<Utc>>,
}

#[derive(FromQueryResult)]
struct Rate {
    destination: String,
    attempts: i64,
    delivered: i64,
}

#[derive(FromQueryResult)]
struct State {
    destination: String,
    paused_at: Option<DateTime<Utc>>,
    paused_by: Option<String>,
    last_error: Option<String>,
    last_status_code: Option<i32>,
    last_error_at: Option<DateTime<Utc>>,
}

#[derive(FromQueryResult)]
struct Dead {
    destination: String,
    dead: i64,
}

/// How many dead deliveries each of `destinations` has (none: 0), in their order. One
/// statement over the index on `(destination, status, id)`.
pub async fn dead_counts(db: &Db, destinations: &[&str]) -> Result<Vec<i64>, DbErr> {
    if destinations.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders = (1..=destinations.len())
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT destination, count(*) AS dead FROM forward_deliveries
         WHERE status = 'dead' AND destination IN ({placeholders}) GROUP BY destination"
    );
    let values = destinations.iter().map(|d| (*d).into()).collect();
    let counts = Dead::find_by_statement(statement(&db.dashboard, &sql, values))
        .all(&db.dashboard)
        .await?;
    Ok(destinations
        .iter()
        .map(|name| {
            counts
                .iter()
                .find(|c| c.destination == *name)
                .map_or(0, |c| c.dead)
        })
        .collect())
}

/// Every configured destination (`(name, url shown)`, in the configuration's order), then any
/// other destination that still has rows, each with its backlog, dead count, last hour's
/// attempts and last error.
pub async fn summaries(
    db: &Db,
    configured: &[(String, String)],
) -> Result<Vec<DestinationSummary>, DbErr> {
    let conn = &db.dashboard;
    let now = Utc::now();
    let backlog = conn
        .query_all_raw(statement(
            conn,
            format!(
                "SELECT destination, status, count(*) AS n, min(created_at) AS oldest
                 FROM forward_deliveries WHERE status IN ('{}', '{}')
                 GROUP BY destination, status",
                ForwardStatus::Pending.as_str(),
                ForwardStatus::Dead.as_str()
            ),
            vec![],
        ))
        .await?;
    let rates = conn
        .query_all_raw(statement(
            conn,
            "SELECT d.destination AS destination, count(*) AS attempts,
                    sum(CASE WHEN a.status_code >= 200 AND a.status_code < 300 THEN 1 ELSE 0 END) AS delivered
             FROM forward_attempts a JOIN forward_deliveries d ON d.id = a.delivery_id
             WHERE a.started_at >= $1 GROUP BY d.destination",
            vec![(now - Duration::hours(1)).into()],
        ))
        .await?;
    let states = conn
        .query_all_raw(statement(
            conn,
            "SELECT destination, paused_at, paused_by, last_error, last_status_code, last_error_at
             FROM forward_destinations",
            vec![],
        ))
        .await?;
    let mut out: Vec<DestinationSummary> = configured
        .iter()
        .map(|(name, url)| empty_summary(name, Some(url.clone())))
        .collect();
    fn entry<'a>(out: &'a mut Vec<DestinationSummary>, name: &str) -> &'a mut DestinationSummary {
        match out.iter().position(|s| s.name == name) {
            Some(i) => &mut out[i],
            None => {
                out.push(empty_summary(name, None));
                out.last_mut().expect("just pushed")
            }
        }
    }
    for row in &backlog {
        let b = BacklogRow::from_query_result(row, "")?;
        let s = entry(&mut out, &b.destination);
        if b.status == ForwardStatus::Pending {
            s.pending = b.n;
            s.oldest_pending_at = b.oldest.map(|t| t.to_rfc3339());
            s.oldest_pending_secs = b.oldest.map(|t| (now - t).num_seconds().max(0));
        } else {
            s.dead = b.n;
        }
    }
    for row in &rates {
        let r = Rate::from_query_result(row, "")?;
        let s = entry(&mut out, &r.destination);
        s.attempts_last_hour = r.attempts;
        s.delivered_last_hour = r.delivered;
    }
    for row in &states {
        let st = State::from_query_result(row, "")?;
        // A state row alone (paused or failed once, since removed and drained) is not listed.
        let Some(s) = out.iter_mut().find(|s| s.name == st.destination) else {
            continue;
        };
        s.paused_at = st.paused_at.map(|t| t.to_rfc3339());
        s.paused_by = st.paused_by;
        s.last_error = st.last_error;
        s.last_status_code = st.last_status_code;
        s.last_error_at = st.last_error_at.map(|t| t.to_rfc3339());
    }
    Ok(out)
}

fn empty_summary(name: &str, url: Option<String>) -> DestinationSummary {
    DestinationSummary {
        name: name.to_string(),
        url,
        paused_at: None,
        paused_by: None,
        pending: 0,
        oldest_pending_at: None,
        oldest_pending_secs: None,
        dead: 0,
        attempts_last_hour: 0,
        delivered_last_hour: 0,
        last_error: None,
        last_status_code: None,
        last_error_at: None,
    }
}
