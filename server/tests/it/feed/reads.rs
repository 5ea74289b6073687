//! What `GET /api/v1/feed` serves: the applied and accepted deliveries once each, in commit
//! order, with the snapshot or the payload; paging, filters, scopes and refused parameters; a
//! cursor past the retention is 410; a long poll is woken by a commit.

use super::*;
use app::maintenance::purge::purge_archive;

/// Six deliveries of every outcome; returns nothing, the feed shows what became of them.
async fn deliveries(app: &TestApp) {
    let shop = |id: &str, object: &str, revision: i64, snapshot: &str| {
        event(id, object, revision, snapshot)
    };
    assert_eq!(
        app.send("shop", &shop("e1", "order-1", 2, r#"{"total":1.50}"#))
            .await
            .outcome(),
        "applied"
    );
    assert_eq!(
        app.send("shop", &shop("e0", "order-1", 1, r#"{"total":1}"#))
            .await
            .outcome(),
        "stale"
    );
    assert_eq!(
        app.send("shop", &shop("e1", "order-1", 2, r#"{"total":1.50}"#))
            .await
            .outcome(),
        "duplicate"
    );
    app.send_bytes(
        "gh",
        br#"{"repository":{"id":"r1"},"n":10.0}"#,
        &[("X-Delivery-Id", "d-1"), ("X-Event", "push")],
    )
    .await;
    app.send("shop", "not json").await;
    assert_eq!(
        app.send("shop", &shop("e2", "order-2", 1, r#"{"total":7}"#))
            .await
            .outcome(),
        "applied"
    );
}

both_backends!(the_feed_serves_applied_and_accepted_deliveries_once_each_in_commit_order);
async fn the_feed_serves_applied_and_accepted_deliveries_once_each_in_commit_order(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    deliveries(&app).await;
    let all = token(&app, "all", Role::Viewer, &[]).await;

    let (items, end) = drain(&app, &all, "limit=1", None).await;
    assert_eq!(
        ids(&items),
        ["e1", "d-1", "e2"],
        "one a page, in commit order"
    );
    let first = &items[0];
    assert_eq!(first["source"], "shop");
    assert_eq!(first["object_id"], "order-1");
    assert_eq!(first["revision"], 2);
    assert_eq!(first["outcome"], "applied");
    assert_eq!(
        first["snapshot"],
        serde_json::json!({"total": 1.5}),
        "{first}"
    );
    assert!(first.get("payload").is_none(), "{first}");
    assert!(first["received_at"].as_str().unwrap().ends_with('Z'));
    let dedup = &items[1];
    assert_eq!(dedup["outcome"], "accepted");
    assert_eq!(dedup["type"], "push");
    assert_eq!(dedup["object_id"], "r1");
    assert_eq!(dedup["revision"], Value::Null);
    assert_eq!(
        dedup["payload"],
        serde_json::json!({"repository": {"id": "r1"}, "n": 10.0}),
        "the body as received"
    );
    assert!(dedup.get("snapshot").is_none());
    assert_eq!(end, items[2]["cursor"].as_str().unwrap());

    // Numbers as sent, not as a float would write them.
    let response = app
        .client
        .get(app.url("/api/v1/feed?limit=2"))
        .bearer_auth(&all)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap().replace(' ', "");
    assert!(
        text.contains(r#""total":1.50"#) && text.contains(r#""n":10.0"#),
        "{text}"
    );

    // Nothing new: an empty page that hands the same cursor back.
    let (status, _, body) = get(&app, Some(&all), &format!("/api/v1/feed?after={end}")).await;
    assert_eq!((status, body["data"].as_array().unwrap().len()), (200, 0));
    assert_eq!(body["next_cursor"], end.as_str());
    // A later delivery comes after it.
    app.send("shop", &event("e3", "order-3", 1, "{}")).await;
    let (later, _) = drain(&app, &all, "", Some(end)).await;
    assert_eq!(ids(&later), ["e3"]);

    // include, source, type; a token of some sources reads only theirs.
    let (with_more, _) = drain(&app, &all, "include=stale,duplicate", None).await;
    assert_eq!(ids(&with_more), ["e1", "e0", "e1", "d-1", "e2", "e3"]);
    let outcomes: Vec<&str> = with_more
        .iter()
        .map(|i| i["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "applied",
            "stale",
            "duplicate",
            "accepted",
            "applied",
            "applied"
        ]
    );
    assert_eq!(ids(&drain(&app, &all, "source=gh", None).await.0), ["d-1"]);
    assert_eq!(ids(&drain(&app, &all, "type=push", None).await.0), ["d-1"]);
    assert_eq!(
        ids(&drain(&app, &all, "source=gh,shop&limit=2", None).await.0).len(),
        4
    );
    let shop_only = token(&app, "shop-only", Role::Viewer, &["shop"]).await;
    assert_eq!(
        ids(&drain(&app, &shop_only, "", None).await.0),
        ["e1", "e2", "e3"]
    );
    let (status, _, body) = get(&app, Some(&shop_only), "/api/v1/feed?source=gh").await;
    assert_eq!(status, 404, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("gh"), "{body}");

    // Refused parameters name what is wrong; no token is 401 (another token: one token's rate
    // is 20 a second).
    let all = token(&app, "all-2", Role::Viewer, &[]).await;
    for (query, names) in [
        ("after=12", "cursor"),
        ("after=1.2.3", "cursor"),
        ("wait=31", "wait"),
        ("wait=-1", "wait"),
        ("include=failed", "include"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("source=", "source"),
        ("q=1", "unknown query parameter"),
    ] {
        let (status, content_type, body) =
            get(&app, Some(&all), &format!("/api/v1/feed?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(content_type, "application/problem+json");
        assert!(
            body["detail"].as_str().unwrap().contains(names),
            "{query}: {body}"
        );
    }
    let long_type = "t".repeat(201);
    let (status, _, _) = get(&app, Some(&all), &format!("/api/v1/feed?type={long_type}")).await;
    assert_eq!(status, 400);
    let (status, _, _) = get(&app, None, "/api/v1/feed").await;
    assert_eq!(status, 401);
}

both_backends!(a_cursor_past_the_retention_is_gone_and_names_the_oldest_still_served);
async fn a_cursor_past_the_retention_is_gone_and_names_the_oldest_still_served(backend: Backend) {
    let app = spawn_app(backend).await;
    for (i, id) in ["old-1", "old-2", "kept"].iter().enumerate() {
        app.send("shop", &event(id, &format!("o-{i}"), 1, "{}"))
            .await;
    }
    let all = token(&app, "all", Role::Viewer, &[]).await;
    let (items, _) = drain(&app, &all, "", None).await;
    let cursors: Vec<String> = items
        .iter()
        .map(|i| i["cursor"].as_str().unwrap().to_string())
        .collect();
    let (quiet, moved) = drain(&app, &all, "source=gh", None).await;
    assert!(quiet.is_empty());
    assert_eq!(
        moved, cursors[2],
        "an empty page moves a quiet reader to the latest place served"
    );
    execute(
        &app.db,
        "UPDATE webhook_events SET received_at = $1 WHERE event_id IN ('old-1', 'old-2')",
        vec![(chrono::Utc::now() - chrono::Duration::days(40)).into()],
    )
    .await;
    let cutoff = chrono::Utc::now() - chrono::Duration::days(30);
    assert_eq!(purge_archive(&app.db, cutoff, 1).await.unwrap(), 2);

    // Before the last purged item: gone, naming the cursor to go on from.
    for before in ["0.0", cursors[0].as_str()] {
        let (status, content_type, body) =
            get(&app, Some(&all), &format!("/api/v1/feed?after={before}")).await;
        assert_eq!(status, 410, "{body}");
        assert_eq!(content_type, "application/problem+json");
        assert_eq!(body["oldest_cursor"], cursors[1].as_str(), "{body}");
    }
    // A reader of a source that got nothing was moved along by its empty pages: not gone.
    let (status, _, body) = get(
        &app,
        Some(&all),
        &format!("/api/v1/feed?after={}&source=gh", cursors[2]),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // From the oldest still served, and with no cursor: what is kept.
    assert_eq!(
        ids(&drain(&app, &all, "", Some(cursors[1].clone())).await.0),
        ["kept"]
    );
    assert_eq!(ids(&drain(&app, &all, "", None).await.0), ["kept"]);
}

both_backends!(a_long_poll_waits_for_a_commit_and_answers_it_at_once);
async fn a_long_poll_waits_for_a_commit_and_answers_it_at_once(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("first", "o-1", 1, "{}")).await;
    let all = token(&app, "all", Role::Viewer, &[]).await;
    let (_, end) = drain(&app, &all, "", None).await;

    // Nothing arrives: the poll answers empty when its wait ends, not before.
    let started = std::time::Instant::now();
    let (status, _, body) = get(
        &app,
        Some(&all),
        &format!("/api/v1/feed?after={end}&wait=1"),
    )
    .await;
    assert_eq!((status, body["data"].as_array().unwrap().len()), (200, 0));
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));

    let mut woken = Vec::new();
    let mut after = end;
    for round in 0..5 {
        let poll = waiting_poll(
            &app,
            &all,
            format!("/api/v1/feed?after={after}&wait=20&source=gh"),
        )
        .await;
        // A delivery of another source does not answer it.
        let other = format!("other-{round}");
        app.send("shop", &event(&other, &other, 1, "{}")).await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(
            !poll.is_finished(),
            "the poll waits for its own source's item"
        );
        let sent = std::time::Instant::now();
        let id = format!("d-{round}");
        app.send_bytes(
            "gh",
            br#"{"repository":{"id":"r1"}}"#,
            &[("X-Delivery-Id", &id)],
        )
        .await;
        let ((status, _, body), answered) = poll.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(ids(body["data"].as_array().unwrap()), [id]);
        after = body["next_cursor"].as_str().unwrap().to_string();
        woken.push(answered - sent);
    }
    woken.sort();
    eprintln!("woken after {woken:?}");
    // Woken by the commit, not by the 1 s backstop nor the end of the wait. (Within 100 ms is
    // asserted where it is timed alone: `order::a_long_poll_wakes_within_100_ms_…`.)
    assert!(
        woken[2] < std::time::Duration::from_millis(900),
        "the median wake-up follows the delivery: {woken:?}"
    );
}
