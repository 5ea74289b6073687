//! The overview: sender deliveries by source and status over the chart's 24 hours and 7 days, by
//! hour and by day in the viewer's zone; the newest failures and the last invariant check.
//!
//! Counts come by quarter hour, replays left out: finished quarters from the rollup
//! (`archive_quarter_counts`, migration m20261203_000015), which [`roll_up`] fills on first need
//! ([decision 0011](../../../docs/decisions/0011-overview-quarter-hour-rollup.md)); the last
//! minutes from the archive. Every zone's hours and days begin on a quarter hour, so each bar is
//! a sum of whole quarters. Ingest never writes to the rollup.

use super::Db;
use super::dialect::Dialect;
use super::events::list_events;
use super::filter::QueryError;
use crate::model::{CountRow, EventFilter, Kept, Overview, Status, Volume, VolumeBar};
use crate::present::zone::{day_of, local_hour_start, local_midnight};
use chrono::{DateTime, Duration, Utc};
pub use chrono_tz::Tz;
use sea_orm::{ConnectionTrait, DatabaseBackend, DbErr, TransactionTrait};

/// The rollup's period, in seconds.
pub const QUARTER: i64 = 15 * 60;

/// How long after a quarter ends it is rolled up: every transaction that began in it has
/// committed by then (deliveries take seconds; the shutdown grace is 30 s).
pub const ROLLUP_DELAY: Duration = Duration::minutes(10);

/// How far back the rollup keeps quarters: the chart's 7 days from the earliest midnight any
/// zone has, and a day to spare. The daily purge deletes older ones ([`purge_rollup`]).
pub const ROLLUP_KEPT: Duration = Duration::days(8);

/// The quarter hour `time` falls in, as the Unix time of its start.
pub fn quarter_of(time: DateTime<Utc>) -> i64 {
    time.timestamp().div_euclid(QUARTER) * QUARTER
}

/// The start of the quarter (Unix seconds) an archive row's `received_at` falls in, in SQL.
fn quarter_sql(backend: DatabaseBackend) -> String {
    Dialect::of(backend).period_start("received_at", QUARTER)
}

/// A period of the chart: its start, and its label in the viewer's zone.
pub type Period = (DateTime<Utc>, String);

/// The chart's periods in `zone` at `now`: (start, label) of the 24 hours, then of the 7 days,
/// oldest first.
pub fn periods(zone: Tz, now: DateTime<Utc>) -> (Vec<Period>, Vec<Period>) {
    let hour = local_hour_start(zone, now);
    let hours = (0..24)
        .rev()
        .map(|i| {
            let start = hour - Duration::hours(i);
            (
                start,
                start.with_timezone(&zone).format("%H:%M").to_string(),
            )
        })
        .collect();
    let today = day_of(zone, now);
    let days = (0..7)
        .rev()
        .map(|i| {
            let day = today - Duration::days(i);
            (
                local_midnight(zone, day),
                day.format("%a %-d %b").to_string(),
            )
        })
        .collect();
    (hours, days)
}

/// A stored status; one hookbox does not know is an error, never silently counted as another.
fn status_of(text: &str) -> Result<Status, DbErr> {
    Status::parse(text).ok_or_else(|| DbErr::Type(format!("unknown archive status {text:?}")))
}

fn add(processed: &mut i64, skipped: &mut i64, failed: &mut i64, status: Status, n: i64) {
    match status {
        Status::Processed => *processed += n,
        Status::Skipped => *skipped += n,
        Status::Failed => *failed += n,
    }
}

/// Adds `n` deliveries of `status` to the row labelled `label`.
fn add_count(rows: &mut Vec<CountRow>, label: &str, status: Status, n: i64) {
    let i = match rows.iter().position(|r| r.label == label) {
        Some(i) => i,
        None => {
            rows.push(CountRow {
                label: label.to_string(),
                processed: 0,
                skipped: 0,
                failed: 0,
            });
            rows.len() - 1
        }
    };
    let row = &mut rows[i];
    add(
        &mut row.processed,
        &mut row.skipped,
        &mut row.failed,
        status,
        n,
    );
}

/// The quarters `[first, end)` the rollup must add so that it holds `need`, given the range it
/// holds (`counted`), and the range it holds afterwards. A range apart from the one held
/// replaces it (the quarters between are never filled).
fn to_fill(counted: Option<(i64, i64)>, need: (i64, i64)) -> (Vec<(i64, i64)>, (i64, i64)) {
    let (c, d) = need;
    if c >= d {
        return (Vec::new(), counted.unwrap_or(need));
    }
    match counted {
        Some((a, b)) if c <= b && d >= a => {
            let mut fill = Vec::new();
            if c < a {
                fill.push((c, a));
            }
            if d > b {
                fill.push((b, d));
            }
            (fill, (a.min(c), b.max(d)))
        }
        _ => (vec![need], need),
    }
}

/// Rolls up the finished quarters of `[first, end)` (Unix seconds) the rollup does not hold yet,
/// in one transaction. Concurrent callers write the same counts; the primary key keeps one copy.
pub async fn roll_up(db: &Db, first: i64, end: i64, now: DateTime<Utc>) -> Result<(), DbErr> {
    let backend = db.backend();
    let counted = db
        .dashboard
        .query_one_raw(crate::db::statement(
            backend,
            "SELECT first_quarter, end_quarter FROM archive_quarters_counted WHERE id = 1",
            vec![],
        ))
        .await?
        .map(|row| -> Result<(i64, i64), DbErr> {
            Ok((
                row.try_get("", "first_quarter")?,
                row.try_get("", "end_quarter")?,
            ))
        })
        .transpose()?;
    let (fill, held) = to_fill(counted, (first, end));
    if fill.is_empty() {
        return Ok(());
    }
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    for (from, to) in fill {
        txn.execute_raw(crate::db::statement(
            backend,
            format!(
                "INSERT INTO archive_quarter_counts (quarter, source, status, n)
                 SELECT {quarter}, source, status, count(*) FROM webhook_events
                  WHERE received_at >= $1 AND received_at < $2 AND replay_of IS NULL
                  GROUP BY 1, source, status
                 ON CONFLICT DO NOTHING",
                quarter = quarter_sql(backend)
            ),
            vec![at(from).into(), at(to).into()],
        ))
        .await?;
    }
    txn.execute_raw(crate::db::statement(
        backend,
        "INSERT INTO archive_quarters_counted (id, first_quarter, end_quarter, counted_at)
         VALUES (1, $1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET first_quarter = excluded.first_quarter,
             end_quarter = excluded.end_quarter, counted_at = excluded.counted_at",
        vec![held.0.into(), held.1.into(), now.into()],
    ))
    .await?;
    txn.commit().await
}

/// The UTC time of a Unix second.
fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(seconds, 0).unwrap_or_default()
}

/// Deletes the rollup's quarters that began before `older_than`, and narrows its range to
/// match; returns how many rows went. Run by the daily purge.
pub async fn purge_rollup(db: &Db, older_than: DateTime<Utc>) -> Result<u64, DbErr> {
    let quarter = quarter_of(older_than);
    let conn = db.maintenance();
    let backend = conn.get_database_backend();
    let deleted = conn
        .execute_raw(crate::db::statement(
            backend,
            "DELETE FROM archive_quarter_counts WHERE quarter < $1",
            vec![quarter.into()],
        ))
        .await?
        .rows_affected();
    conn.execute_raw(crate::db::statement(
        backend,
        "UPDATE archive_quarters_counted
            SET first_quarter = CASE WHEN end_quarter < $1 THEN end_quarter ELSE $1 END
          WHERE first_quarter < $1",
        vec![quarter.into()],
    ))
    .await?;
    Ok(deleted)
}

/// The overview's counts in `zone` at `now`: per source over the chart's 24 hours and 7 days,
/// and the chart's bars. Sender traffic only: replays are not counted.
pub async fn volume(
    db: &Db,
    zone: Tz,
    now: DateTime<Utc>,
) -> Result<(Vec<CountRow>, Vec<CountRow>, Volume), DbErr> {
    let (hours, days) = periods(zone, now);
    let (day_start, hour_start) = (days[0].0, hours[0].0);
    let first = quarter_of(day_start);
    let live_from = quarter_of(now - ROLLUP_DELAY).max(first);
    roll_up(db, first, live_from, now).await?;
    let backend = db.backend();

    // The chart: (quarter, status, n), from the rollup and the minutes since.
    let quarter = quarter_sql(backend);
    let by_quarter = db
        .dashboard
        .query_all_raw(crate::db::statement(
            backend,
            format!(
                "SELECT quarter, status, CAST(sum(n) AS BIGINT) AS n FROM archive_quarter_counts
                  WHERE quarter >= $1 AND quarter < $2 GROUP BY quarter, status
                 UNION ALL
                 SELECT {quarter}, status, count(*) FROM webhook_events
                  WHERE received_at >= $3 AND replay_of IS NULL GROUP BY 1, status"
            ),
            vec![first.into(), live_from.into(), at(live_from).into()],
        ))
        .await?;
    let bar = |(start, label): &Period| VolumeBar {
        start: start.with_timezone(&zone).to_rfc3339(),
        label: label.clone(),
        processed: 0,
        skipped: 0,
        failed: 0,
    };
    let mut volume = Volume {
        zone: zone.name().to_string(),
        hours: hours.iter().map(bar).collect(),
        days: days.iter().map(bar).collect(),
    };
    // The bar a quarter counts in: the last whose start is not after it.
    let place =
        |starts: &[Period], q: i64| starts.iter().rposition(|(start, _)| start.timestamp() <= q);
    for row in &by_quarter {
        let q: i64 = row.try_get("", "quarter")?;
        let status = status_of(&row.try_get::<String>("", "status")?)?;
        let n: i64 = row.try_get("", "n")?;
        for (bars, starts) in [(&mut volume.hours, &hours), (&mut volume.days, &days)] {
            if let Some(b) = place(starts, q).map(|i| &mut bars[i]) {
                add(&mut b.processed, &mut b.skipped, &mut b.failed, status, n);
            }
        }
    }

    // The tables: per source and status, over the 24 hours and the 7 days.
    let by_source = db
        .dashboard
        .query_all_raw(crate::db::statement(
            backend,
            format!(
                "SELECT source, status, CAST(sum(CASE WHEN q >= $4 THEN n ELSE 0 END) AS BIGINT) AS hours,
                        CAST(sum(n) AS BIGINT) AS days
                 FROM (SELECT quarter AS q, source, status, n FROM archive_quarter_counts
                        WHERE quarter >= $1 AND quarter < $2
                       UNION ALL
                       SELECT {quarter}, source, status, count(*) FROM webhook_events
                        WHERE received_at >= $3 AND replay_of IS NULL GROUP BY 1, source, status) c
                 GROUP BY source, status"
            ),
            vec![
                first.into(),
                live_from.into(),
                at(live_from).into(),
                quarter_of(hour_start).into(),
            ],
        ))
        .await?;
    let (mut by_source_24h, mut by_source_7d) = (Vec::new(), Vec::new());
    for row in &by_source {
        let source: String = row.try_get("", "source")?;
        let status = status_of(&row.try_get::<String>("", "status")?)?;
        let (hours, days): (i64, i64) = (row.try_get("", "hours")?, row.try_get("", "days")?);
        if hours > 0 {
            add_count(&mut by_source_24h, &source, status, hours);
        }
        if days > 0 {
            add_count(&mut by_source_7d, &source, status, days);
        }
    }
    by_source_24h.sort_by(|a, b| a.label.cmp(&b.label));
    by_source_7d.sort_by(|a, b| a.label.cmp(&b.label));
    Ok((by_source_24h, by_source_7d, volume))
}

/// The overview in the viewer's `zone`: [`volume`]'s counts now, the newest open failures, the last
/// invariant check and the last 24 hours' refusals.
pub async fn overview(db: &Db, sources_configured: usize, zone: Tz) -> Result<Overview, DbErr> {
    let now = Utc::now();
    let (by_source_24h, by_source_7d, volume) = volume(db, zone, now).await?;
    let has_events = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT id FROM webhook_events LIMIT 1",
            vec![],
        ))
        .await?
        .is_some();
    let newest_failures = list_events(
        db,
        &EventFilter {
            status: Some(Status::Failed.as_str().into()),
            // Open failures only: one a replay resolved, or whose cause was resolved or
            // ignored, needs nobody (`db::open_failures`, the failed list's "open only").
            open: Some("1".into()),
            ..Default::default()
        },
        None,
    )
    .await
    .map_err(|e| match e {
        QueryError::Db(e) => e,
        QueryError::BadFilter(m) => DbErr::Custom(m),
    })?
    .rows
    .into_iter()
    .take(10)
    .collect();
    let last_verify = super::verify_runs::last_run(db).await?;
    Ok(Overview {
        sources_configured,
        has_events,
        by_source_24h,
        by_source_7d,
        volume,
        newest_failures,
        last_verify,
        destinations_in_trouble: Vec::new(),
        refused_24h: super::rejected::counts_since(db, now - Duration::hours(24)).await?,
        // Filled by the overview's server function (`db::problems::open_counts`).
        problems: Default::default(),
        kept: kept(db).await?,
        // Filled by the overview's server function (the configured channels').
        failing_channels: Vec::new(),
    })
}

/// What the archive keeps now ([`Kept`]): its size, one catalogue read, and its oldest row, one
/// end of the time index.
pub async fn kept(db: &Db) -> Result<Kept, DbErr> {
    let dialect = Dialect::of(db.backend());
    let size = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            dialect.archive_size(),
            vec![],
        ))
        .await?;
    let bytes = match size {
        Some(row) => row.try_get::<i64>("", "bytes")?,
        None => 0,
    };
    let oldest = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT received_at FROM webhook_events ORDER BY received_at LIMIT 1",
            vec![],
        ))
        .await?
        .map(|row| row.try_get::<DateTime<Utc>>("", "received_at"))
        .transpose()?;
    Ok(Kept {
        bytes,
        whole_database: dialect == Dialect::Sqlite,
        oldest: oldest.map(|at| at.to_rfc3339()),
        cold: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rollup_fills_only_what_it_lacks_and_replaces_a_range_apart() {
        assert_eq!(to_fill(None, (10, 20)), (vec![(10, 20)], (10, 20)));
        assert_eq!(to_fill(Some((10, 20)), (12, 18)), (vec![], (10, 20)));
        assert_eq!(
            to_fill(Some((10, 20)), (15, 25)),
            (vec![(20, 25)], (10, 25))
        );
        assert_eq!(
            to_fill(Some((10, 20)), (5, 25)),
            (vec![(5, 10), (20, 25)], (5, 25))
        );
        assert_eq!(
            to_fill(Some((10, 20)), (30, 40)),
            (vec![(30, 40)], (30, 40))
        );
        assert_eq!(to_fill(Some((10, 20)), (20, 20)), (vec![], (10, 20)));
    }

    #[test]
    fn hours_and_days_begin_on_quarter_hours_in_every_zone_and_are_labelled_locally() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T10:07:30Z")
            .expect("time")
            .with_timezone(&Utc);
        for zone in [
            chrono_tz::UTC,
            chrono_tz::Asia::Kolkata,
            chrono_tz::Asia::Kathmandu,
        ] {
            let (hours, days) = periods(zone, now);
            assert_eq!((hours.len(), days.len()), (24, 7));
            for (start, _) in hours.iter().chain(&days) {
                assert_eq!(start.timestamp() % QUARTER, 0, "{zone}: {start}");
            }
        }
        let (hours, days) = periods(chrono_tz::Asia::Kolkata, now);
        // 10:07 UTC is 15:37 in Kolkata: the current hour began at 15:00 there, 09:30 UTC.
        assert_eq!(hours[23].1, "15:00");
        assert_eq!(hours[23].0.to_rfc3339(), "2026-12-03T09:30:00+00:00");
        assert_eq!(days[6].1, "Thu 3 Dec");
        assert_eq!(days[6].0.to_rfc3339(), "2026-12-02T18:30:00+00:00");
    }
}
