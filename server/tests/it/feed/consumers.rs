//! Named consumers: created at the oldest item kept, read from their committed cursor; a commit
//! never moves back nor past what was served; seek to the earliest, the latest or a time; a
//! lease keeps a second reader out; scopes; at most 100; an operator deletes one. (Owners and
//! each token's share: `owners`.)

use super::*;

both_backends!(a_consumer_reads_from_its_committed_cursor_commits_forward_and_seeks);
async fn a_consumer_reads_from_its_committed_cursor_commits_forward_and_seeks(backend: Backend) {
    let app = spawn_app(backend).await;
    let before_any = chrono::Utc::now() - chrono::Duration::seconds(5);
    for i in 1..=3 {
        app.send("shop", &event(&format!("e{i}"), &format!("o-{i}"), 1, "{}"))
            .await;
    }
    app.send_bytes(
        "gh",
        br#"{"repository":{"id":"r1"}}"#,
        &[("X-Delivery-Id", "d-1")],
    )
    .await;
    settled(&app.db).await;
    let loader = token(&app, "loader", Role::Viewer, &[]).await;
    let path = "/api/v1/feed/consumers/warehouse";

    let (status, body) = put(&app, &loader, path, r#"{"sources":["shop"]}"#).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["committed"], "0.0");
    assert_eq!(
        (body["lag_items"].as_i64(), body["created_by"].as_str()),
        (Some(3), Some("token loader"))
    );
    let (status, body) = put(&app, &loader, path, r#"{"sources":["shop"],"types":["t"]}"#).await;
    assert_eq!(
        (status, body["types"].clone()),
        (200, serde_json::json!(["t"]))
    );
    let (status, _) = put(&app, &loader, path, r#"{"sources":["shop"]}"#).await;
    assert_eq!(status, 200);

    let (status, _, page) = get(&app, Some(&loader), &format!("{path}/items?limit=2")).await;
    assert_eq!(status, 200, "{page}");
    let page = page["data"].as_array().unwrap().clone();
    assert_eq!(ids(&page), ["e1", "e2"]);
    // A crash before the commit: the same items again.
    let (_, _, again) = get(&app, Some(&loader), &format!("{path}/items?limit=2")).await;
    assert_eq!(ids(again["data"].as_array().unwrap()), ["e1", "e2"]);

    let second = page[1]["cursor"].as_str().unwrap();
    let (status, body) = post(
        &app,
        &loader,
        &format!("{path}/commit"),
        &format!(r#"{{"cursor":"{second}"}}"#),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["committed"].as_str(), body["lag_items"].as_i64()),
        (Some(second), Some(1))
    );
    assert!(body["lag_seconds"].as_i64().unwrap() >= 0);
    // The same commit again (a retry) is fine; an earlier one is 409; so is one never served.
    let (status, _) = post(
        &app,
        &loader,
        &format!("{path}/commit"),
        &format!(r#"{{"cursor":"{second}"}}"#),
    )
    .await;
    assert_eq!(status, 200);
    let first = page[0]["cursor"].as_str().unwrap();
    let (status, body) = post(
        &app,
        &loader,
        &format!("{path}/commit"),
        &format!(r#"{{"cursor":"{first}"}}"#),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("never moves back"),
        "{body}"
    );
    let (status, body) = post(
        &app,
        &loader,
        &format!("{path}/commit"),
        r#"{"cursor":"9223372036854775807.1"}"#,
    )
    .await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = post(
        &app,
        &loader,
        &format!("{path}/commit"),
        r#"{"cursor":"x"}"#,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = post(&app, &loader, &format!("{path}/commit"), "{}").await;
    assert_eq!(status, 400, "{body}");
    let (_, _, rest) = get(&app, Some(&loader), &format!("{path}/items")).await;
    assert_eq!(ids(rest["data"].as_array().unwrap()), ["e3"]);
    let stored = app::feed::consumers::get(&app.db, "warehouse")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.committed.to_string(), second, "the commit is stored");

    // Seek: the earliest, the latest, a time (with an operator's token, which manages any
    // consumer: one token's rate is 20 a second).
    let loader = token(&app, "loader-2", Role::Operator, &[]).await;
    let seek = |to: &str| format!(r#"{{"to":"{to}"}}"#);
    let (status, body) = post(&app, &loader, &format!("{path}/seek"), &seek("earliest")).await;
    assert_eq!(
        (status, body["lag_items"].as_i64()),
        (200, Some(3)),
        "{body}"
    );
    let (status, body) = post(&app, &loader, &format!("{path}/seek"), &seek("latest")).await;
    assert_eq!(
        (status, body["lag_items"].as_i64()),
        (200, Some(0)),
        "{body}"
    );
    let (_, _, none) = get(&app, Some(&loader), &format!("{path}/items")).await;
    assert_eq!(none["data"].as_array().unwrap().len(), 0);
    let (status, body) = post(
        &app,
        &loader,
        &format!("{path}/seek"),
        &seek(&before_any.to_rfc3339()),
    )
    .await;
    assert_eq!(
        (status, body["lag_items"].as_i64()),
        (200, Some(3)),
        "{body}"
    );
    let (status, body) = post(&app, &loader, &format!("{path}/seek"), &seek("yesterday")).await;
    assert_eq!(status, 400, "{body}");
    let seeks = count(
        &app.db,
        "SELECT count(*) FROM audit_log WHERE action = 'seek_feed_consumer' AND actor = 'token loader-2' AND target = 'warehouse'",
    )
    .await;
    assert_eq!(seeks, 3, "each seek is audited");

    // A consumer of every source reads the dedup source's item too.
    let (status, _) = put(&app, &loader, "/api/v1/feed/consumers/everything", "").await;
    assert_eq!(status, 201);
    let (_, _, every) = get(
        &app,
        Some(&loader),
        "/api/v1/feed/consumers/everything/items",
    )
    .await;
    assert_eq!(
        ids(every["data"].as_array().unwrap()),
        ["e1", "e2", "e3", "d-1"]
    );

    // Names are bounded and plain.
    for bad in ["a%20b", &"n".repeat(65)] {
        let (status, body) = put(&app, &loader, &format!("/api/v1/feed/consumers/{bad}"), "").await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, body) = put(
        &app,
        &loader,
        "/api/v1/feed/consumers/x",
        r#"{"sources":["nope"]}"#,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = put(
        &app,
        &loader,
        "/api/v1/feed/consumers/x",
        r#"{"sources":[]}"#,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = put(&app, &loader, "/api/v1/feed/consumers/x", r#"{"limit":1}"#).await;
    assert_eq!(status, 400, "{body}");
}

both_backends!(a_lease_keeps_a_second_reader_out_until_it_ends);
async fn a_lease_keeps_a_second_reader_out_until_it_ends(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "o-1", 1, "{}")).await;
    settled(&app.db).await;
    let loader = token(&app, "loader", Role::Viewer, &[]).await;
    let path = "/api/v1/feed/consumers/leased";
    put(&app, &loader, path, "").await;

    let (status, _, body) = get(&app, Some(&loader), &format!("{path}/items?lease=copy-a")).await;
    assert_eq!(status, 200, "{body}");
    let cursor = body["data"][0]["cursor"].as_str().unwrap().to_string();
    for other in ["?lease=copy-b", ""] {
        let (status, _, body) = get(&app, Some(&loader), &format!("{path}/items{other}")).await;
        assert_eq!(status, 409, "{other}: {body}");
        assert!(body["detail"].as_str().unwrap().contains("lease"), "{body}");
    }
    let (status, _) = post(
        &app,
        &loader,
        &format!("{path}/commit"),
        &format!(r#"{{"cursor":"{cursor}","lease":"copy-b"}}"#),
    )
    .await;
    assert_eq!(status, 409);
    let (status, _) = post(
        &app,
        &loader,
        &format!("{path}/seek"),
        r#"{"to":"earliest"}"#,
    )
    .await;
    assert_eq!(status, 409);
    let (status, body) = post(
        &app,
        &loader,
        &format!("{path}/commit"),
        &format!(r#"{{"cursor":"{cursor}","lease":"copy-a"}}"#),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["lease_until"].is_string(), "{body}");
    assert!(
        body.get("lease_holder").is_none(),
        "the holder's name is not shown: {body}"
    );

    // The lease ends: the other copy takes over.
    execute(
        &app.db,
        "UPDATE feed_consumers SET lease_until = $1",
        vec![(chrono::Utc::now() - chrono::Duration::seconds(1)).into()],
    )
    .await;
    let (status, _, body) = get(&app, Some(&loader), &format!("{path}/items?lease=copy-b")).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = get(&app, Some(&loader), &format!("{path}/items?lease=copy-a")).await;
    assert_eq!(status, 409);
    let (status, _, body) = get(&app, Some(&loader), &format!("{path}/items?lease=a%20b")).await;
    assert_eq!(status, 400, "{body}");
}

both_backends!(scopes_bound_who_uses_a_consumer_and_an_operator_deletes_one);
async fn scopes_bound_who_uses_a_consumer_and_an_operator_deletes_one(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "o-1", 1, "{}")).await;
    let all = token(&app, "all", Role::Viewer, &[]).await;
    let shop = token(&app, "shop-reader", Role::Viewer, &["shop"]).await;
    let operator = token(&app, "ops", Role::Operator, &[]).await;

    put(&app, &all, "/api/v1/feed/consumers/everything", "").await;
    // A token of some sources: consumers of other sources are not there for it.
    let (status, _, _) = get(&app, Some(&shop), "/api/v1/feed/consumers/everything").await;
    assert_eq!(status, 404);
    let (status, _) = put(
        &app,
        &shop,
        "/api/v1/feed/consumers/everything",
        r#"{"sources":["shop"]}"#,
    )
    .await;
    assert_eq!(status, 404, "it cannot take over another's consumer either");
    let (status, _) = put(
        &app,
        &shop,
        "/api/v1/feed/consumers/mine",
        r#"{"sources":["gh"]}"#,
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = put(&app, &shop, "/api/v1/feed/consumers/mine", "").await;
    assert_eq!(
        (status, body["sources"].clone()),
        (201, serde_json::json!(["shop"])),
        "{body}"
    );
    let (_, _, listed) = get(&app, Some(&shop), "/api/v1/feed/consumers").await;
    let names: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mine"]);
    // Another token's consumers are not there for it, whatever it sees.
    let (_, _, listed) = get(&app, Some(&all), "/api/v1/feed/consumers").await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["data"][0]["name"], "everything");
    // An operator's token sees them all, by pages.
    let (_, _, listed) = get(&app, Some(&operator), "/api/v1/feed/consumers?limit=1").await;
    assert_eq!(listed["data"][0]["name"], "everything");
    assert_eq!(listed["next_cursor"], "everything");

    // Deleting is an operator's.
    assert_eq!(delete(&app, &all, "/api/v1/feed/consumers/mine").await, 403);
    assert_eq!(
        delete(&app, &operator, "/api/v1/feed/consumers/mine").await,
        204
    );
    assert!(
        app::feed::consumers::get(&app.db, "mine")
            .await
            .unwrap()
            .is_none()
    );
    let audited = texts(
        &app.db,
        "SELECT actor, action, target FROM audit_log WHERE action = 'delete_feed_consumer'",
        vec![],
    )
    .await;
    assert_eq!(
        audited,
        [[
            Some("token ops".to_string()),
            Some("delete_feed_consumer".into()),
            Some("mine".into())
        ]]
    );
    assert_eq!(
        delete(&app, &operator, "/api/v1/feed/consumers/mine").await,
        404
    );

    // At most 100: the 101st is refused and nothing is stored.
    let selection = app::feed::Selection::default();
    let by = app::feed::consumers::Putter {
        actor: "test",
        owner: None,
        manages_any: false,
    };
    for i in 0..99 {
        app::feed::consumers::put(&app.db, &format!("c{i:03}"), &selection, by)
            .await
            .unwrap();
    }
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM feed_consumers").await,
        100
    );
    let (status, body) = put(&app, &all, "/api/v1/feed/consumers/one-more", "").await;
    assert_eq!(status, 409, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("100"), "{body}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM feed_consumers").await,
        100
    );
    let (status, _) = put(
        &app,
        &all,
        "/api/v1/feed/consumers/everything",
        r#"{"types":["t"]}"#,
    )
    .await;
    assert_eq!(status, 200, "an existing one still changes");
}
