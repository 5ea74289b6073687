//! The overview: counts by source and status over 24 hours and 7 days, the chart's days, the
//! newest failures and the last invariant check. Finished days come from the daily rollup
//! (`archive_day_counts`), which [`roll_up_finished_days`] fills on first need; ingest never
//! writes there.

use super::Db;
use super::events::list_events;
use super::filter::{QueryError, start_of};
use crate::model::{CountRow, EventFilter, Overview, Status};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use sea_orm::{ConnectionTrait, DbErr, Statement, TransactionTrait, Value};

fn add_status(row: &mut CountRow, status: Status, n: i64) {
    match status {
        Status::Processed => row.processed += n,
        Status::Skipped => row.skipped += n,
        Status::Failed => row.failed += n,
    }
}

/// A stored status; one hookbox does not know is an error, never silently counted as another.
fn status_of(text: &str) -> Result<Status, DbErr> {
    Status::parse(text).ok_or_else(|| DbErr::Type(format!("unknown archive status {text:?}")))
}

/// Adds `n` deliveries of `status` to the row labelled `label`.
fn add_count(rows: &mut Vec<CountRow>, label: &str, status: Status, n: i64) {
    match rows.iter_mut().find(|r| r.label == label) {
        Some(row) => add_status(row, status, n),
        None => {
            let mut row = CountRow {
                label: label.to_string(),
                processed: 0,
                skipped: 0,
                failed: 0,
            };
            add_status(&mut row, status, n);
            rows.push(row);
        }
    }
}

/// How long after a day ends its counts are rolled up: every transaction that began that day
/// has committed by then (deliveries take seconds; the grace period is 30 s).
const ROLLUP_DELAY: Duration = Duration::hours(1);

/// Rolls up the finished days in `days` that are not yet in `archive_day_counts`, one
/// transaction per day (migration m20261130_000005). Concurrent callers write the same rows; the
/// primary keys keep one copy.
async fn roll_up_finished_days(
    db: &Db,
    days: &[NaiveDate],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let (Some(first), Some(last)) = (days.first(), days.last()) else {
        return Ok(());
    };
    let counted: Vec<String> = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            "SELECT day FROM archive_days_counted WHERE day >= $1 AND day <= $2",
            vec![first.to_string().into(), last.to_string().into()],
        ))
        .await?
        .iter()
        .map(|row| row.try_get("", "day"))
        .collect::<Result<_, _>>()?;
    for day in days.iter().filter(|d| !counted.contains(&d.to_string())) {
        let writer = db.dashboard_writer().await?;
        let txn = writer.begin().await?;
        txn.execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO archive_day_counts (day, source, status, n)
             SELECT $1, source, status, count(*) FROM webhook_events
              WHERE received_at >= $2 AND received_at < $3
              GROUP BY source, status
             ON CONFLICT DO NOTHING",
            vec![
                day.to_string().into(),
                start_of(*day).into(),
                start_of(*day + Duration::days(1)).into(),
            ],
        ))
        .await?;
        txn.execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO archive_days_counted (day, counted_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            vec![day.to_string().into(), now.into()],
        ))
        .await?;
        txn.commit().await?;
    }
    Ok(())
}

/// The overview: counts over the last 24 hours, and per source and per day over the chart's
/// seven days (today and the six before, UTC).
///
/// Finished days come from the daily rollup (filled here on first need); only today, and
/// yesterday during the first hour after midnight, are counted live, together with the rolling
/// 24 hours, in one index-only range scan (migration m20261130_000004).
pub async fn overview(db: &Db, sources_configured: usize) -> Result<Overview, DbErr> {
    let now = Utc::now();
    let today = now.date_naive();
    let chart: Vec<NaiveDate> = (0..7).rev().map(|i| today - Duration::days(i)).collect();
    let live_from_day = if now >= start_of(today) + ROLLUP_DELAY {
        today
    } else {
        today - Duration::days(1)
    };
    let finished: Vec<NaiveDate> = chart
        .iter()
        .copied()
        .filter(|d| *d < live_from_day)
        .collect();
    roll_up_finished_days(db, &finished, now).await?;

    let mut by_source_24h = Vec::new();
    let mut by_source_7d = Vec::new();
    let mut by_day: Vec<CountRow> = chart
        .iter()
        .map(|day| CountRow {
            label: day.to_string(),
            processed: 0,
            skipped: 0,
            failed: 0,
        })
        .collect();

    let rolled = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            "SELECT day, source, status, n FROM archive_day_counts WHERE day >= $1 AND day < $2",
            vec![
                chart[0].to_string().into(),
                live_from_day.to_string().into(),
            ],
        ))
        .await?;
    for row in &rolled {
        let day: String = row.try_get("", "day")?;
        let source: String = row.try_get("", "source")?;
        let status = status_of(&row.try_get::<String>("", "status")?)?;
        let n: i64 = row.try_get("", "n")?;
        add_count(&mut by_source_7d, &source, status, n);
        if let Some(bar) = by_day.iter_mut().find(|bar| bar.label == day) {
            add_status(bar, status, n);
        }
    }

    // The live part: by source, status, chart day (an index into `chart` for the live days; -1
    // before them, rows that only count in the 24 hours) and whether in the last 24 hours. The
    // day is found by comparing with its bounds, not by formatting each row's time.
    let live_from = start_of(live_from_day);
    let mut values: Vec<Value> = vec![
        live_from.min(now - Duration::hours(24)).into(),
        (now - Duration::hours(24)).into(),
    ];
    let mut day = String::from("CASE");
    for (i, d) in chart.iter().enumerate().rev() {
        if *d < live_from_day {
            break;
        }
        values.push(start_of(*d).into());
        day.push_str(&format!(" WHEN received_at >= ${} THEN {i}", values.len()));
    }
    day.push_str(" ELSE -1 END");
    let live = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            format!(
                "SELECT source, status, {day} AS day, CASE WHEN received_at >= $2 THEN 1 ELSE 0 END AS last_24h,
                        count(*) AS n
                 FROM webhook_events WHERE received_at >= $1 GROUP BY 1, 2, 3, 4"
            ),
            values,
        ))
        .await?;
    for row in &live {
        let source: String = row.try_get("", "source")?;
        let status = status_of(&row.try_get::<String>("", "status")?)?;
        let day: i32 = row.try_get("", "day")?;
        let last_24h: i32 = row.try_get("", "last_24h")?;
        let n: i64 = row.try_get("", "n")?;
        if last_24h == 1 {
            add_count(&mut by_source_24h, &source, status, n);
        }
        if let Some(bar) = usize::try_from(day).ok().and_then(|d| by_day.get_mut(d)) {
            add_status(bar, status, n);
            add_count(&mut by_source_7d, &source, status, n);
        }
    }
    by_source_24h.sort_by(|a, b| a.label.cmp(&b.label));
    by_source_7d.sort_by(|a, b| a.label.cmp(&b.label));
    let has_events = db
        .conn
        .query_one_raw(Statement::from_string(
            db.backend(),
            "SELECT id FROM webhook_events LIMIT 1",
        ))
        .await?
        .is_some();
    let newest_failures = list_events(
        db,
        &EventFilter {
            status: Some(Status::Failed.as_str().into()),
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
        by_day,
        newest_failures,
        last_verify,
        destinations_in_trouble: Vec::new(),
        refused_24h: super::rejected::counts_since(db, now - Duration::hours(24)).await?,
    })
}
