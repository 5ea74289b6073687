//! What bounds the feed's costs and what it tells: a page is bounded by the bytes its items
//! carry (a duplicate carries its event's snapshot), consumers' lag looks at a bounded window
//! whatever their number, names with control characters are refused, and a token of some
//! sources learns nothing of the others' traffic from its empty pages.

use super::*;

both_backends!(a_page_of_duplicates_is_bounded_by_the_snapshots_it_carries);
async fn a_page_of_duplicates_is_bounded_by_the_snapshots_it_carries(backend: Backend) {
    let app = spawn_app(backend).await;
    // 60 kB each (the test server takes bodies up to 64 kB): 40 of them are 2.4 MB.
    let big = format!(r#"{{"pad":"{}"}}"#, "x".repeat(60 * 1024));
    let body = event("e1", "o-1", 1, &big);
    assert_eq!(app.send("shop", &body).await.outcome(), "applied");
    for _ in 0..39 {
        assert_eq!(app.send("shop", &body).await.outcome(), "duplicate");
    }
    // A dedup source's duplicate hands on the body it refers to.
    for _ in 0..2 {
        app.send_bytes(
            "gh",
            br#"{"repository":{"id":"r1"}}"#,
            &[("X-Delivery-Id", "d-1"), ("X-Event", "push")],
        )
        .await;
    }
    settled(&app.db).await;
    let all = token(&app, "all", Role::Viewer, &[]).await;
    let response = app
        .client
        .get(app.url("/api/v1/feed?include=duplicate&limit=500&source=shop"))
        .bearer_auth(&all)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    let page: Value = serde_json::from_str(&text).unwrap();
    let items = page["data"].as_array().unwrap();
    // The page ends at the first item past 1 MiB: the 18th.
    let page_bytes = usize::try_from(app::feed::PAGE_BYTES).unwrap();
    assert!(
        (17..=18).contains(&items.len()),
        "a page carries about 1 MiB, not 40 snapshots: {}",
        items.len()
    );
    assert!(
        text.len() < page_bytes + 62 * 1024,
        "the answer is {} bytes",
        text.len()
    );
    assert_eq!(items[1]["outcome"], "duplicate");
    assert_eq!(
        items[1]["snapshot"]["pad"].as_str().unwrap().len(),
        60 * 1024
    );
    // Cut short by its bytes, with 500 asked for and 40 there, a page is full: its reader is
    // catching up. The last, holding the rest, is not.
    let selection = app::feed::Selection {
        sources: Some(vec!["shop".into()]),
        include_duplicate: true,
        ..app::feed::Selection::default()
    };
    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let page = app::feed::read(&app.db, after, &selection, 500)
            .await
            .unwrap();
        if page.items.is_empty() {
            break;
        }
        pages.push((page.items.len(), page.full));
        after = Some(page.next);
    }
    let n = items.len();
    assert_eq!(pages, [(n, true), (n, true), (40 - 2 * n, false)]);

    let (items, _) = drain(&app, &all, "include=duplicate&source=gh", None).await;
    let payloads: Vec<&Value> = items.iter().map(|i| &i["payload"]).collect();
    assert_eq!(
        payloads,
        [
            &serde_json::json!({"repository": {"id": "r1"}}),
            &serde_json::json!({"repository": {"id": "r1"}})
        ],
        "{items:?}"
    );
    assert_eq!(items[1]["outcome"], "duplicate");
}

both_backends!(consumers_lag_looks_at_a_bounded_window_and_is_right_within_it);
async fn consumers_lag_looks_at_a_bounded_window_and_is_right_within_it(backend: Backend) {
    use app::feed::consumers::{self, LAG_SCAN, Putter};
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "o-1", 1, "{}")).await;
    // `HOOKBOX_LAG_ROWS` and `HOOKBOX_LAG_CONSUMERS` scale it up for a timing by hand.
    let scale = |name: &str, default: i64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let rows = scale("HOOKBOX_LAG_ROWS", LAG_SCAN + 2000);
    let many = scale("HOOKBOX_LAG_CONSUMERS", 30);
    execute(
        &app.db,
        &format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
             INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status,
                 outcome, headers, body, received_at)
             SELECT w.source, w.event_id, w.object_id, w.revision, w.event_type, w.status,
                 w.outcome, w.headers, w.body, w.received_at
             FROM n, webhook_events w WHERE w.id = (SELECT min(id) FROM webhook_events)"
        ),
        vec![],
    )
    .await;
    settled(&app.db).await;
    let by = Putter {
        actor: "test",
        owner: None,
        manages_any: false,
    };
    let of = |source: &str| app::feed::Selection {
        sources: Some(vec![source.to_string()]),
        ..Default::default()
    };
    for i in 0..many {
        let source = if i % 2 == 0 { "shop" } else { "gh" };
        consumers::put(&app.db, &format!("c{i:03}"), &of(source), by)
            .await
            .unwrap();
    }
    // One near the end: five shop items after its cursor.
    consumers::put(&app.db, "near", &of("shop"), by)
        .await
        .unwrap();
    let fifth_last = count(
        &app.db,
        "SELECT id FROM webhook_events ORDER BY feed_tx DESC, id DESC LIMIT 1 OFFSET 5",
    )
    .await;
    let tx = count(
        &app.db,
        &format!("SELECT feed_tx FROM webhook_events WHERE id = {fifth_last}"),
    )
    .await;
    consumers::commit(
        &app.db,
        "near",
        app::feed::Cursor { tx, id: fifth_last },
        None,
    )
    .await
    .unwrap();

    let operator = token(&app, "ops", Role::Operator, &[]).await;
    let started = std::time::Instant::now();
    let (status, _, listed) = get(&app, Some(&operator), "/api/v1/feed/consumers?limit=500").await;
    let took = started.elapsed();
    println!("consumers list: {many} consumers over {rows} rows in {took:?}");
    assert_eq!(status, 200, "{listed}");
    let listed = listed["data"].as_array().unwrap();
    assert_eq!(listed.len() as i64, many + 1);
    let lag = |name: &str| {
        let c = listed.iter().find(|c| c["name"] == name).unwrap();
        (
            c["lag_items"].as_i64().unwrap(),
            c["lag_capped"].as_bool().unwrap(),
        )
    };
    assert_eq!(lag("c000"), (LAG_SCAN, true), "counted up to the window");
    assert_eq!(lag("c001"), (0, true), "none of its source in the window");
    assert_eq!(lag("near"), (5, false), "all of them, within the window");
    let near = listed.iter().find(|c| c["name"] == "near").unwrap();
    assert!(near["lag_seconds"].as_i64().unwrap() >= 0);
    // The same figures, one consumer at a time.
    let one = consumers::get(&app.db, "near").await.unwrap().unwrap();
    let alone = consumers::lag(&app.db, &one).await.unwrap();
    assert_eq!((alone.items, alone.capped), (5, false));
}

both_backends!(names_with_control_characters_are_refused_naming_the_field);
async fn names_with_control_characters_are_refused_naming_the_field(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "o-1", 1, "{}")).await;
    let all = token(&app, "all", Role::Viewer, &[]).await;
    for (query, field) in [("type=%00", "type"), ("source=shop%0A", "source")] {
        let (status, _, body) = get(&app, Some(&all), &format!("/api/v1/feed?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(field) && detail.contains("control character"),
            "{detail}"
        );
    }
    for (request, field) in [
        (r#"{"types":["a\u0000"]}"#, "types"),
        (r#"{"types":["a\tb"]}"#, "types"),
        (r#"{"sources":["shop\u0000"]}"#, "sources"),
    ] {
        let (status, body) = put(&app, &all, "/api/v1/feed/consumers/c", request).await;
        assert_eq!(status, 400, "{request}: {body}");
        assert!(
            body["detail"].as_str().unwrap().starts_with(field),
            "{body}"
        );
    }
    assert!(
        app::feed::consumers::get(&app.db, "c")
            .await
            .unwrap()
            .is_none()
    );
    // One stored before the check breaks nothing: the name matches nothing.
    let by = app::feed::consumers::Putter {
        actor: "test",
        owner: None,
        manages_any: false,
    };
    let selection = app::feed::Selection {
        types: Some(vec!["a\u{0}".into()]),
        ..Default::default()
    };
    app::feed::consumers::put(&app.db, "old", &selection, by)
        .await
        .unwrap();
    let operator = token(&app, "ops", Role::Operator, &[]).await;
    let (status, _, listed) = get(&app, Some(&operator), "/api/v1/feed/consumers").await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["data"][0]["lag_items"], 0);
    let (status, _, page) = get(&app, Some(&operator), "/api/v1/feed/consumers/old/items").await;
    assert_eq!(
        (status, page["data"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{page}"
    );
}

both_backends!(an_empty_page_of_a_token_of_some_sources_tells_nothing_of_the_others);
async fn an_empty_page_of_a_token_of_some_sources_tells_nothing_of_the_others(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "o-1", 2, "{}")).await;
    let shop = token(&app, "shop-only", Role::Viewer, &["shop"]).await;
    let (items, end) = drain(&app, &shop, "", None).await;
    assert_eq!(ids(&items), ["e1"]);
    for i in 0..3 {
        app.send_bytes(
            "gh",
            br#"{"repository":{"id":"r1"}}"#,
            &[("X-Delivery-Id", &format!("d-{i}"))],
        )
        .await;
    }
    let (none, after_gh) = drain(&app, &shop, "", Some(end.clone())).await;
    assert!(none.is_empty());
    assert_eq!(after_gh, end, "the other source's rows do not move it");
    // Its own source's rows that it does not take (a stale one) move it along.
    assert_eq!(
        app.send("shop", &event("e0", "o-1", 1, "{}"))
            .await
            .outcome(),
        "stale"
    );
    let (none, moved) = drain(&app, &shop, "", Some(end.clone())).await;
    assert!(none.is_empty());
    let stale = count(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'e0'",
    )
    .await;
    assert!(moved.ends_with(&format!(".{stale}")), "{moved}");
    // A token of every source moves past everything.
    let all = token(&app, "all", Role::Viewer, &[]).await;
    let (_, everything) = drain(&app, &all, "source=shop", Some(end)).await;
    assert_eq!(everything, moved);
}
