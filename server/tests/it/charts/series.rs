//! A destination's attempts by hour: the success rate and the latency percentiles of known
//! attempts, in the viewer's zone, other destinations' attempts and older ones left out; the
//! bound on what one reading takes; the endpoint for a viewer.

use super::*;
use app::db::destinations::series::{SERIES_ATTEMPTS, attempts_by_hour};
use app::model::AttemptBar;

/// A delivered forward delivery of `destination`; returns its id.
async fn delivery(db: &Db, destination: &str, event_id: &str) -> i64 {
    db.dashboard
        .execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO forward_deliveries (destination, source, event_id, status, attempts,
                 next_attempt_at, created_at, received_at, payload)
             VALUES ($1, 'shop', $2, 'delivered', 1, $3, $3, $3, '{}')",
            vec![destination.into(), event_id.into(), now().into()],
        ))
        .await
        .unwrap();
    scalar(db, "SELECT max(id) FROM forward_deliveries", vec![])
        .await
        .unwrap()
}

async fn attempt(
    db: &Db,
    delivery: i64,
    n: i32,
    started: DateTime<Utc>,
    ms: i64,
    status: Option<i32>,
) {
    db.dashboard
        .execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO forward_attempts (delivery_id, attempt, started_at, duration_ms, status_code)
             VALUES ($1, $2, $3, $4, $5)",
            vec![delivery.into(), n.into(), started.into(), ms.into(), status.into()],
        ))
        .await
        .unwrap();
}

/// An hour as the tests compare it: (label, attempts, succeeded, p50, p95).
type Hour = (String, i64, i64, Option<i64>, Option<i64>);

/// The hours with attempts.
fn busy_hours(bars: &[AttemptBar]) -> Vec<Hour> {
    bars.iter()
        .filter(|b| b.attempts > 0)
        .map(|b| (b.label.clone(), b.attempts, b.succeeded, b.p50_ms, b.p95_ms))
        .collect()
}

both_backends!(a_destinations_success_rate_and_latency_by_hour_come_from_its_attempts);
async fn a_destinations_success_rate_and_latency_by_hour_come_from_its_attempts(backend: Backend) {
    use chrono::Duration;
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let now = now();
    // In the hour of 10:00 UTC: 20 attempts of 10, 20 … 200 ms, the 7th and the 14th answered 500.
    let busy = delivery(db, "orders-app", "e1").await;
    for n in 1..=20 {
        let status = if n % 7 == 0 { 500 } else { 200 };
        let started = at("2026-12-03T10:00:00Z") + Duration::seconds(i64::from(n));
        attempt(db, busy, n, started, i64::from(n) * 10, Some(status)).await;
    }
    // At 08:15 UTC one timed out (no answer); a day ago one more, outside the window.
    let slow = delivery(db, "orders-app", "e2").await;
    attempt(db, slow, 1, at("2026-12-03T08:15:00Z"), 5000, None).await;
    attempt(db, slow, 2, now - Duration::hours(25), 1, Some(200)).await;
    // Another destination's attempt in the same hour is not this one's.
    let other = delivery(db, "other-app", "e3").await;
    attempt(db, other, 1, at("2026-12-03T10:05:00Z"), 99_999, Some(500)).await;

    let series = attempts_by_hour(db, "orders-app", Tz::UTC, now)
        .await
        .unwrap();
    assert_eq!(series.zone, "UTC");
    assert_eq!(series.hours.len(), 24);
    assert_eq!(series.partial_since, None);
    assert_eq!(
        busy_hours(&series.hours),
        [
            ("08:00".to_string(), 1, 0, Some(5000), Some(5000)),
            ("10:00".to_string(), 20, 18, Some(100), Some(190)),
        ],
        "{backend:?}"
    );
    assert_eq!(series.hours[23].success_percent(), Some(90.0));

    // In Kolkata the hours begin at :30 UTC: 10:00–10:00:20 UTC is in the hour of 15:00 there.
    let kolkata = attempts_by_hour(db, "orders-app", kolkata(), now)
        .await
        .unwrap();
    assert_eq!(
        busy_hours(&kolkata.hours),
        [
            ("13:00".to_string(), 1, 0, Some(5000), Some(5000)),
            ("15:00".to_string(), 20, 18, Some(100), Some(190)),
        ],
        "{backend:?}: Kolkata"
    );
    assert_eq!(kolkata.hours[23].start, "2026-12-03T15:00:00+05:30");
}

both_backends!(one_reading_of_a_busy_destination_takes_its_newest_attempts_up_to_the_bound);
async fn one_reading_of_a_busy_destination_takes_its_newest_attempts_up_to_the_bound(
    backend: Backend,
) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let busy = delivery(db, "busy-app", "e1").await;
    let attempts = SERIES_ATTEMPTS as i64 + 5;
    // One attempt a second from 06:00 UTC: the five oldest are left out of the reading.
    let start = at("2026-12-03T06:00:00Z");
    for chunk in (1..=attempts).collect::<Vec<_>>().chunks(2000) {
        let rows: Vec<String> = (1..=chunk.len())
            .zip(chunk)
            .map(|(i, n)| format!("({busy}, {n}, ${i}, 20, 200)"))
            .collect();
        let times: Vec<sea_orm::Value> = chunk
            .iter()
            .map(|n| (start + chrono::Duration::seconds(*n)).into())
            .collect();
        db.dashboard
            .execute_raw(Statement::from_sql_and_values(
                db.backend(),
                format!(
                    "INSERT INTO forward_attempts (delivery_id, attempt, started_at, duration_ms, status_code) VALUES {}",
                    rows.join(", ")
                ),
                times,
            ))
            .await
            .unwrap();
    }
    let series = attempts_by_hour(db, "busy-app", Tz::UTC, now())
        .await
        .unwrap();
    let read: i64 = series.hours.iter().map(|b| b.attempts).sum();
    assert_eq!(
        read, SERIES_ATTEMPTS as i64,
        "{backend:?}: one reading takes at most its bound"
    );
    assert_eq!(
        series.partial_since.as_deref(),
        Some((start + chrono::Duration::seconds(6)).to_rfc3339().as_str()),
        "{backend:?}: it says from when it counted"
    );
}

#[tokio::test]
async fn a_viewer_reads_a_destinations_series_in_the_zone_of_the_cookie() {
    let (app, _receiver, _operator, viewer) =
        crate::resend::forwarding_app(Backend::Sqlite, "[60]").await;
    crate::resend::delivered(&app, "e1", "order-1", 1, 1).await;
    let cookie = format!("{viewer}; hookbox_tz=Europe%2FBerlin");
    let (status, body) = call(
        &app,
        &cookie,
        "destination_series",
        &[("name", "orders-app")],
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let series = crate::resend::json(&body);
    assert_eq!(series["zone"], "Europe/Berlin");
    let hours = series["hours"].as_array().unwrap();
    assert_eq!(hours.len(), 24);
    // The attempt is in the newest bar, or the one before it when the hour turned meanwhile.
    let count = |key: &str| -> (i64, i64) {
        let at = |i: usize| hours[i][key].as_i64().unwrap();
        (
            at(22) + at(23),
            hours.iter().map(|bar| bar[key].as_i64().unwrap()).sum(),
        )
    };
    assert_eq!(count("attempts"), (1, 1), "{series}");
    assert_eq!(count("succeeded"), (1, 1), "{series}");
    let (status, _) = call(&app, &cookie, "destination_series", &[("name", "nowhere")]).await;
    assert_eq!(status, reqwest::StatusCode::NOT_FOUND);
    let (status, _) = call(&app, "", "destination_series", &[("name", "orders-app")]).await;
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);
}
