//! The dashboard's server functions and page guard: roles, sessions, throttling, cross-site
//! refusal, replay, and pages over a large archive.

use crate::support::*;
use app::auth;
use app::model::Role;
use reqwest::StatusCode;

const PASSWORD: &str = "a long enough password";

async fn with_user(app: &TestApp, name: &str, role: Role) {
    auth::add_user(&app.db, name, PASSWORD, role)
        .await
        .expect("add user");
}

/// Signs in through the login server function; returns the session cookie.
async fn sign_in(
    app: &TestApp,
    name: &str,
    password: &str,
) -> Result<String, (StatusCode, String)> {
    let response = app
        .client
        .post(app.url("/api/login"))
        .header("Accept", "application/json")
        .form(&[("name", name), ("password", password), ("next", "/events")])
        .send()
        .await
        .expect("login answers");
    let status = response.status();
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("hookbox_session="))
        .map(|v| v.split(';').next().unwrap_or_default().to_string());
    let text = response.text().await.unwrap_or_default();
    match cookie {
        Some(cookie) if status.is_success() || status.is_redirection() => Ok(cookie),
        _ => Err((status, text)),
    }
}

/// Calls a server function with form arguments.
async fn call(
    app: &TestApp,
    cookie: Option<&str>,
    endpoint: &str,
    args: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut request = app
        .client
        .post(app.url(&format!("/api/{endpoint}")))
        .form(args);
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    let response = request.send().await.expect("server function answers");
    (response.status(), response.text().await.unwrap_or_default())
}

const READ_FUNCTIONS: &[(&str, &[(&str, &str)])] = &[
    ("me", &[]),
    ("overview", &[]),
    ("events", &[]),
    ("event", &[("id", "1")]),
    ("object", &[("source", "shop"), ("object_id", "order-1")]),
    ("audit", &[]),
];
const OPERATOR_FUNCTIONS: &[(&str, &[(&str, &str)])] = &[
    ("replay", &[("id", "1"), ("confirm", "false")]),
    ("bulk_replay", &[]),
];

#[tokio::test]
async fn every_server_function_refuses_anonymous_callers_and_viewers_cannot_replay() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    with_user(&app, "vera", Role::Viewer).await;
    let viewer = sign_in(&app, "vera", PASSWORD)
        .await
        .expect("viewer signs in");

    for (endpoint, args) in READ_FUNCTIONS.iter().chain(OPERATOR_FUNCTIONS) {
        let (status, body) = call(&app, None, endpoint, args).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "anonymous {endpoint}: {body}"
        );
    }
    for (endpoint, args) in READ_FUNCTIONS {
        let (status, body) = call(&app, Some(&viewer), endpoint, args).await;
        assert_eq!(status, StatusCode::OK, "viewer {endpoint}: {body}");
    }
    for (endpoint, args) in OPERATOR_FUNCTIONS {
        let (status, body) = call(&app, Some(&viewer), endpoint, args).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "viewer {endpoint}: {body}");
    }
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        1,
        "nothing was replayed"
    );
}

#[tokio::test]
async fn anonymous_pages_redirect_to_the_sign_in_page() {
    let app = spawn_app(Backend::Sqlite).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");

    let response = client
        .get(app.url("/events?status=failed"))
        .send()
        .await
        .expect("answer");

    assert!(response.status().is_redirection());
    assert_eq!(
        response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok()),
        Some("/login?next=%2Fevents%3Fstatus%3Dfailed")
    );
    let login = client.get(app.url("/login")).send().await.expect("answer");
    assert_eq!(login.status(), StatusCode::OK);
}

#[tokio::test]
async fn failed_sign_ins_are_throttled_per_user() {
    let app = spawn_app(Backend::Postgres).await;
    with_user(&app, "olga", Role::Operator).await;

    for attempt in 0..auth::MAX_FAILURES_PER_USER {
        let (status, _) = sign_in(&app, "olga", "wrong password")
            .await
            .expect_err("wrong password");
        assert_eq!(status, StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    let (status, message) = sign_in(&app, "olga", PASSWORD)
        .await
        .expect_err("throttled even when right");

    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(message.contains("Too many failed sign-ins"), "{message}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM audit_log WHERE action = 'sign_in' AND outcome = 'failed' AND actor = 'olga'").await,
        auth::MAX_FAILURES_PER_USER
    );
}

#[tokio::test]
async fn sessions_expire_and_can_be_revoked() {
    let app = spawn_app(Backend::Postgres).await;
    with_user(&app, "vera", Role::Viewer).await;
    let expiring = sign_in(&app, "vera", PASSWORD).await.expect("sign in");
    assert_eq!(
        call(&app, Some(&expiring), "me", &[]).await.0,
        StatusCode::OK
    );
    // The only session so far reaches its expiry.
    sea_orm::ConnectionTrait::execute_unprepared(
        &app.db.conn,
        "UPDATE sessions SET expires_at = now() - interval '1 second'",
    )
    .await
    .expect("expire the session");
    let revoked = sign_in(&app, "vera", PASSWORD)
        .await
        .expect("sign in again");
    assert_eq!(
        call(&app, Some(&revoked), "me", &[]).await.0,
        StatusCode::OK
    );

    auth::revoke_session(&app.db, revoked.trim_start_matches("hookbox_session="))
        .await
        .expect("revoke");

    assert_eq!(
        call(&app, Some(&expiring), "me", &[]).await.0,
        StatusCode::UNAUTHORIZED,
        "expired"
    );
    assert_eq!(
        call(&app, Some(&revoked), "me", &[]).await.0,
        StatusCode::UNAUTHORIZED,
        "revoked"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM sessions WHERE token_hash LIKE 'hookbox%'"
        )
        .await,
        0,
        "only hashes are stored"
    );
}

#[tokio::test]
async fn state_changing_calls_from_another_site_are_refused() {
    let app = spawn_app(Backend::Sqlite).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");

    let cross = app
        .client
        .post(app.url("/api/replay"))
        .header("Cookie", &cookie)
        .header("Origin", "https://evil.example")
        .form(&[("id", "1"), ("confirm", "true")])
        .send()
        .await
        .expect("answer");
    let fetch_site = app
        .client
        .post(app.url("/api/replay"))
        .header("Cookie", &cookie)
        .header("Sec-Fetch-Site", "cross-site")
        .form(&[("id", "1"), ("confirm", "true")])
        .send()
        .await
        .expect("answer");

    assert_eq!(
        (cross.status(), fetch_site.status()),
        (StatusCode::FORBIDDEN, StatusCode::FORBIDDEN)
    );
}

both_backends!(
    a_replay_dry_run_writes_nothing_and_a_confirmed_replay_writes_one_archive_and_one_audit_row
);
async fn a_replay_dry_run_writes_nothing_and_a_confirmed_replay_writes_one_archive_and_one_audit_row(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "order-1", 1, r#"{"a":1}"#))
        .await;
    let conflict = app
        .send("shop", &event("e1-other", "order-1", 1, r#"{"a":1}"#))
        .await;
    assert_eq!(conflict.outcome(), "reused_revision");
    let failed_id = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'e1-other'",
        vec![],
    )
    .await
    .expect("archived");
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");
    let id = failed_id.to_string();
    let archive_before = count(&app.db, "SELECT count(*) FROM webhook_events").await;
    let audit_before = count(
        &app.db,
        "SELECT count(*) FROM audit_log WHERE action = 'replay'",
    )
    .await;

    let (status, dry) = call(
        &app,
        Some(&cookie),
        "replay",
        &[("id", &id), ("confirm", "false")],
    )
    .await;

    assert_eq!(status, StatusCode::OK, "{dry}");
    assert!(dry.contains("\"outcome\":\"reused_revision\""), "{dry}");
    assert!(dry.contains("\"archive_id\":null"), "{dry}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        archive_before,
        "{backend:?}: dry run wrote nothing"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'replay'"
        )
        .await,
        audit_before
    );

    let (status, done) = call(
        &app,
        Some(&cookie),
        "replay",
        &[("id", &id), ("confirm", "true")],
    )
    .await;

    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        archive_before + 1,
        "{backend:?}"
    );
    let replay_rows = texts(
        &app.db,
        "SELECT outcome, replayed_by FROM webhook_events WHERE replay_of = $1",
        vec![failed_id.into()],
    )
    .await;
    assert_eq!(
        replay_rows,
        vec![vec![Some("reused_revision".into()), Some("olga".into())]]
    );
    let audit = texts(
        &app.db,
        "SELECT actor, target, outcome FROM audit_log WHERE action = 'replay'",
        vec![],
    )
    .await;
    assert_eq!(
        audit,
        vec![vec![
            Some("olga".into()),
            Some(id.clone()),
            Some("reused_revision".into())
        ]]
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        1,
        "replay never bypasses the inbox"
    );
}

#[tokio::test]
async fn replaying_an_accepted_event_is_a_recorded_duplicate() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");
    let id = scalar(&app.db, "SELECT id FROM webhook_events", vec![])
        .await
        .expect("row")
        .to_string();

    let (_, body) = call(
        &app,
        Some(&cookie),
        "replay",
        &[("id", &id), ("confirm", "true")],
    )
    .await;

    assert!(body.contains("\"outcome\":\"duplicate\""), "{body}");
    assert_eq!(
        archived(&app.db, "shop", "e1")
            .await
            .last()
            .map(|(_, o)| o.as_str()),
        Some("duplicate")
    );
}

#[tokio::test]
async fn bulk_replay_shows_the_dry_run_breakdown_and_needs_the_typed_count() {
    let app = spawn_app(Backend::Postgres).await;
    for i in 0..3 {
        app.send(
            "shop",
            &format!(r#"{{"event_id":"bad-{i}","object_id":"o","revision":0,"snapshot":{{}}}}"#),
        )
        .await;
    }
    app.send("shop", &event("fine", "o", 1, "{}")).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");

    let (_, dry) = call(&app, Some(&cookie), "bulk_replay", &[]).await;
    let (wrong_status, _) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("confirmation", "replay 2")],
    )
    .await;
    let before = count(&app.db, "SELECT count(*) FROM webhook_events").await;
    let (status, done) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("confirmation", "replay 3")],
    )
    .await;

    assert!(
        dry.contains("\"matched\":3")
            && dry.contains("[\"invalid\",3]")
            && dry.contains("\"replayed\":false"),
        "{dry}"
    );
    assert_eq!(wrong_status, StatusCode::BAD_REQUEST);
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(done.contains("\"replayed\":true"), "{done}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        before + 3
    );
    let audit = texts(
        &app.db,
        "SELECT target, detail FROM audit_log WHERE action = 'bulk_replay'",
        vec![],
    )
    .await;
    assert_eq!(audit.len(), 1, "one audit entry: {audit:?}");
    assert_eq!(audit[0][0].as_deref(), Some("3"));
    assert!(
        audit[0][1]
            .as_deref()
            .is_some_and(|d| d.starts_with("invalid: 3; deliveries ")),
        "{audit:?}"
    );
}

#[tokio::test]
async fn pages_render_over_100_000_archived_deliveries() {
    let app = spawn_app(Backend::Postgres).await;
    sea_orm::ConnectionTrait::execute_unprepared(
        &app.db.conn,
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
        db.conn
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

    let overview = app::db::overview::overview(db, 2).await.expect("overview");

    let counts = |rows: &[app::model::CountRow]| {
        rows.iter()
            .map(|r| (r.label.clone(), r.processed, r.skipped, r.failed))
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
    assert_eq!(counts(&overview.by_day), expected, "{backend:?}: by day");

    // Finished days were rolled up (days over for an hour), and are read from the rollup
    // from then on: concurrent overviews agree, and a row that appeared in a finished day
    // afterwards (which ingest cannot do: it archives at the arrival time) is not counted.
    let today = now.date_naive();
    let rolled: i64 = count(db, "SELECT count(*) FROM archive_days_counted").await;
    let live_days = if now.time() >= chrono::NaiveTime::from_hms_opt(1, 0, 0).expect("1 am") {
        1
    } else {
        2
    };
    assert_eq!(rolled, 7 - live_days, "{backend:?}: rolled-up days");
    let three_days_ago = today - Duration::days(3);
    assert_eq!(
            count(
                db,
                &format!(
                    "SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM archive_day_counts WHERE day = '{three_days_ago}'"
                ),
            )
            .await,
            rows.iter()
                .filter(|r| r.3.date_naive() == three_days_ago)
                .count() as i64,
            "{backend:?}: the rollup of {three_days_ago}"
        );
    db.conn
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
        app::db::overview::overview(db, 2),
        app::db::overview::overview(db, 2)
    );
    let (again, other) = (again.expect("overview"), other.expect("overview"));
    assert_eq!(counts(&again.by_day), expected, "{backend:?}: frozen days");
    assert_eq!(
        counts(&other.by_day),
        expected,
        "{backend:?}: concurrent overview"
    );
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
        db.conn
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

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The first `<tag …>` of `html` whose text contains every one of `needles`.
fn tag_with<'a>(html: &'a str, tag: &str, needles: &[&str]) -> Option<&'a str> {
    html.match_indices(&format!("<{tag} "))
        .filter_map(|(start, _)| {
            let end = html[start..].find('>')?;
            Some(&html[start..=start + end])
        })
        .find(|t| needles.iter().all(|n| t.contains(n)))
}

/// A page as a signed-in user gets it: (status, HTML).
async fn page(app: &TestApp, cookie: Option<&str>, path: &str) -> (StatusCode, String) {
    let mut request = no_redirects().get(app.url(path));
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    let response = request.send().await.expect("page answers");
    (response.status(), response.text().await.unwrap_or_default())
}

#[tokio::test]
async fn a_sign_in_form_posted_without_javascript_redirects_only_to_a_local_path() {
    let app = spawn_app(Backend::Sqlite).await;
    with_user(&app, "vera", Role::Viewer).await;
    let client = no_redirects();
    let cases = [
        ("/\t/evil.example", "/"),
        ("/\n/evil.example", "/"),
        ("/ok\r\nSet-Cookie: hookbox_session=stolen", "/"),
        ("//evil.example", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example/", "/"),
        ("/%2F/evil.example", "/"),
        ("/%09/evil.example", "/"),
        ("/events?q=%0D%0Ax", "/"),
        ("/caf\u{e9}", "/"),
        ("", "/"),
        (
            "/events?status=failed&source=crm",
            "/events?status=failed&source=crm",
        ),
    ];
    for (next, expected) in cases {
        // What a browser sends for the form before the wasm has loaded.
        let response = client
            .post(app.url("/api/login"))
            .header("Accept", "text/html,application/xhtml+xml")
            .form(&[("name", "vera"), ("password", PASSWORD), ("next", next)])
            .send()
            .await
            .unwrap_or_else(|e| panic!("next {next:?}: no answer ({e})"));
        let status = response.status();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let signed_in = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.starts_with("hookbox_session="));
        assert_eq!(status, StatusCode::FOUND, "next {next:?}");
        assert_eq!(location.as_deref(), Some(expected), "next {next:?}");
        assert!(signed_in, "next {next:?}: signed in");
        assert!(
            response.headers().get("x-injected").is_none(),
            "next {next:?}"
        );
    }
}

#[tokio::test]
async fn the_sign_in_page_carries_next_in_its_server_html() {
    let app = spawn_app(Backend::Sqlite).await;

    let (status, html) = page(&app, None, "/login?next=/events%3Fstatus%3Dfailed").await;
    let (_, hostile) = page(&app, None, "/login?next=%2F%09%2Fevil.example").await;

    assert_eq!(status, StatusCode::OK);
    let hidden = tag_with(&html, "input", &[r#"name="next""#]).expect("a next field");
    assert!(
        hidden.contains(r#"value="/events?status=failed""#),
        "{hidden}"
    );
    let hidden = tag_with(&hostile, "input", &[r#"name="next""#]).expect("a next field");
    assert!(hidden.contains(r#"value="/""#), "{hidden}");
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
        ("source", "crm"),
        ("from", "2026-01-01"),
        ("to", "2026-01-31"),
        ("q", "order-1"),
    ] {
        let field = tag_with(&html, "input", &[&format!(r#"name="{name}""#)])
            .unwrap_or_else(|| panic!("a {name} field"));
        assert!(field.contains(&format!(r#"value="{value}""#)), "{field}");
    }
    for value in ["failed", "invalid"] {
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

/// The stored value of each signature header of a delivery.
async fn stored_signatures(app: &TestApp, id: i64) -> Vec<(String, String)> {
    let headers = texts(
        &app.db,
        "SELECT headers::text FROM webhook_events WHERE id = $1",
        vec![id.into()],
    )
    .await;
    let json: serde_json::Value =
        serde_json::from_str(headers[0][0].as_deref().unwrap_or("{}")).expect("headers JSON");
    json.as_object()
        .expect("an object")
        .iter()
        .filter(|(name, _)| app::pages::event::SIGNATURE_HEADERS.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// The headers of an `event` answer.
fn answered_headers(body: &str) -> Vec<(String, String)> {
    let json: serde_json::Value = serde_json::from_str(body).expect("an event as JSON");
    serde_json::from_value(json["headers"].clone()).expect("headers")
}

#[tokio::test]
async fn a_viewer_sees_signature_headers_redacted_and_an_operator_sees_them() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    app.send("sw", &event("e2", "order-2", 1, "{}")).await;
    with_user(&app, "vera", Role::Viewer).await;
    with_user(&app, "olga", Role::Operator).await;
    let viewer = sign_in(&app, "vera", PASSWORD).await.expect("sign in");
    let operator = sign_in(&app, "olga", PASSWORD).await.expect("sign in");
    let ids = texts(
        &app.db,
        "SELECT CAST(id AS TEXT) FROM webhook_events ORDER BY id",
        vec![],
    )
    .await;

    for row in ids {
        let id = row[0].clone().expect("an id");
        let signatures = stored_signatures(&app, id.parse().expect("an id")).await;
        assert!(!signatures.is_empty(), "delivery {id} was signed");
        let (status, as_viewer) = call(&app, Some(&viewer), "event", &[("id", &id)]).await;
        assert_eq!(status, StatusCode::OK, "{as_viewer}");
        let (status, as_operator) = call(&app, Some(&operator), "event", &[("id", &id)]).await;
        assert_eq!(status, StatusCode::OK, "{as_operator}");
        let (_, viewer_page) = page(&app, Some(&viewer), &format!("/events/{id}")).await;

        let shown_to_viewer = answered_headers(&as_viewer);
        let shown_to_operator = answered_headers(&as_operator);
        for (name, value) in &signatures {
            assert!(!as_viewer.contains(value.as_str()), "{name}: {as_viewer}");
            assert!(!viewer_page.contains(value.as_str()), "{name} on the page");
            assert!(
                shown_to_viewer.contains(&(name.clone(), "[redacted]".to_string())),
                "{name}: {shown_to_viewer:?}"
            );
            assert!(
                shown_to_operator.contains(&(name.clone(), value.clone())),
                "{name}: {shown_to_operator:?}"
            );
        }
        // Everything else is shown to both alike.
        let unsigned = |headers: &[(String, String)]| {
            headers
                .iter()
                .filter(|(n, _)| !signatures.iter().any(|(s, _)| s == n))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(unsigned(&shown_to_viewer), unsigned(&shown_to_operator));
    }
}

/// Sends `n` deliveries that fail validation (revision 0) from `source`; returns their ids.
async fn failed_deliveries(app: &TestApp, source: &str, n: usize) -> Vec<i64> {
    for i in 0..n {
        let answer = app
            .send(
                source,
                &format!(
                    r#"{{"event_id":"{source}-bad-{i}","object_id":"o","revision":0,"snapshot":{{}}}}"#
                ),
            )
            .await;
        assert_eq!(answer.status, 422, "{answer:?}");
    }
    texts(
        &app.db,
        "SELECT CAST(id AS TEXT) FROM webhook_events WHERE source = $1 AND status = 'failed' ORDER BY id",
        vec![source.into()],
    )
    .await
    .into_iter()
    .map(|r| r[0].as_deref().unwrap_or_default().parse().expect("an id"))
    .collect()
}

/// `replay_of` of every replayed row, in order.
async fn replayed_originals(app: &TestApp) -> Vec<i64> {
    texts(
        &app.db,
        "SELECT CAST(replay_of AS TEXT) FROM webhook_events WHERE replay_of IS NOT NULL ORDER BY replay_of",
        vec![],
    )
    .await
    .into_iter()
    .map(|r| r[0].as_deref().unwrap_or_default().parse().expect("an id"))
    .collect()
}

#[tokio::test]
async fn bulk_replay_takes_the_filter_it_is_given_and_names_it() {
    let app = spawn_app(Backend::Postgres).await;
    let shop = failed_deliveries(&app, "shop", 2).await;
    let sw = failed_deliveries(&app, "sw", 1).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");

    let (_, everything) = call(&app, Some(&cookie), "bulk_replay", &[]).await;
    let (_, of_shop) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("status", "failed"), ("source", "shop")],
    )
    .await;
    let (_, of_sw) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("source", "sw"), ("outcome", "invalid")],
    )
    .await;
    let (status, done) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("source", "sw"), ("confirmation", "replay 1")],
    )
    .await;

    assert!(
        everything.contains("\"matched\":3")
            && everything.contains("\"scope\":\"every source, status failed\""),
        "{everything}"
    );
    assert!(
        of_shop.contains("\"matched\":2")
            && of_shop.contains("\"scope\":\"source shop, status failed\""),
        "{of_shop}"
    );
    assert!(
        of_sw.contains("\"matched\":1")
            && of_sw.contains("\"scope\":\"source sw, outcome invalid, status failed\""),
        "{of_sw}"
    );
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(done.contains("\"replayed\":true"), "{done}");
    assert_eq!(
        replayed_originals(&app).await,
        sw,
        "only the filter's deliveries"
    );
    assert!(!replayed_originals(&app).await.contains(&shop[0]));
}

both_backends!(a_bulk_replay_commits_its_replays_and_its_audit_entry_together);
async fn a_bulk_replay_commits_its_replays_and_its_audit_entry_together(backend: Backend) {
    use sea_orm::ConnectionTrait;
    let app = spawn_app(backend).await;
    let failed = failed_deliveries(&app, "shop", 3).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");
    let archive_before = count(&app.db, "SELECT count(*) FROM webhook_events").await;

    // The audit entry cannot be written: nothing of the bulk replay may stay.
    let refuse = match backend {
        Backend::Postgres => {
            "CREATE FUNCTION refuse_bulk_audit() RETURNS trigger LANGUAGE plpgsql AS
                   $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$;
                 CREATE TRIGGER refuse_bulk_audit BEFORE INSERT ON audit_log FOR EACH ROW
                   WHEN (NEW.action = 'bulk_replay') EXECUTE FUNCTION refuse_bulk_audit();"
        }
        Backend::Sqlite => {
            "CREATE TRIGGER refuse_bulk_audit BEFORE INSERT ON audit_log
                   WHEN NEW.action = 'bulk_replay' BEGIN SELECT RAISE(ABORT, 'audit refused'); END;"
        }
    };
    app.db
        .writer
        .execute_unprepared(refuse)
        .await
        .expect("refuse the audit entry");
    let (status, refused) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("confirmation", "replay 3")],
    )
    .await;
    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{backend:?}: {refused}"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        archive_before,
        "{backend:?}: no replay without its audit entry"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'bulk_replay'"
        )
        .await,
        0
    );
    let allow = match backend {
        Backend::Postgres => "DROP TRIGGER refuse_bulk_audit ON audit_log",
        Backend::Sqlite => "DROP TRIGGER refuse_bulk_audit",
    };
    app.db
        .writer
        .execute_unprepared(allow)
        .await
        .expect("drop the trigger");

    let (status, done) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("confirmation", "replay 3")],
    )
    .await;

    assert_eq!(status, StatusCode::OK, "{backend:?}: {done}");
    assert_eq!(replayed_originals(&app).await, failed, "{backend:?}");
    let audit = texts(
        &app.db,
        "SELECT target, detail FROM audit_log WHERE action = 'bulk_replay'",
        vec![],
    )
    .await;
    let ids = failed
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    assert_eq!(
        audit,
        vec![vec![
            Some("3".into()),
            Some(format!("invalid: 3; deliveries {ids}"))
        ]],
        "{backend:?}: one entry naming the count and the deliveries replayed"
    );
}
