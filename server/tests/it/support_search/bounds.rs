//! The bounds of a search: SQLite's scan of the newest deliveries (and saying so), the length of
//! what was typed, one body search per user at once, and the deadline.

use super::*;
use app::db::search_bounds::{SearchError, begin_search_as, searches_running};
use app::db::support_search::{Limits, MAX_QUERY_BYTES, find as find_in};
use std::time::Duration;

both_backends!(sqlite_searches_the_newest_deliveries_and_says_when_there_were_more);
async fn sqlite_searches_the_newest_deliveries_and_says_when_there_were_more(backend: Backend) {
    let app = spawn_app(backend).await;
    applied(
        &app,
        "shop",
        "old-1",
        "old_10231",
        1,
        r#"{"note":"old-body-value"}"#,
    )
    .await;
    for i in 0..11 {
        applied(
            &app,
            "shop",
            &format!("new-{i}"),
            &format!("fill-{i}"),
            1,
            "{}",
        )
        .await;
    }
    let limits = |scan_rows| Limits {
        scan_rows,
        ..Limits::default()
    };
    let search = |q: &'static str, scan_rows: i64| {
        let db = app.db.clone();
        async move {
            find_in(&db, q, &limits(scan_rows), Duration::from_secs(5))
                .await
                .unwrap()
        }
    };

    let keys = |r: &app::model::FindResult| {
        r.objects
            .iter()
            .map(|o| format!("{}/{}", o.source, o.object_id))
            .collect::<Vec<_>>()
    };
    let suffix = search("10231", 10).await;
    let body = search("old-body-value", 10).await;
    // The whole id, in another case: found through the archive's index past the scan.
    let exact = search("OLD_10231", 10).await;
    let all = search("10231", 100).await;

    assert_eq!(keys(&exact), ["shop/old_10231"], "{backend:?}");
    assert_eq!(keys(&all), ["shop/old_10231"]);
    assert!(!all.bound_reached);
    match backend {
        Backend::Sqlite => {
            assert!(keys(&suffix).is_empty(), "{suffix:?}");
            assert!(keys(&body).is_empty(), "{body:?}");
            assert!(suffix.bound_reached);
            assert_eq!(
                suffix.searched,
                "the ids and bodies of the newest 10 deliveries, and the exact ids of older ones"
            );
            assert!(
                suffix
                    .nothing_found()
                    .contains("(searched the ids and bodies of the newest 10 deliveries")
            );
            assert_eq!(all.searched, "the ids and body of every archived delivery");
        }
        Backend::Postgres => {
            // The indexes serve every row.
            assert_eq!(keys(&suffix), ["shop/old_10231"]);
            assert_eq!(keys(&body), ["shop/old_10231"]);
            assert!(!suffix.bound_reached);
        }
    }
}

both_backends!(what_is_typed_is_bounded_in_length_with_a_400_naming_q);
async fn what_is_typed_is_bounded_in_length_with_a_400_naming_q(backend: Backend) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    let long = "a".repeat(MAX_QUERY_BYTES + 1);

    let (status, body) = find(&app, &cookie, &long).await.unwrap_err();
    assert_eq!(status, StatusCode::BAD_REQUEST, "{backend:?}: {body}");
    assert!(body.contains("q: longer than 200 bytes"), "{body}");
    let (status, html) = page(&app, &cookie, &format!("/search?q={long}")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("q: longer than 200 bytes"), "{html}");
    let (status, body) = find(&app, &cookie, "a\u{1}b").await.unwrap_err();
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("q: holds control characters"), "{body}");

    let found = find(&app, &cookie, &"a".repeat(MAX_QUERY_BYTES))
        .await
        .unwrap();
    assert_eq!(found["objects"], serde_json::json!([]));
    // Viewers only.
    let anonymous = app
        .client
        .post(app.url("/api/find"))
        .form(&[("q", "10231")])
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

both_backends!(a_flood_of_searches_from_one_user_is_refused_with_429_not_queued);
async fn a_flood_of_searches_from_one_user_is_refused_with_429_not_queued(backend: Backend) {
    let app = spawn_app(backend).await;
    let sam = signed_in(&app, "sam", Role::Viewer).await;
    let tess = signed_in(&app, "tess", Role::Viewer).await;
    applied(&app, "shop", "f1", "ord_10231", 1, "{}").await;
    // Sam's one body search is running (its place taken here, in the server's process).
    let running = begin_search_as("sam", "q").unwrap();
    assert_eq!(searches_running(), 1);

    let flood: Vec<_> = (0..20)
        .map(|_| {
            let app = app.clone_handle();
            let sam = sam.clone();
            tokio::spawn(async move { find(&app, &sam, "10231").await })
        })
        .collect();
    for search in flood {
        let (status, body) = search.await.unwrap().unwrap_err();
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{backend:?}: {body}");
        assert!(
            body.contains("q: you already have 1 body search running"),
            "{body}"
        );
    }
    // The payload filter of /events shares the places.
    let (status, _) = call(&app, &sam, "events", &[("match", "{}")]).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(searches_running(), 1, "no refused search kept a place");
    // Another user still searches.
    assert_eq!(
        objects(&find(&app, &tess, "10231").await.unwrap()),
        ["shop/ord_10231"]
    );

    drop(running);
    assert_eq!(searches_running(), 0);
    assert_eq!(
        objects(&find(&app, &sam, "10231").await.unwrap()),
        ["shop/ord_10231"]
    );
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

/// On PostgreSQL: a search blocked behind a lock on the inbox is cancelled at its deadline and
/// answers 408 naming `q`, its place given back.
#[tokio::test]
async fn a_search_past_its_deadline_answers_408_naming_q_on_postgres() {
    use sea_orm::sqlx::{Connection, Executor, PgConnection, Row};
    let app = spawn_app_with(Backend::Postgres, quick_config()).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    applied(&app, "shop", "d1", "ord_10231", 1, "{}").await;
    let url = app.test_db.as_ref().unwrap().url.clone();
    let mut holder = PgConnection::connect(&url).await.unwrap();
    holder.execute("BEGIN").await.unwrap();
    holder
        .execute("LOCK TABLE webhook_inbox IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let pid: i32 = sea_orm::sqlx::query("SELECT pg_backend_pid()")
        .fetch_one(&mut holder)
        .await
        .unwrap()
        .get(0);

    let search = {
        let app = app.clone_handle();
        let cookie = cookie.clone();
        tokio::spawn(async move { find(&app, &cookie, "10231").await })
    };
    wait_until_blocked_by(&app.db, pid).await;
    let (status, body) = search.await.unwrap().unwrap_err();

    assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{body}");
    assert!(
        body.contains("q: the search ran past its deadline of 500 ms"),
        "{body}"
    );
    assert_eq!(searches_running(), 0);
    holder.execute("ROLLBACK").await.unwrap();
    assert_eq!(
        objects(&find(&app, &cookie, "10231").await.unwrap()),
        ["shop/ord_10231"]
    );
}

/// On SQLite: reading 100,000 bodies takes far longer than 50 ms; the scan is interrupted at the
/// deadline and the read pool stays fit.
#[tokio::test]
async fn a_search_past_its_deadline_is_stopped_on_sqlite() {
    use sea_orm::ConnectionTrait;
    let test_db = test_db(Backend::Sqlite).await;
    let db = test_db.db.clone();
    db.writer
        .execute_unprepared(
            r#"WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < 150000)
               INSERT INTO webhook_events (source, event_id, object_id, status, outcome, headers, body, received_at)
               SELECT 'shop', 'bulk-' || g, 'o-' || g, 'processed', 'applied', '{}',
                      CAST('{"event_id":"bulk-' || g || '","snapshot":{"customer":{"email":"c' || g || '@example.com","tags":["a","b"],"note":"' || printf('%.300c', 'x') || '"}}}' AS BLOB),
                      strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now', '-' || g || ' seconds')
               FROM s"#,
        )
        .await
        .unwrap();

    let answer = find_in(
        &db,
        "nobody@example.com",
        &Limits::default(),
        Duration::from_millis(50),
    )
    .await;

    assert!(
        matches!(answer, Err(SearchError::TimedOut(_))),
        "{answer:?}"
    );
    let found = find_in(&db, "o-7", &Limits::default(), Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(found.objects[0].object_id, "o-7");
}

both_backends!(a_result_shows_at_most_its_bound_of_objects_and_says_more_match);
async fn a_result_shows_at_most_its_bound_of_objects_and_says_more_match(backend: Backend) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    for i in 0..51 {
        applied(
            &app,
            "shop",
            &format!("m{i}"),
            &format!("ord_{i:03}"),
            1,
            r#"{"email":"shared@example.com"}"#,
        )
        .await;
    }

    let found = find(&app, &cookie, "ORD_").await.unwrap();
    assert_eq!(objects(&found).len(), 50, "{backend:?}");
    assert_eq!(objects(&found)[0], "shop/ord_000");
    assert_eq!(found["more_objects"], true);
    let (status, html) = page(&app, &cookie, "/search?q=ord_").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("Showing the first 50 objects; more match."),
        "{html}"
    );

    // The body search reads its newest matching deliveries, and says when there were more.
    let small = Limits {
        body_matches: 5,
        ..Limits::default()
    };
    let shared = find_in(
        &app.db,
        "shared@example.com",
        &small,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    let keys: Vec<&str> = shared
        .objects
        .iter()
        .map(|o| o.object_id.as_str())
        .collect();
    assert_eq!(
        keys,
        ["ord_050", "ord_049", "ord_048", "ord_047", "ord_046"]
    );
    assert!(shared.body_more && !shared.more_objects);
    let all = find_in(
        &app.db,
        "shared@example.com",
        &Limits::default(),
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert_eq!(all.objects.len(), 50);
    assert!(all.more_objects && !all.body_more);
}
