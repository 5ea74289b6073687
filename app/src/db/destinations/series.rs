//! A destination's attempts by hour over the last 24 hours, in the viewer's zone: how many, the
//! share answered 2xx, and the median and 95th percentile of their durations.
//!
//! One bounded read: the destination's attempts started in the window, newest first, at most
//! [`SERIES_ATTEMPTS`] of them (through `ix_forward_attempts_started`), counted in hookbox. When
//! a busy destination made more, the hours before the oldest one read are said to be partial.

use super::super::Db;
use crate::model::{AttemptBar, DestinationSeries};
use crate::present::zone::local_hour_start;
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};

/// The most attempts one reading of a destination's series takes.
pub const SERIES_ATTEMPTS: usize = 10_000;

#[derive(FromQueryResult)]
struct Attempt {
    started_at: DateTime<Utc>,
    duration_ms: i64,
    status_code: Option<i32>,
}

/// The `q`-quantile of sorted `values` by nearest rank (`q` in (0, 1]).
fn nearest_rank(sorted: &[i64], q: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// `destination`'s attempts by hour: the current hour in `zone` and the 23 before it.
pub async fn attempts_by_hour(
    db: &Db,
    destination: &str,
    zone: Tz,
    now: DateTime<Utc>,
) -> Result<DestinationSeries, DbErr> {
    let current = local_hour_start(zone, now);
    let starts: Vec<DateTime<Utc>> = (0..24)
        .rev()
        .map(|i| current - Duration::hours(i))
        .collect();
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            "SELECT a.started_at, a.duration_ms, a.status_code
             FROM forward_attempts a JOIN forward_deliveries d ON d.id = a.delivery_id
             WHERE d.destination = $1 AND a.started_at >= $2
             ORDER BY a.started_at DESC LIMIT $3",
            vec![
                destination.into(),
                starts[0].into(),
                (SERIES_ATTEMPTS as i64).into(),
            ],
        ))
        .await?;
    let attempts = rows
        .iter()
        .map(|r| Attempt::from_query_result(r, ""))
        .collect::<Result<Vec<_>, _>>()?;
    let partial_since = (attempts.len() >= SERIES_ATTEMPTS)
        .then(|| {
            attempts
                .last()
                .map(|a| a.started_at.with_timezone(&zone).to_rfc3339())
        })
        .flatten();
    let mut durations: Vec<Vec<i64>> = vec![Vec::new(); starts.len()];
    let mut succeeded = vec![0i64; starts.len()];
    for a in &attempts {
        let Some(i) = starts.iter().rposition(|s| *s <= a.started_at) else {
            continue;
        };
        durations[i].push(a.duration_ms);
        if a.status_code.is_some_and(|c| (200..300).contains(&c)) {
            succeeded[i] += 1;
        }
    }
    let hours = starts
        .iter()
        .zip(durations.iter_mut().zip(succeeded))
        .map(|(start, (took, succeeded))| {
            took.sort_unstable();
            let local = start.with_timezone(&zone);
            AttemptBar {
                start: local.to_rfc3339(),
                label: local.format("%H:%M").to_string(),
                attempts: took.len() as i64,
                succeeded,
                p50_ms: nearest_rank(took, 0.5),
                p95_ms: nearest_rank(took, 0.95),
            }
        })
        .collect();
    Ok(DestinationSeries {
        zone: zone.name().to_string(),
        hours,
        partial_since,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_ranks() {
        let twenty: Vec<i64> = (1..=20).map(|n| n * 10).collect();
        assert_eq!(nearest_rank(&twenty, 0.5), Some(100));
        assert_eq!(nearest_rank(&twenty, 0.95), Some(190));
        assert_eq!(nearest_rank(&[7], 0.95), Some(7));
        assert_eq!(nearest_rank(&[], 0.5), None);
    }
}
