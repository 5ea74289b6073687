//! The pages and their queries: a large archive, the overview's counts, search, the events
//! filter form, out-of-range dates and error pages.

use super::*;

#[tokio::test]
async fn pages_render_over_100_000_archived_deliveries() {
    let app = spawn_app(Backend::Postgres).await;
    sea_orm::ConnectionTrait::execute_unprepared(
        &app.db.dashboard,
        "INSERT INTO webhook_events (source, event_id, object_id, revision, status, outcome, error_message, headers, body, received_at)
         SELECT 'shop', 'seed-' || g, 'order-' || (g % 10000), 1 + g / 10000,
                CASE WHEN g % 20 = 0 THEN 'failed' WHEN g % 5 = 0 THEN 'skipped' ELSE 'processed' END,
                CASE WHEN g % 20 = 0 THEN 'invalid' WHEN g % 5 = 0 THEN 'duplicate' ELSE 'applied' END,
                CASE WHEN g % 20 = 0 THEN 'revision (/revision) must be at least 1' END,
                '{}'::jsonb, '\\x7b7d'::bytea, now() - (g || ' seconds')::interval
         FROM generate_series(1, 100000) g;
         ANALYZE webhook_events;",
    )
    .await
    .expect("seed");
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.expect("sign in");

    for path in [
        "/events",
        "/events?status=failed",
        "/",
        "/events?q=order-42",
    ] {
        let response = app
            .client
            .get(app.url(path))
            .header("Cookie", &cookie)
            .send()
            .await
            .expect("page");
        let status = response.status();
        let html = response.text().await.unwrap_or_default();
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(html.contains("seed-"), "{path} shows archived deliveries");
    }
    let (_, failed) = call(&app, Some(&cookie), "events", &[("status", "failed")]).await;
    assert_eq!(
        failed.matches("\"status\":\"failed\"").count(),
        50,
        "a full page of failed rows"
    );
    assert!(!failed.contains("\"status\":\"processed\""));
}

both_backends!(the_overview_counts_by_source_status_and_day);
/// The overview's counts: by source and status over 24 hours and 7 days, by day for the chart,
/// with rows just outside each window left out.
async fn the_overview_counts_by_source_status_and_day(backend: Backend) {
    use chrono::{Duration, Utc};
    use sea_orm::{ConnectionTrait, Statement};
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let now = Utc::now();
    let rows = [
        ("shop", "processed", "applied", now - Duration::minutes(5)),
        ("shop", "processed", "applied", now - Duration::hours(2)),
        ("shop", "failed", "invalid", now - Duration::hours(23)),
        ("sw", "skipped", "duplicate", now - Duration::hours(25)),
        ("shop", "processed", "stale", now - Duration::days(3)),
        (
            "sw",
            "failed",
            "reused_revision",
            now - Duration::days(6) - Duration::hours(20),
        ),
        (
            "shop",
            "failed",
            "invalid",
            now - Duration::days(7) - Duration::minutes(1),
        ),
    ];
    for (source, status, outcome, at) in rows {
        db.dashboard
            .execute_raw(Statement::from_sql_and_values(
                db.backend(),
                "INSERT INTO webhook_events (source, status, outcome, headers, body, received_at)
                     VALUES ($1, $2, $3, '{}', $4, $5)",
                vec![
                    source.into(),
                    status.into(),
                    outcome.into(),
                    b"{}".to_vec().into(),
                    at.into(),
                ],
            ))
            .await
            .expect("insert an archive row");
    }

    let utc = app::db::overview::Tz::UTC;
    let overview = app::db::overview::overview(db, 2, utc)
        .await
        .expect("overview");

    let counts = |rows: &[app::model::CountRow]| {
        rows.iter()
            .map(|r| (r.label.clone(), r.processed, r.skipped, r.failed))
            .collect::<Vec<_>>()
    };
    // The chart's days by their date (UTC: the zone of a viewer without the zone cookie).
    let by_day = |o: &app::model::Overview| {
        o.volume
            .days
            .iter()
            .map(|d| (d.start[..10].to_string(), d.processed, d.skipped, d.failed))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        counts(&overview.by_source_24h),
        vec![("shop".to_string(), 2, 0, 1)],
        "{backend:?}: 24 hours"
    );
    // The chart and the 7-day table: the last 7 calendar days (UTC), today included.
    let first_day = (now - Duration::days(6)).date_naive();
    let mut expected_7d: Vec<(String, i64, i64, i64)> = Vec::new();
    for (source, status, _, at) in rows {
        if at.date_naive() < first_day {
            continue;
        }
        let i = match expected_7d.iter().position(|r| r.0 == source) {
            Some(i) => i,
            None => {
                expected_7d.push((source.to_string(), 0, 0, 0));
                expected_7d.len() - 1
            }
        };
        match status {
            "processed" => expected_7d[i].1 += 1,
            "skipped" => expected_7d[i].2 += 1,
            _ => expected_7d[i].3 += 1,
        }
    }
    expected_7d.sort();
    assert_eq!(
        counts(&overview.by_source_7d),
        expected_7d,
        "{backend:?}: 7 days"
    );
    let mut expected: Vec<(String, i64, i64, i64)> = (0..7)
        .map(|i| ((first_day + Duration::days(i)).to_string(), 0, 0, 0))
        .collect();
    for (_, status, _, at) in rows {
        if let Some(day) = expected
            .iter_mut()
            .find(|d| d.0 == at.date_naive().to_string())
        {
            match status {
                "processed" => day.1 += 1,
                "skipped" => day.2 += 1,
                _ => day.3 += 1,
            }
        }
    }
    assert_eq!(by_day(&overview), expected, "{backend:?}: by day");

    // Finished quarter hours were rolled up, and are read from the rollup from then on:
    // concurrent overviews agree, and a row that appeared in a finished day afterwards (which
    // ingest cannot do: it archives at the arrival time) is not counted.
    let today = now.date_naive();
    let three_days_ago = today - Duration::days(3);
    let day_start = three_days_ago
        .and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc();
    assert_eq!(
        count(
            db,
            &format!(
                "SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM archive_quarter_counts
                 WHERE quarter >= {} AND quarter < {}",
                day_start.timestamp(),
                (day_start + Duration::days(1)).timestamp()
            ),
        )
        .await,
        rows.iter()
            .filter(|r| r.3.date_naive() == three_days_ago)
            .count() as i64,
        "{backend:?}: the rollup of {three_days_ago}"
    );
    db.dashboard
        .execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO webhook_events (source, status, outcome, headers, body, received_at)
                 VALUES ('shop', 'processed', 'applied', '{}', $1, $2)",
            vec![
                b"{}".to_vec().into(),
                three_days_ago
                    .and_hms_opt(12, 0, 0)
                    .expect("noon")
                    .and_utc()
                    .into(),
            ],
        ))
        .await
        .expect("insert into a finished day");
    let (again, other) = tokio::join!(
        app::db::overview::overview(db, 2, utc),
        app::db::overview::overview(db, 2, utc)
    );
    let (again, other) = (again.expect("overview"), other.expect("overview"));
    assert_eq!(by_day(&again), expected, "{backend:?}: frozen days");
    assert_eq!(by_day(&other), expected, "{backend:?}: concurrent overview");
    assert_eq!(counts(&again.by_source_7d), counts(&overview.by_source_7d));
}

both_backends!(a_search_by_object_or_event_id_pages_through_every_match);
/// A search finds the deliveries of an object and of an event id, newest first, page by page,
/// with the other filters applied to both.
async fn a_search_by_object_or_event_id_pages_through_every_match(backend: Backend) {
    use app::model::EventFilter;
    use chrono::{Duration, Utc};
    use sea_orm::{ConnectionTrait, Statement};
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let now = Utc::now();
    // 60 deliveries of order-7 (every fifth one failed), one delivery whose event id is
    // "order-7", and deliveries of another object in between.
    let mut rows = Vec::new();
    for i in 0..60 {
        let status = if i % 5 == 0 { "failed" } else { "processed" };
        rows.push((format!("e{i}"), "order-7".to_string(), status, i));
        rows.push((format!("x{i}"), "order-8".to_string(), "processed", i));
    }
    rows.push((
        "order-7".to_string(),
        "order-9".to_string(),
        "processed",
        30,
    ));
    for (event_id, object_id, status, minutes) in &rows {
        let outcome = if *status == "failed" {
            "invalid"
        } else {
            "applied"
        };
        db.dashboard
                .execute_raw(Statement::from_sql_and_values(
                    db.backend(),
                    "INSERT INTO webhook_events (source, event_id, object_id, status, outcome, headers, body, received_at)
                     VALUES ('shop', $1, $2, $3, $4, '{}', $5, $6)",
                    vec![
                        event_id.clone().into(),
                        object_id.clone().into(),
                        (*status).into(),
                        outcome.into(),
                        b"{}".to_vec().into(),
                        (now - Duration::minutes(*minutes)).into(),
                    ],
                ))
                .await
                .expect("insert an archive row");
    }

    for (status, expected) in [(None, 61), (Some("failed"), 12)] {
        let filter = EventFilter {
            q: Some(" order-7 ".into()),
            status: status.map(str::to_string),
            ..Default::default()
        };
        let mut seen: Vec<(String, String)> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = app::db::events::list_events(db, &filter, cursor.as_deref())
                .await
                .expect("a page");
            seen.extend(page.rows.iter().map(|r| {
                assert!(
                    r.object_id.as_deref() == Some("order-7")
                        || r.event_id.as_deref() == Some("order-7"),
                    "{backend:?}: {r:?} does not match"
                );
                if let Some(status) = status {
                    assert_eq!(r.status, status, "{backend:?}");
                }
                (
                    r.received_at.clone(),
                    r.event_id.clone().unwrap_or_default(),
                )
            }));
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        assert_eq!(
            seen.len(),
            expected,
            "{backend:?} {status:?}: every match once"
        );
        let mut newest_first = seen.clone();
        newest_first.sort_by(|a, b| b.0.cmp(&a.0));
        assert_eq!(seen, newest_first, "{backend:?}: newest first");
        assert!(
            seen.iter().any(|(_, e)| e == "order-7") == status.is_none(),
            "{backend:?}: the delivery with event id order-7"
        );
    }
}

#[tokio::test]
async fn the_events_filter_form_shows_the_url_filter_in_the_server_html() {
    let app = spawn_app(Backend::Sqlite).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.expect("sign in");

    let (status, html) = page(
        &app,
        Some(&cookie),
        "/events?status=failed&outcome=invalid&source=crm&from=2026-01-01&to=2026-01-31&q=order-1",
    )
    .await;

    assert_eq!(status, StatusCode::OK, "{html}");
    for (name, value) in [
        ("from", "2026-01-01"),
        ("to", "2026-01-31"),
        ("q", "order-1"),
    ] {
        // The filter's field, not the top bar's search box (also `q`, never with a value).
        let field = tag_with(&html, "input", &[&format!(r#"name="{name}""#), "value="])
            .unwrap_or_else(|| panic!("a {name} field"));
        assert!(field.contains(&format!(r#"value="{value}""#)), "{field}");
    }
    // The source is a choice among the configured ones; the URL's, not configured, stays one.
    for value in ["failed", "invalid", "crm"] {
        let option = tag_with(&html, "option", &[&format!(r#"value="{value}""#)])
            .unwrap_or_else(|| panic!("an option {value}"));
        assert!(option.contains("selected"), "{option}");
    }
}

both_backends!(an_out_of_range_date_filter_is_a_400_naming_the_field);
async fn an_out_of_range_date_filter_is_a_400_naming_the_field(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");

    for (field, value) in [
        ("to", "+262142-12-31"),
        ("from", "+262142-12-31"),
        ("from", "-262143-01-01"),
        ("to", "0000-01-01"),
    ] {
        for endpoint in ["events", "bulk_replay"] {
            let (status, body) = call(&app, Some(&cookie), endpoint, &[(field, value)]).await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{backend:?} {endpoint} {field}={value}: {body}"
            );
            assert!(
                body.contains(&format!("{field}: ")) && body.contains("out of range"),
                "{backend:?} {endpoint} {field}={value}: {body}"
            );
        }
    }
    let (status, body) = call(&app, Some(&cookie), "events", &[("to", "9999-12-31")]).await;
    assert_eq!(status, StatusCode::OK, "{backend:?}: {body}");
    assert!(body.contains("\"event_id\":\"e1\""), "{backend:?}: {body}");
    let (status, _) = page(&app, Some(&cookie), "/events?to=%2B262142-12-31").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{backend:?}: the page");
}

#[tokio::test]
async fn error_pages_answer_the_same_status_every_time() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.expect("sign in");

    for (path, expected) in [
        ("/events/999999999", StatusCode::NOT_FOUND),
        ("/events?status=bogus", StatusCode::BAD_REQUEST),
        ("/events?to=%2B262142-12-31", StatusCode::BAD_REQUEST),
        ("/events", StatusCode::OK),
    ] {
        let mut statuses = Vec::new();
        for _ in 0..20 {
            statuses.push(page(&app, Some(&cookie), path).await.0);
        }
        assert_eq!(statuses, vec![expected; 20], "{path}");
    }
}
