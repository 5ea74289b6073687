//! The charts' data (issue 23, item 4): the overview's sender deliveries by hour and by day in
//! the viewer's zone, counted through the quarter-hour rollup with replays left out (a day in
//! Kolkata sums the quarters of its own midnight to midnight), the rollup's purge; a
//! destination's success rate and latency by hour from known attempts, and the bound on what one
//! reading takes; both through the dashboard's endpoints with the zone cookie.
#![allow(clippy::unwrap_used)]

use crate::support::*;
use app::db::Db;
use app::db::overview::Tz;
use app::model::{CountRow, VolumeBar};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, Statement};

mod series;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

/// India's zone: +05:30, so its hours and days begin on the half hour in UTC.
pub(crate) fn kolkata() -> Tz {
    "Asia/Kolkata".parse().unwrap()
}

/// The time every test here reads its charts at: Thursday 3 December 2026, 10:07:30 UTC.
fn now() -> DateTime<Utc> {
    at("2026-12-03T10:07:30Z")
}

/// Archives one delivery; returns its id.
async fn archive(
    db: &Db,
    source: &str,
    status: &str,
    outcome: &str,
    received: DateTime<Utc>,
    replay_of: Option<i64>,
) -> i64 {
    db.dashboard
        .execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO webhook_events (source, status, outcome, headers, body, received_at, replay_of)
             VALUES ($1, $2, $3, '{}', $4, $5, $6)",
            vec![
                source.into(),
                status.into(),
                outcome.into(),
                b"{}".to_vec().into(),
                received.into(),
                replay_of.into(),
            ],
        ))
        .await
        .unwrap();
    scalar(db, "SELECT max(id) FROM webhook_events", vec![])
        .await
        .unwrap()
}

/// (label, processed, skipped, failed) of the bars that have deliveries.
fn busy(bars: &[VolumeBar]) -> Vec<(String, i64, i64, i64)> {
    bars.iter()
        .filter(|b| b.total() > 0)
        .map(|b| (b.label.clone(), b.processed, b.skipped, b.failed))
        .collect()
}

fn rows(counts: &[CountRow]) -> Vec<(String, i64, i64, i64)> {
    counts
        .iter()
        .map(|r| (r.label.clone(), r.processed, r.skipped, r.failed))
        .collect()
}

fn row(label: &str, processed: i64, skipped: i64, failed: i64) -> (String, i64, i64, i64) {
    (label.to_string(), processed, skipped, failed)
}

both_backends!(the_overview_counts_sender_deliveries_by_hour_and_day_in_the_viewers_zone);
async fn the_overview_counts_sender_deliveries_by_hour_and_day_in_the_viewers_zone(
    backend: Backend,
) {
    use app::db::overview::{purge_rollup, volume};
    use chrono::Duration;
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let now = now();
    archive(
        db,
        "shop",
        "processed",
        "applied",
        now - Duration::minutes(3),
        None,
    )
    .await;
    let failed = archive(
        db,
        "shop",
        "failed",
        "invalid",
        now - Duration::hours(2),
        None,
    )
    .await;
    // A bulk replay of it: not sender traffic, not counted.
    archive(
        db,
        "shop",
        "failed",
        "invalid",
        now - Duration::hours(1),
        Some(failed),
    )
    .await;
    archive(
        db,
        "sw",
        "skipped",
        "duplicate",
        now - Duration::hours(23),
        None,
    )
    .await;
    // 23:50 and 00:10 in Kolkata (+05:30): the same UTC day, two days there.
    archive(
        db,
        "shop",
        "processed",
        "applied",
        at("2026-12-02T18:20:00Z"),
        None,
    )
    .await;
    archive(
        db,
        "shop",
        "processed",
        "applied",
        at("2026-12-02T18:40:00Z"),
        None,
    )
    .await;
    archive(
        db,
        "shop",
        "processed",
        "stale",
        at("2026-11-27T00:30:00Z"),
        None,
    )
    .await;
    // 26 November in UTC, 27 November (01:30) in Kolkata: in its chart only.
    archive(
        db,
        "shop",
        "failed",
        "invalid",
        at("2026-11-26T20:00:00Z"),
        None,
    )
    .await;
    archive(
        db,
        "shop",
        "processed",
        "applied",
        at("2026-11-20T12:00:00Z"),
        None,
    )
    .await;

    let (day, week, utc) = volume(db, Tz::UTC, now).await.unwrap();
    assert_eq!(utc.zone, "UTC");
    assert_eq!((utc.hours.len(), utc.days.len()), (24, 7));
    assert_eq!(utc.hours[0].start, "2026-12-02T11:00:00+00:00");
    assert_eq!(utc.days[0].start, "2026-11-27T00:00:00+00:00");
    assert_eq!(
        busy(&utc.hours),
        [
            row("11:00", 0, 1, 0),
            row("18:00", 2, 0, 0),
            row("08:00", 0, 0, 1),
            row("10:00", 1, 0, 0)
        ],
        "{backend:?}: UTC hours"
    );
    assert_eq!(
        busy(&utc.days),
        [
            row("Fri 27 Nov", 1, 0, 0),
            row("Wed 2 Dec", 2, 1, 0),
            row("Thu 3 Dec", 1, 0, 1)
        ],
        "{backend:?}: UTC days"
    );
    assert_eq!(
        rows(&day),
        [row("shop", 3, 0, 1), row("sw", 0, 1, 0)],
        "{backend:?}: 24 hours"
    );
    assert_eq!(
        rows(&week),
        [row("shop", 4, 0, 1), row("sw", 0, 1, 0)],
        "{backend:?}: 7 days"
    );

    let (day, week, in_kolkata) = volume(db, kolkata(), now).await.unwrap();
    assert_eq!(in_kolkata.zone, "Asia/Kolkata");
    assert_eq!(in_kolkata.days[6].start, "2026-12-03T00:00:00+05:30");
    assert_eq!(in_kolkata.hours[23].start, "2026-12-03T15:00:00+05:30");
    assert_eq!(
        busy(&in_kolkata.days),
        [
            row("Fri 27 Nov", 1, 0, 1),
            row("Wed 2 Dec", 1, 1, 0),
            row("Thu 3 Dec", 2, 0, 1)
        ],
        "{backend:?}: a Kolkata day sums its own quarters"
    );
    assert_eq!(
        busy(&in_kolkata.hours),
        [
            row("16:00", 0, 1, 0),
            row("23:00", 1, 0, 0),
            row("00:00", 1, 0, 0),
            row("13:00", 0, 0, 1),
            row("15:00", 1, 0, 0)
        ],
        "{backend:?}: Kolkata hours"
    );
    assert_eq!(rows(&day), [row("shop", 3, 0, 1), row("sw", 0, 1, 0)]);
    assert_eq!(rows(&week), [row("shop", 4, 0, 2), row("sw", 0, 1, 0)]);

    // The finished quarters are in the rollup (the two zones' weeks joined into one range),
    // replays left out; the last minutes were counted from the archive.
    assert_eq!(
        count(
            db,
            "SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM archive_quarter_counts"
        )
        .await,
        6,
        "{backend:?}: the rolled-up deliveries"
    );
    assert_eq!(
        texts(db, "SELECT CAST(first_quarter AS TEXT), CAST(end_quarter AS TEXT) FROM archive_quarters_counted", vec![]).await,
        [vec![
            Some(at("2026-11-26T18:30:00Z").timestamp().to_string()),
            Some(at("2026-12-03T09:45:00Z").timestamp().to_string()),
        ]]
    );
    // A row appearing in a counted quarter afterwards (which ingest cannot do) is not counted:
    // the chart reads the rollup. A new delivery in the last minutes is.
    archive(
        db,
        "shop",
        "processed",
        "applied",
        at("2026-12-02T12:00:00Z"),
        None,
    )
    .await;
    archive(
        db,
        "shop",
        "failed",
        "invalid",
        now - Duration::minutes(1),
        None,
    )
    .await;
    let (_, _, again) = volume(db, Tz::UTC, now).await.unwrap();
    assert_eq!(
        busy(&again.days),
        [
            row("Fri 27 Nov", 1, 0, 0),
            row("Wed 2 Dec", 2, 1, 0),
            row("Thu 3 Dec", 1, 0, 2)
        ],
        "{backend:?}: frozen quarters, live minutes"
    );

    // The purge drops the quarters before its cutoff and narrows the range; a chart that needs
    // them again counts them from the archive.
    let deleted = purge_rollup(db, at("2026-12-01T00:00:00Z")).await.unwrap();
    assert_eq!(
        deleted, 2,
        "{backend:?}: the quarters of 26 and 27 November"
    );
    assert_eq!(
        count(db, "SELECT first_quarter FROM archive_quarters_counted").await,
        at("2026-12-01T00:00:00Z").timestamp()
    );
    let (_, _, refilled) = volume(db, kolkata(), now).await.unwrap();
    assert_eq!(
        busy(&refilled.days)[0],
        row("Fri 27 Nov", 1, 0, 1),
        "{backend:?}: refilled"
    );
}

both_backends!(the_overview_endpoint_draws_its_chart_in_the_zone_of_the_viewers_cookie);
async fn the_overview_endpoint_draws_its_chart_in_the_zone_of_the_viewers_cookie(backend: Backend) {
    let app = spawn_app(backend).await;
    let viewer = signed_in(&app, "vera", app::model::Role::Viewer).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    // A failure: revision 1 of order-1 again, under another event id.
    app.send("shop", &event("e2", "order-1", 1, "{}")).await;
    for (cookie, zone, offset) in [
        (
            format!("{viewer}; hookbox_tz=Asia%2FKolkata"),
            "Asia/Kolkata",
            "+05:30",
        ),
        (
            format!("{viewer}; hookbox_tz=Not%2FA_Zone"),
            "UTC",
            "+00:00",
        ),
        (viewer.clone(), "UTC", "+00:00"),
    ] {
        let (status, body) = call(&app, &cookie, "overview", &[]).await;
        assert_eq!(status, reqwest::StatusCode::OK, "{body}");
        let overview = crate::resend::json(&body);
        let volume = &overview["volume"];
        assert_eq!(volume["zone"], zone, "{cookie}");
        let hours = volume["hours"].as_array().unwrap();
        assert_eq!(hours.len(), 24);
        assert!(
            hours[23]["start"].as_str().unwrap().ends_with(offset),
            "{volume}"
        );
        assert!(
            hours[23]["label"].as_str().unwrap().ends_with(":00"),
            "{volume}"
        );
        // The delivery is in the newest bar, or the one before it when the hour (or the day)
        // turned between the send and this call: in Kolkata an hour turns at half past in UTC.
        let processed = |bars: &[serde_json::Value]| -> Vec<i64> {
            bars.iter()
                .map(|bar| bar["processed"].as_i64().unwrap())
                .collect()
        };
        let by_hour = processed(hours);
        assert_eq!(by_hour.iter().sum::<i64>(), 1, "{volume}");
        assert_eq!(by_hour[22] + by_hour[23], 1, "{volume}");
        let by_day = processed(volume["days"].as_array().unwrap());
        assert_eq!(by_day.iter().sum::<i64>(), 1, "{volume}");
        assert_eq!(by_day[5] + by_day[6], 1, "{volume}");
        assert_eq!(overview["by_source_24h"][0]["label"], "shop");
    }
    // The page itself: the chart with its axes, a title per bar, the text description.
    let response = app
        .client
        .get(app.url("/"))
        .header("Cookie", &viewer)
        .send()
        .await
        .unwrap();
    let html = response.text().await.unwrap();
    assert!(
        html.contains("data-testid=\"volume-hours\""),
        "the 24-hour chart by default"
    );
    assert_eq!(html.matches("data-testid=\"chart-column\"").count(), 24);
    // (Leptos marks the end of a text it may replace with an empty comment, `<!>`.)
    let html = html.replace("<!>", "");
    assert!(
        html.contains(": 0 processed, 0 skipped, 0 failed</title>"),
        "a title per bar"
    );
    let failed = html
        .find("class=\"hatched-bar\"")
        .and_then(|i| html[..i].rfind("<rect").map(|start| &html[start..i]));
    assert!(
        failed.is_some_and(|bar| bar.contains("fill=\"url(#volume-hours-hatch)\"")),
        "failures are hatched: {failed:?}"
    );
    // The page's CSP allows no inline style: nothing on the page may carry one.
    assert!(
        !html.contains(" style=\""),
        "an inline style on the overview"
    );
    assert!(html.contains("Deliveries from senders by hour over the last 24 hours, times in UTC."));
    let response = app
        .client
        .get(app.url("/?chart=days"))
        .header("Cookie", &viewer)
        .send()
        .await
        .unwrap();
    let html = response.text().await.unwrap();
    assert!(
        html.contains("data-testid=\"volume-days\""),
        "the 7-day chart"
    );
    assert_eq!(html.matches("data-testid=\"chart-column\"").count(), 7);
}
