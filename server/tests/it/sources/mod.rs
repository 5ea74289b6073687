//! The sources page: every configured source with its endpoint, scheme in words, mode, newest
//! delivery and count (replays not counted, the overview's), the silent-source rule of the
//! shipped alert, and the index its reads use.

use crate::support::*;
use app::model::{Role, SourceHealth, SourceSummary, SourcesPage};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, Statement, Value};

/// The sources page's server function, as the viewer's browser calls it.
async fn sources_page(app: &TestApp, cookie: &str) -> SourcesPage {
    let response = app
        .client
        .post(app.url("/api/sources"))
        .header("Cookie", cookie)
        .send()
        .await
        .expect("the server function answers");
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("an answer");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("a sources page: {e}: {text}"))
}

/// A page's HTML as a signed-in user gets it.
async fn page_html(app: &TestApp, cookie: &str, path: &str) -> String {
    let response = app
        .client
        .get(app.url(path))
        .header("Cookie", cookie)
        .send()
        .await
        .expect("page answers");
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.unwrap_or_default()
}

fn of<'a>(page: &'a SourcesPage, name: &str) -> &'a SourceSummary {
    page.sources
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{name} is listed"))
}

/// An archive row of `source` received at `at`, a replay of `replay_of` if given.
async fn archived(app: &TestApp, source: &str, at: DateTime<Utc>, replay_of: Option<i64>) {
    app.db
        .writer
        .execute_raw(Statement::from_sql_and_values(
            app.db.backend(),
            "INSERT INTO webhook_events (source, status, outcome, headers, body, received_at, replay_of)
             VALUES ($1, 'processed', 'applied', '{}', $2, $3, $4)",
            vec![
                source.into(),
                Value::Bytes(Some(b"{}".to_vec())),
                at.into(),
                replay_of.into(),
            ],
        ))
        .await
        .expect("archive row");
}

both_backends!(every_source_is_listed_with_its_endpoint_scheme_and_newest_delivery);
async fn every_source_is_listed_with_its_endpoint_scheme_and_newest_delivery(backend: Backend) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "vera", Role::Viewer).await;
    for n in 1..=2 {
        let answer = app
            .send("shop", &event(&format!("e{n}"), "order-1", n, "{}"))
            .await;
        assert_eq!(answer.status, 200, "{answer:?}");
    }
    let newest = scalar(
        &app.db,
        "SELECT max(id) FROM webhook_events WHERE source = 'shop'",
        vec![],
    )
    .await
    .expect("an archive row");
    // A replay is an operator's, not the sender's: it neither counts nor moves the newest.
    archived(
        &app,
        "shop",
        Utc::now() + Duration::minutes(5),
        Some(newest),
    )
    .await;

    let page = sources_page(&app, &cookie).await;

    let names: Vec<&str> = page.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["shop", "sw", "gh", "limited"],
        "the configuration's order"
    );
    assert_eq!(
        page.public_url, None,
        "no [server] public_url in the test config"
    );
    let shop = of(&page, "shop");
    assert_eq!(shop.path, "/hooks/shop");
    assert_eq!(shop.scheme, "hmac-sha256");
    assert!(
        shop.scheme_words.contains("X-Hookbox-Signature"),
        "{}",
        shop.scheme_words
    );
    assert!(
        shop.scheme_words.contains("within 5 minutes"),
        "{}",
        shop.scheme_words
    );
    assert_eq!(shop.mode, "snapshot");
    assert_eq!(shop.received_24h, 2);
    let newest_stored: DateTime<Utc> = app
        .db
        .dashboard
        .query_one_raw(Statement::from_sql_and_values(
            app.db.backend(),
            "SELECT received_at FROM webhook_events WHERE id = $1",
            vec![newest.into()],
        ))
        .await
        .expect("query")
        .expect("the row")
        .try_get("", "received_at")
        .expect("a time");
    let shown = DateTime::parse_from_rfc3339(shop.last_received.as_deref().expect("a newest"))
        .expect("RFC 3339");
    assert_eq!(
        shown, newest_stored,
        "{backend:?}: the newest the sender made"
    );
    assert!(!shop.silence.silent, "{:?}", shop.silence);
    assert_eq!(shop.silence.threshold_secs, 3_600, "no history: an hour");

    let gh = of(&page, "gh");
    assert_eq!(gh.mode, "dedup");
    let sw = of(&page, "sw");
    assert!(
        sw.scheme_words.contains("webhook-signature"),
        "{}",
        sw.scheme_words
    );
    assert_eq!(sw.last_received, None);
    assert_eq!(sw.received_24h, 0);
    assert!(sw.silence.silent, "never a delivery is silent to the alert");
    assert_eq!(
        sw.health,
        SourceHealth::NoDeliveriesYet,
        "{backend:?}: the page says no deliveries yet, not silent"
    );
    assert_eq!(shop.health, SourceHealth::Receiving);
    assert_eq!((shop.recent_failed, shop.recent_of), (0, 2));
    let html = page_html(&app, &cookie, "/sources").await;
    assert!(
        html.contains(r#"data-health="no deliveries yet""#),
        "{backend:?}: a neutral card"
    );
    assert_eq!(page.retention_days, 90);
}

both_backends!(a_source_is_silent_past_three_times_its_usual_gap_at_this_time_of_day);
async fn a_source_is_silent_past_three_times_its_usual_gap_at_this_time_of_day(backend: Backend) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "vera", Role::Viewer).await;
    let now = Utc::now();
    // Yesterday around this time, "shop" and "gh" sent every 10 minutes: silent after 30.
    for source in ["shop", "gh"] {
        let mut at = now - Duration::hours(26);
        while at < now - Duration::hours(22) {
            archived(&app, source, at, None).await;
            at += Duration::minutes(10);
        }
    }
    archived(&app, "shop", now - Duration::minutes(40), None).await;
    archived(&app, "gh", now - Duration::minutes(20), None).await;
    // "limited" sent 170, 166 and 5 hours ago: around this time yesterday it had been silent
    // since 166 hours ago, so its limit is the 23-hour cap.
    archived(&app, "limited", now - Duration::hours(170), None).await;
    archived(&app, "limited", now - Duration::hours(166), None).await;
    archived(&app, "limited", now - Duration::hours(5), None).await;

    let page = sources_page(&app, &cookie).await;

    let shop = &of(&page, "shop").silence;
    assert_eq!(shop.usual_gap_secs, Some(600), "{backend:?}: {shop:?}");
    assert_eq!(shop.threshold_secs, 1_800);
    assert!(shop.silent, "40 minutes past a 30-minute limit: {shop:?}");
    assert!((2_400..2_460).contains(&shop.silent_secs.expect("a newest")));
    let gh = &of(&page, "gh").silence;
    assert_eq!((gh.threshold_secs, gh.silent), (1_800, false), "{gh:?}");
    let limited = &of(&page, "limited").silence;
    let gap = limited.usual_gap_secs.expect("history");
    assert!(
        (514_800..514_860).contains(&gap),
        "143 hours, to the window's end: {gap}"
    );
    assert_eq!((limited.threshold_secs, limited.silent), (82_800, false));
    assert_eq!(of(&page, "limited").received_24h, 1);
}

both_backends!(the_count_is_the_overviews_and_the_newest_is_one_index_seek);
async fn the_count_is_the_overviews_and_the_newest_is_one_index_seek(backend: Backend) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "vera", Role::Viewer).await;
    let now = Utc::now();
    // Rolled up (hours ago) or counted live (minutes ago), and one past the 24 hours.
    for minutes in [1, 2, 3, 300, 600, 25 * 60 + 30] {
        archived(&app, "shop", now - Duration::minutes(minutes), None).await;
    }
    let page = sources_page(&app, &cookie).await;
    let (volume, _, _) = app::db::overview::volume(&app.db, app::db::overview::Tz::UTC, Utc::now())
        .await
        .expect("the overview's counts");
    let overview = volume
        .iter()
        .find(|row| row.label == "shop")
        .map(|row| row.processed + row.skipped + row.failed);
    assert_eq!(of(&page, "shop").received_24h, 5, "{backend:?}");
    assert_eq!(overview, Some(5), "the overview says the same");

    // However large the archive, the newest delivery is read from the index, not the table.
    let plan: Vec<String> = match backend {
        Backend::Postgres => {
            let txn = sea_orm::TransactionTrait::begin(&app.db.dashboard)
                .await
                .expect("begin");
            txn.execute_unprepared("SET LOCAL enable_seqscan = off")
                .await
                .expect("set");
            let rows = txn
                .query_all_raw(Statement::from_sql_and_values(
                    app.db.backend(),
                    format!("EXPLAIN {}", app::db::sources::NEWEST),
                    vec!["shop".into()],
                ))
                .await
                .expect("explain");
            rows.iter()
                .map(|r| r.try_get_by_index::<String>(0).expect("a plan line"))
                .collect()
        }
        Backend::Sqlite => app
            .db
            .dashboard
            .query_all_raw(Statement::from_sql_and_values(
                app.db.backend(),
                format!("EXPLAIN QUERY PLAN {}", app::db::sources::NEWEST),
                vec!["shop".into()],
            ))
            .await
            .expect("explain")
            .iter()
            .map(|r| r.try_get::<String>("", "detail").expect("a plan line"))
            .collect(),
    };
    let plan = plan.join("\n");
    assert!(
        plan.contains("ix_webhook_events_source_received"),
        "{backend:?}: {plan}"
    );
    assert!(!plan.contains("SCAN webhook_events\n"), "{plan}");
}

both_backends!(the_endpoint_is_on_the_configured_public_url);
async fn the_endpoint_is_on_the_configured_public_url(backend: Backend) {
    let mut config = test_config();
    config.server.public_url = Some("https://hooks.example.com".into());
    let app = spawn_app_with(backend, config).await;
    let cookie = signed_in(&app, "vera", Role::Viewer).await;
    let page = sources_page(&app, &cookie).await;
    assert_eq!(
        page.public_url.as_deref(),
        Some("https://hooks.example.com")
    );
    let (status, html) = {
        let response = app
            .client
            .get(app.url("/sources"))
            .header("Cookie", &cookie)
            .send()
            .await
            .expect("the page answers");
        (response.status(), response.text().await.unwrap_or_default())
    };
    assert_eq!(status, 200);
    assert!(
        html.contains("https://hooks.example.com/hooks/shop"),
        "the endpoint on the public URL: {html}"
    );
    assert!(!html.contains("No public_url is set"), "{html}");
}

both_backends!(a_source_whose_recent_deliveries_fail_is_failing_not_receiving);
async fn a_source_whose_recent_deliveries_fail_is_failing_not_receiving(backend: Backend) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "vera", Role::Viewer).await;
    // 11 deliveries in a row the endpoint archives as failed (revision 0 is refused): the
    // sender is heard from, so the silent-source rule says nothing.
    for n in 0..11 {
        let answer = app
            .send(
                "shop",
                &event(&format!("bad-{n}"), &format!("o-{n}"), 0, "{}"),
            )
            .await;
        assert_eq!(answer.status, 422, "{answer:?}");
    }
    // An hour ago one succeeded: older than the recent ones, it does not make the source well.
    archived(&app, "shop", Utc::now() - Duration::hours(1), None).await;

    let page = sources_page(&app, &cookie).await;
    let html = page_html(&app, &cookie, "/sources").await;

    let shop = of(&page, "shop");
    assert!(!shop.silence.silent, "{backend:?}: it is not silent");
    assert_eq!(
        (shop.recent_failed, shop.recent_of),
        (11, 12),
        "{backend:?}"
    );
    assert_eq!(shop.health, SourceHealth::Failing, "{backend:?}");
    assert!(html.contains(r#"data-health="failing""#), "{backend:?}");
    assert!(
        html.contains("11 of its last 12 deliveries failed"),
        "{backend:?}: the count on the card"
    );
}

both_backends!(each_source_says_how_long_its_archive_is_kept);
async fn each_source_says_how_long_its_archive_is_kept(backend: Backend) {
    let mut config = test_config();
    let limited = config
        .sources
        .iter_mut()
        .find(|s| s.name == "limited")
        .expect("the test config's limited source");
    limited.retention_days = Some(400);
    let app = spawn_app_with(backend, config).await;
    let cookie = signed_in(&app, "vera", Role::Viewer).await;

    let page = sources_page(&app, &cookie).await;

    let shop = of(&page, "shop");
    assert_eq!(
        (shop.retention_days, shop.own_retention),
        (page.retention_days, false)
    );
    let limited = of(&page, "limited");
    assert_eq!((limited.retention_days, limited.own_retention), (400, true));
    let html = page_html(&app, &cookie, "/sources").await;
    assert!(
        html.contains("400 days (its own retention_days)"),
        "{backend:?}: the page says so"
    );
    assert!(
        html.contains(&format!(
            "{} days (the server&#x27;s retention_days)",
            page.retention_days
        )) || html.contains(&format!(
            "{} days (the server's retention_days)",
            page.retention_days
        ))
    );
}
