//! Payload search: `/events?match={…}` finds the deliveries whose body contains the object,
//! with PostgreSQL's `@>` rules on both backends (nested objects by containment, arrays by their
//! elements, numbers by value, `true` not `1`); a bad `match` is a 400 naming it.
#![allow(clippy::unwrap_used)]

use super::*;

/// The event ids `/events` lists for a `match` (newest first), or the refusal.
async fn found(
    app: &TestApp,
    cookie: &str,
    matcher: &str,
) -> Result<Vec<String>, (StatusCode, String)> {
    let (status, body) = call(app, Some(cookie), "events", &[("match", matcher)]).await;
    if status != StatusCode::OK {
        return Err((status, body));
    }
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut ids: Vec<String> = page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["event_id"].as_str().unwrap_or("-").to_string())
        .collect();
    ids.sort();
    Ok(ids)
}

both_backends!(a_body_search_finds_the_deliveries_containing_the_object_as_postgresql_has_it);
async fn a_body_search_finds_the_deliveries_containing_the_object_as_postgresql_has_it(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    // A body that is not JSON is archived (failed) and contains nothing.
    let junk = app.send_bytes("shop", b"not json at all", &[]).await;
    assert_eq!(junk.status, 400);
    for (id, object, snapshot) in [
        (
            "e1",
            "order-1",
            r#"{"customer":{"id":"cus_123","vip":true},"tags":["a","b"],"total":10}"#,
        ),
        (
            "e2",
            "order-2",
            r#"{"customer":{"id":"cus_456","vip":1},"tags":["b"],"total":10.0}"#,
        ),
        (
            "e3",
            "order-3",
            r#"{"customer":{"id":"cus_123"},"tags":[{"k":"x","v":1}],"total":"10"}"#,
        ),
    ] {
        assert_eq!(
            app.send("shop", &event(id, object, 1, snapshot))
                .await
                .outcome(),
            "applied"
        );
    }

    for (matcher, expected) in [
        (
            r#"{"snapshot":{"customer":{"id":"cus_123"}}}"#,
            &["e1", "e3"][..],
        ),
        (r#"{"snapshot":{"customer":{"vip":true}}}"#, &["e1"][..]),
        (r#"{"snapshot":{"customer":{"vip":1}}}"#, &["e2"][..]),
        (r#"{"snapshot":{"tags":["b"]}}"#, &["e1", "e2"][..]),
        (r#"{"snapshot":{"tags":["b","a"]}}"#, &["e1"][..]),
        (r#"{"snapshot":{"tags":[{"k":"x"}]}}"#, &["e3"][..]),
        (r#"{"snapshot":{"total":10}}"#, &["e1", "e2"][..]),
        (r#"{"snapshot":{"total":10.00}}"#, &["e1", "e2"][..]),
        (r#"{"snapshot":{"total":"10"}}"#, &["e3"][..]),
        (r#"{"event_id":"e2","object_id":"order-2"}"#, &["e2"][..]),
        (r#"{"snapshot":{"customer":"cus_123"}}"#, &[][..]),
        (r#"{"nowhere":null}"#, &[][..]),
        ("{}", &["e1", "e2", "e3"][..]),
    ] {
        assert_eq!(
            found(&app, &cookie, matcher).await.unwrap(),
            expected,
            "{backend:?}: {matcher}"
        );
    }

    for (matcher, named) in [
        ("{\"snapshot\":", "match: not JSON"),
        ("[1]", "match: must be a JSON object"),
    ] {
        let (status, body) = found(&app, &cookie, matcher).await.unwrap_err();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{matcher}");
        assert!(body.contains(named), "{matcher}: {body}");
    }
}

both_backends!(the_event_page_offers_to_find_the_deliveries_with_a_value_of_its_body);
async fn the_event_page_offers_to_find_the_deliveries_with_a_value_of_its_body(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    app.send(
        "shop",
        &event("e1", "order-1", 1, r#"{"customer":"cus_9"}"#),
    )
    .await;
    app.send(
        "shop",
        &event("e2", "order-2", 1, r#"{"customer":"cus_9"}"#),
    )
    .await;
    app.send(
        "shop",
        &event("e3", "order-3", 1, r#"{"customer":"cus_1"}"#),
    )
    .await;
    let id = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'e1'",
        vec![],
    )
    .await
    .unwrap()
    .to_string();

    let (status, body) = call(&app, Some(&cookie), "event", &[("id", &id)]).await;

    assert_eq!(status, StatusCode::OK, "{body}");
    let detail: serde_json::Value = serde_json::from_str(&body).unwrap();
    let field = detail["searchable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f[0] == "/snapshot/customer")
        .cloned()
        .unwrap_or_else(|| panic!("{detail}"));
    let matcher = field[1].as_str().unwrap();
    assert_eq!(matcher, r#"{"snapshot":{"customer":"cus_9"}}"#);
    assert_eq!(found(&app, &cookie, matcher).await.unwrap(), ["e1", "e2"]);
    let (status, html) = page(&app, Some(&cookie), &format!("/events/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("data-testid=\"find-by-field\""), "{html}");
}

/// What the server logs while it runs on this thread (the test's runtime has one thread).
#[derive(Clone, Default)]
struct CapturedLogs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLogs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

both_backends!(a_match_jsonb_refuses_is_a_400_naming_match_and_logs_no_error);
async fn a_match_jsonb_refuses_is_a_400_naming_match_and_logs_no_error(backend: Backend) {
    let logs = CapturedLogs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .finish();
    let _capture = tracing::subscriber::set_default(subscriber);
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    app.send("shop", &event("e1", "order-1", 1, r#"{"a":"b"}"#))
        .await;

    for matcher in [
        r#"{"a":"\u0000"}"#,
        r#"{"a":10e-16384}"#,
        r#"{"a":"\ud800"}"#,
        r#"{"a":1e131073}"#,
    ] {
        let (status, body) = found(&app, &cookie, matcher).await.unwrap_err();
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{backend:?} {matcher}: {body}"
        );
        assert!(body.contains("match: "), "{matcher}: {body}");
        // The export refuses it the same way, before auditing anything.
        let response = no_redirects()
            .get(app.url(&format!(
                "/export/events?format=ndjson&match={}",
                app::url::urlencode(matcher)
            )))
            .header("Cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{matcher}");
        assert!(response.text().await.unwrap().contains("match: "));
    }
    assert_eq!(
        found(&app, &cookie, r#"{"snapshot":{"a":"b"}}"#)
            .await
            .unwrap(),
        ["e1"]
    );
    let logged = logs.text();
    assert!(!logged.contains("ERROR"), "{logged}");
}

/// A statement that would run for minutes, on each backend.
fn endless(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => "SELECT 1 AS n FROM pg_sleep(600)",
        Backend::Sqlite => {
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000000)
             SELECT count(*) AS n FROM c"
        }
    }
}

/// Whether the endless statement is gone from the database: PostgreSQL shows no backend running
/// it; on SQLite every connection of the read pool answers at once (one still stepping through
/// it would not).
async fn endless_statement_is_gone(db: &app::db::Db) -> bool {
    use sea_orm::sqlx;
    match db.backend() {
        sea_orm::DatabaseBackend::Postgres => {
            let running = scalar(
                db,
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND state <> 'idle' AND pid <> pg_backend_pid()",
                vec![],
            )
            .await
            .unwrap_or(0);
            running == 0
        }
        _ => {
            let pool = db.dashboard.get_sqlite_connection_pool();
            let mut held = Vec::new();
            for _ in 0..pool.options().get_max_connections() {
                held.push(pool.acquire().await.unwrap());
            }
            for conn in &mut held {
                let answered = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    sqlx::query("SELECT 1").fetch_one(&mut **conn),
                )
                .await;
                if answered.is_err() {
                    return false;
                }
            }
            true
        }
    }
}

both_backends!(
    a_search_past_its_deadline_is_cancelled_in_the_database_even_when_its_request_is_gone
);
async fn a_search_past_its_deadline_is_cancelled_in_the_database_even_when_its_request_is_gone(
    backend: Backend,
) {
    use app::db::search_bounds::{SearchError, query_within};
    use sea_orm::Statement;
    use std::time::Duration;
    let test_db = test_db(backend).await;
    let db = test_db.db.clone();
    let statement = || Statement::from_string(db.backend(), endless(backend));

    // Past the deadline: the statement is stopped and the search says so.
    let answer = tokio::time::timeout(
        Duration::from_secs(30),
        query_within(&db, statement(), Duration::from_millis(300)),
    )
    .await
    .expect("the search ends at its deadline, not the statement's end");
    assert!(
        matches!(answer, Err(SearchError::TimedOut(_))),
        "{backend:?}: {answer:?}"
    );
    assert!(endless_statement_is_gone(&db).await, "{backend:?}");

    // The request is dropped before the deadline (a browser gone, the server's 408): the
    // statement still stops, at the deadline at the latest.
    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        query_within(&db, statement(), Duration::from_secs(1)),
    )
    .await;
    assert!(dropped.is_err(), "it was still running when dropped");
    let mut gone = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if endless_statement_is_gone(&db).await {
            gone = true;
            break;
        }
    }
    assert!(
        gone,
        "{backend:?}: the dropped search's statement kept running"
    );
    // The connections are fit for other statements (no handler left behind on SQLite).
    assert_eq!(count(&db, "SELECT count(*) FROM webhook_events").await, 0);
}

/// `rows` archive rows whose JSON bodies a search must read one by one (a `match` whose
/// object names an empty object is something the GIN index cannot serve).
async fn many_bodies(db: &app::db::Db, rows: i64) {
    use sea_orm::ConnectionTrait;
    let note = "x".repeat(400);
    let body = format!(
        r#"'{{"event_id":"bulk-' || g || '","object_id":"o","revision":1,"snapshot":{{"customer":{{"id":"cus_' || g || '","tags":["a","b","c"],"note":"{note}"}}}}}}'"#
    );
    let sql = match db.backend() {
        sea_orm::DatabaseBackend::Postgres => format!(
            "INSERT INTO webhook_events (source, event_id, status, outcome, headers, body, received_at)
             SELECT 'shop', 'bulk-' || g, 'processed', 'applied', '{{}}', convert_to({body}, 'UTF8'),
                    now() - g * interval '1 millisecond'
             FROM generate_series(1, {rows}) AS g"
        ),
        _ => format!(
            "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {rows})
             INSERT INTO webhook_events (source, event_id, status, outcome, headers, body, received_at)
             SELECT 'shop', 'bulk-' || g, 'processed', 'applied', '{{}}', CAST({body} AS BLOB),
                    strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now', '-' || g || ' seconds')
             FROM s"
        ),
    };
    db.writer.execute_unprepared(&sql).await.unwrap();
}

/// A server whose requests have 1 s (so a search has 500 ms).
fn quick_config() -> app::config::Config {
    app::config::Config::parse(
        &CONFIG.replace(
            "max_body_bytes = 65536",
            "max_body_bytes = 65536\nrequest_timeout_secs = 1",
        ),
        std::path::Path::new("test.toml"),
        &test_env,
    )
    .unwrap()
}

both_backends!(a_slow_search_answers_408_naming_match_and_leaves_nothing_running);
async fn a_slow_search_answers_408_naming_match_and_leaves_nothing_running(backend: Backend) {
    let app = spawn_app_with(backend, quick_config()).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    many_bodies(&app.db, 200_000).await;

    let (status, body) = found(&app, &cookie, r#"{"snapshot":{"customer":{"nowhere":{}}}}"#)
        .await
        .unwrap_err();

    assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{backend:?}: {body}");
    assert!(
        body.contains("match: the search ran past its deadline"),
        "{body}"
    );
    assert_eq!(app::db::search_bounds::searches_running(), 0);
    if backend == Backend::Postgres {
        let running = count(
            &app.db,
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%hookbox_body_doc(body, body_fields) @>%' AND state <> 'idle' AND pid <> pg_backend_pid()",
        )
        .await;
        assert_eq!(running, 0, "the search's statement was cancelled");
    }
    // A search that finds its page at once still answers.
    assert_eq!(found(&app, &cookie, "{}").await.unwrap().len(), 50);
}

both_backends!(concurrent_searches_are_limited_per_user_and_in_all_with_a_429);
async fn concurrent_searches_are_limited_per_user_and_in_all_with_a_429(backend: Backend) {
    use app::db::search_bounds::{SEARCHES_AT_ONCE, SEARCHES_PER_USER, searches_running};
    use std::time::Duration;
    assert_eq!((SEARCHES_PER_USER, SEARCHES_AT_ONCE), (1, 2));
    // Requests of 10 s: a search has 5 s.
    let config = app::config::Config::parse(
        &CONFIG.replace(
            "max_body_bytes = 65536",
            "max_body_bytes = 65536\nrequest_timeout_secs = 10",
        ),
        std::path::Path::new("test.toml"),
        &test_env,
    )
    .unwrap();
    let app = spawn_app_with(backend, config).await;
    let mut cookies = Vec::new();
    for name in ["vera", "bob", "carol"] {
        with_user(&app, name, Role::Viewer).await;
        cookies.push(sign_in(&app, name, PASSWORD).await.unwrap());
    }
    many_bodies(&app.db, 200_000).await;
    let slow = r#"{"snapshot":{"customer":{"nowhere":{}}}}"#;
    let start_search = |cookie: String| {
        let app = app.clone_handle();
        tokio::spawn(async move { found(&app, &cookie, slow).await })
    };
    let wait_for_running = |n: usize| async move {
        for _ in 0..500 {
            if searches_running() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{n} searches never ran");
    };

    let vera = start_search(cookies[0].clone());
    wait_for_running(1).await;
    let (status, body) = found(&app, &cookies[0], "{}").await.unwrap_err();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{backend:?}: {body}");
    assert!(
        body.contains("you already have 1 body search running"),
        "{body}"
    );

    let bob = start_search(cookies[1].clone());
    wait_for_running(2).await;
    let (status, body) = found(&app, &cookies[2], "{}").await.unwrap_err();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(body.contains("2 body searches are running"), "{body}");
    // Pages without a body search are not limited.
    let (status, _) = call(&app, Some(&cookies[2]), "events", &[]).await;
    assert_eq!(status, StatusCode::OK);

    for search in [vera, bob] {
        // Found nothing, or stopped at its deadline.
        if let Err((status, body)) = search.await.unwrap() {
            assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{body}");
        }
    }
    assert_eq!(searches_running(), 0, "each search gave its place back");
    assert_eq!(found(&app, &cookies[2], "{}").await.unwrap().len(), 50);
}

both_backends!(an_export_with_match_is_a_search_with_its_deadline_and_its_places);
async fn an_export_with_match_is_a_search_with_its_deadline_and_its_places(backend: Backend) {
    use app::db::search_bounds::searches_running;
    let app = spawn_app_with(backend, quick_config()).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    many_bodies(&app.db, 200_000).await;
    let export = |matching: &str| {
        no_redirects()
            .get(app.url(&format!(
                "/export/events?format=ndjson&match={}",
                app::url::urlencode(matching)
            )))
            .header("Cookie", &cookie)
            .send()
    };
    // A match whose keys and values every row holds (the index narrows nothing), that no row
    // contains: stopped at the search deadline, an answer naming match.
    // On PostgreSQL the index answers that match at once: there the statement waits behind a
    // lock instead, for as long as the lock is held.
    let lock = match backend {
        Backend::Postgres => {
            use sea_orm::{ConnectionTrait, TransactionTrait};
            let txn = app.db.writer.begin().await.unwrap();
            txn.execute_unprepared("LOCK TABLE webhook_events IN ACCESS EXCLUSIVE MODE")
                .await
                .unwrap();
            Some(txn)
        }
        Backend::Sqlite => None,
    };
    let slow = export(r#"{"snapshot":{"customer":{"note":"a"}}}"#)
        .await
        .unwrap();
    if let Some(txn) = lock {
        txn.rollback().await.unwrap();
    }
    let status = slow.status();
    let text = slow.text().await.unwrap();
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{backend:?}: {text}");
    assert!(text.contains("match: the search ran past its deadline"));
    assert_eq!(searches_running(), 0);
    // An export that searches holds its place while it is read: the user's next body search,
    // on the page or in another export, is a 429 until it ends.
    let held = export("{}").await.unwrap();
    let status = held.status();
    // (On PostgreSQL a batch of 1,000 places over 200,000 rows was planned in parallel, which
    // the body's expression could not run in: a 503.)
    assert_eq!(status, StatusCode::OK, "{backend:?}");
    assert_eq!(searches_running(), 1);
    let again = export("{}").await.unwrap();
    assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(
        again
            .text()
            .await
            .unwrap()
            .contains("you already have 1 body search running")
    );
    let (status, body) = found(&app, &cookie, "{}").await.unwrap_err();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    drop(held);
    for _ in 0..500 {
        if searches_running() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(searches_running(), 0, "the export gave its place back");
    assert_eq!(found(&app, &cookie, "{}").await.unwrap().len(), 50);
}
