//! Routes against the archive (contract section 16): what a route would match among a source's
//! newest deliveries ([`preview`]), and why each destination of a stored delivery's source was
//! or was not sent it ([`verdicts`]). Both decide with `crate::routing`, the rules ingest runs,
//! so a preview counts what ingest would send.
//!
//! A preview reads the source's newest deliveries its senders made (operators' replays left
//! out, as the source's index of `m20261203_000016` has them) that applied or were accepted,
//! [`BATCH`] rows a statement along that index, and decides each in the process: its cost is
//! the rows asked for, at most [`MAX_PREVIEW`], whatever the archive holds.

use super::Db;
use super::search_bounds::SearchError;
use crate::model::{DestinationVerdict, OutcomeKind, RouteInfo, RoutePreview, Unmatched};
use crate::routing::{Conditions, Delivery, Plan, Route};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr};

/// The most deliveries a preview reads.
pub const MAX_PREVIEW: u32 = 10_000;
/// The most archive ids a preview gives of each side.
pub const EXAMPLES: usize = 20;
/// Rows read a statement.
const BATCH: u32 = 1_000;

/// A route as the API and `/sources` show it.
pub fn info(route: &Route) -> RouteInfo {
    RouteInfo {
        name: route.label.clone(),
        source: route.source.clone(),
        destination: route.destination.clone(),
        event_types: route
            .conditions
            .event_types
            .as_ref()
            .map(|globs| globs.iter().map(|g| g.as_str().to_string()).collect()),
        matches: route.conditions.matches.clone(),
    }
}

/// For each (source, conditions) of `routes`, how many of the source's newest `limit`
/// deliveries that applied or were accepted the conditions match, with examples of each side.
/// `limit` is 1 to [`MAX_PREVIEW`] (the caller checks).
///
/// Previews read bodies as a payload search does, so they take one search's place together
/// (`search_bounds::begin_search_as`: one per user, a few per process, else
/// [`SearchError::Busy`]) and one deadline for all ([`SearchError::TimedOut`]).
pub async fn preview(
    db: &Db,
    user: &str,
    routes: &[(&str, &Conditions)],
    limit: u32,
    deadline: std::time::Duration,
) -> Result<Vec<RoutePreview>, SearchError> {
    let _place = super::search_bounds::begin_search_as(user, "preview")?;
    let all = async {
        let mut previews = Vec::with_capacity(routes.len());
        for (source, conditions) in routes {
            previews.push(read_and_decide(db, source, conditions, limit).await?);
        }
        Ok::<_, DbErr>(previews)
    };
    tokio::time::timeout(deadline, all)
        .await
        .map_err(|_| SearchError::TimedOut(deadline))?
        .map_err(SearchError::from)
}

async fn read_and_decide(
    db: &Db,
    source: &str,
    conditions: &Conditions,
    limit: u32,
) -> Result<RoutePreview, DbErr> {
    let mut preview = RoutePreview {
        source: source.to_string(),
        limit,
        ..RoutePreview::default()
    };
    let mut after: Option<(DateTime<Utc>, i64)> = None;
    while preview.considered < limit {
        let want = BATCH.min(limit - preview.considered);
        let rows = batch(db, source, after, want).await?;
        let Some(last) = rows.last() else { break };
        after = Some((last.received_at, last.id));
        let full = rows.len() as u32 == want;
        let conditions = conditions.clone();
        let words = EXAMPLES - preview.unmatched_examples.len();
        let decided = crate::blocking::run(move || decide(&conditions, rows, words))
            .await
            .ok_or_else(|| DbErr::Custom("the preview's work failed".into()))?;
        for (id, result) in decided {
            preview.considered += 1;
            match result {
                Some(Ok(())) => {
                    preview.matched += 1;
                    if preview.matched_ids.len() < EXAMPLES {
                        preview.matched_ids.push(id);
                    }
                }
                Some(Err(why)) => {
                    preview.unmatched += 1;
                    if preview.unmatched_ids.len() < EXAMPLES {
                        preview.unmatched_ids.push(id);
                        preview.unmatched_examples.push(Unmatched { id, why });
                    }
                }
                None => preview.body_expired += 1,
            }
        }
        if !full {
            break;
        }
    }
    Ok(preview)
}

/// One stored delivery as a preview reads it.
struct Row {
    id: i64,
    received_at: DateTime<Utc>,
    event_type: Option<String>,
    body: Vec<u8>,
    body_fields: Option<String>,
    expired: bool,
}

/// Each row's verdict: `None` when the conditions read a body that expired. The failed
/// condition is put in words for the first `words` unmatched rows only (the examples still to
/// give); the others are counted.
fn decide(
    conditions: &Conditions,
    rows: Vec<Row>,
    mut words: usize,
) -> Vec<(i64, Option<Result<(), String>>)> {
    rows.into_iter()
        .map(|row| {
            if row.expired && conditions.reads_body() {
                return (row.id, None);
            }
            let delivery = Delivery {
                event_type: row.event_type.as_deref(),
                body_fields: row.body_fields.as_deref(),
                body: &row.body,
            };
            let verdict = conditions
                .check_delivery(&delivery, words > 0)
                .map_err(|unmet| {
                    words = words.saturating_sub(1);
                    unmet.map(|u| u.to_string()).unwrap_or_default()
                });
            (row.id, Some(verdict))
        })
        .collect()
}

async fn batch(
    db: &Db,
    source: &str,
    after: Option<(DateTime<Utc>, i64)>,
    want: u32,
) -> Result<Vec<Row>, DbErr> {
    let forwarded: Vec<String> = OutcomeKind::ALL
        .iter()
        .filter(|kind| kind.forwards())
        .map(|kind| format!("'{}'", kind.as_str()))
        .collect();
    let mut values: Vec<sea_orm::Value> = vec![source.into()];
    let mut sql = format!(
        "SELECT id, received_at, event_type, body, body_fields,
                body_expired_at IS NOT NULL AS expired
         FROM webhook_events
         WHERE source = $1 AND replay_of IS NULL AND outcome IN ({})",
        forwarded.join(", ")
    );
    if let Some((at, id)) = after {
        // The bound on `received_at` alone lets the source's index seek to the next batch.
        sql.push_str(" AND received_at <= $2 AND (received_at, id) < ($3, $4)");
        values.push(at.into());
        values.push(at.into());
        values.push(id.into());
    }
    sql.push_str(&format!(" ORDER BY received_at DESC, id DESC LIMIT {want}"));
    let rows = db
        .dashboard
        .query_all_raw(super::statement(db.backend(), sql, values))
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Row {
                id: row.try_get("", "id")?,
                received_at: row.try_get("", "received_at")?,
                event_type: row.try_get("", "event_type")?,
                body: row
                    .try_get::<Option<Vec<u8>>>("", "body")?
                    .unwrap_or_default(),
                body_fields: row.try_get("", "body_fields")?,
                expired: row.try_get("", "expired")?,
            })
        })
        .collect()
}

/// Why each destination of `source` (today's config) was or was not sent the stored delivery:
/// `sent` is what the forward deliveries say happened; `why` is what the routes decide for it
/// now (the file may have changed since it arrived: then both are said).
pub fn verdicts(
    plan: Plan<'_>,
    outcome: OutcomeKind,
    delivery: &Delivery<'_>,
    sent_to: &[String],
) -> Vec<DestinationVerdict> {
    plan.verdicts(delivery)
        .into_iter()
        .map(|(destination, verdict)| {
            let sent = sent_to.contains(&destination);
            let why = match (outcome.forwards(), sent, verdict.sends()) {
                (false, false, _) => format!(
                    "not sent: a delivery that is {} is never forwarded",
                    outcome.as_str()
                ),
                (_, true, true) | (true, false, false) => verdict.to_string(),
                (_, true, false) => format!(
                    "sent when it arrived; the routes have changed since, and today: {verdict}"
                ),
                (true, false, true) => format!(
                    "{verdict}, but no forward delivery was made: the routes have changed since it arrived"
                ),
            };
            DestinationVerdict {
                destination,
                sent,
                why,
            }
        })
        .collect()
}
