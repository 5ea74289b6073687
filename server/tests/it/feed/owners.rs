//! A consumer belongs to the token that made it: another token, scoped or not, finds nothing
//! there (404) for every use, an operator's token manages it; creating, changing and seeking
//! are audited; one token takes its share of the consumers and of the long polls, not all.

use super::*;

/// The consumer as stored: its selection, committed cursor and lease holder.
async fn stored(app: &TestApp, name: &str) -> (Option<Vec<String>>, String, Option<String>) {
    let c = app::feed::consumers::get(&app.db, name)
        .await
        .unwrap()
        .unwrap();
    (c.types, c.committed.to_string(), c.lease_holder)
}

both_backends!(only_the_token_that_made_a_consumer_or_an_operator_uses_it);
async fn only_the_token_that_made_a_consumer_or_an_operator_uses_it(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "o-1", 1, "{}")).await;
    settled(&app.db).await;
    let shop = token(&app, "shop-reader", Role::Viewer, &["shop"]).await;
    let gh = token(&app, "gh-reader", Role::Viewer, &["gh"]).await;
    let everything = token(&app, "all-reader", Role::Viewer, &[]).await;
    let operator = token(&app, "ops", Role::Operator, &[]).await;
    let path = "/api/v1/feed/consumers/warehouse";
    let (status, body) = put(&app, &shop, path, "").await;
    assert_eq!(status, 201, "{body}");
    let (_, _, page) = get(&app, Some(&shop), &format!("{path}/items")).await;
    let cursor = page["data"][0]["cursor"].as_str().unwrap().to_string();
    let before = stored(&app, "warehouse").await;

    // A token of another source, and a viewer's token of every source: nothing is there.
    for other in [&gh, &everything] {
        let (status, _, body) = get(&app, Some(other), path).await;
        assert_eq!(status, 404, "{body}");
        assert!(
            !body.to_string().contains("shop-reader"),
            "nothing of it is told: {body}"
        );
        let (_, _, listed) = get(&app, Some(other), "/api/v1/feed/consumers").await;
        assert_eq!(listed["data"], serde_json::json!([]), "{listed}");
        let (status, _, _) = get(&app, Some(other), &format!("{path}/items?lease=thief")).await;
        assert_eq!(status, 404, "it cannot read it nor take its lease");
        let commit = format!(r#"{{"cursor":"{cursor}"}}"#);
        assert_eq!(
            post(&app, other, &format!("{path}/commit"), &commit)
                .await
                .0,
            404
        );
        let (status, _) = post(&app, other, &format!("{path}/seek"), r#"{"to":"latest"}"#).await;
        assert_eq!(status, 404);
        let (status, _) = put(&app, other, path, r#"{"types":["other"]}"#).await;
        assert_eq!(status, 404, "it cannot change its selection");
    }
    assert_eq!(
        stored(&app, "warehouse").await,
        before,
        "nothing of it changed"
    );

    // An operator's token manages it, within its owner's sources.
    let (status, _, body) = get(&app, Some(&operator), path).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = put(&app, &operator, path, r#"{"sources":["gh"]}"#).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = put(&app, &operator, path, r#"{"types":["order.updated"]}"#).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(
        &app,
        &operator,
        &format!("{path}/seek"),
        r#"{"to":"latest"}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Its owner still uses it, and commits (not audited).
    let (status, body) = post(&app, &shop, &format!("{path}/seek"), r#"{"to":"earliest"}"#).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(
        &app,
        &shop,
        &format!("{path}/commit"),
        &format!(r#"{{"cursor":"{cursor}"}}"#),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let audited = texts(
        &app.db,
        "SELECT actor, action, detail FROM audit_log WHERE target = 'warehouse' ORDER BY id",
        vec![],
    )
    .await;
    let actions: Vec<(&str, &str)> = audited
        .iter()
        .map(|r| (r[0].as_deref().unwrap(), r[1].as_deref().unwrap()))
        .collect();
    assert_eq!(
        actions,
        [
            ("token shop-reader", "create_feed_consumer"),
            ("token ops", "change_feed_consumer"),
            ("token ops", "seek_feed_consumer"),
            ("token shop-reader", "seek_feed_consumer"),
        ]
    );
    assert_eq!(
        audited[1][2].as_deref(),
        Some(r#"from sources ["shop"], types all to sources ["shop"], types ["order.updated"]"#)
    );
}

both_backends!(one_token_owns_at_most_its_share_of_the_consumers);
async fn one_token_owns_at_most_its_share_of_the_consumers(backend: Backend) {
    let app = spawn_app(backend).await;
    let greedy = token(&app, "greedy", Role::Viewer, &[]).await;
    let other = token(&app, "other", Role::Viewer, &[]).await;
    let share = app::feed::consumers::MAX_CONSUMERS_PER_OWNER;
    for i in 0..share {
        let (status, body) = put(&app, &greedy, &format!("/api/v1/feed/consumers/g{i}"), "").await;
        assert_eq!(status, 201, "{body}");
        if i % 15 == 14 {
            // One token's rate is 20 requests a second.
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    }
    let (status, body) = put(&app, &greedy, "/api/v1/feed/consumers/one-more", "").await;
    assert_eq!(status, 409, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("owns {share} consumers")),
        "{detail}"
    );
    assert!(
        app::feed::consumers::get(&app.db, "one-more")
            .await
            .unwrap()
            .is_none()
    );
    // Its own still change; another token still creates.
    let (status, _) = put(
        &app,
        &greedy,
        "/api/v1/feed/consumers/g0",
        r#"{"types":["t"]}"#,
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = put(&app, &other, "/api/v1/feed/consumers/mine", "").await;
    assert_eq!(status, 201, "{body}");
}

both_backends!(one_token_takes_at_most_its_share_of_the_long_polls);
async fn one_token_takes_at_most_its_share_of_the_long_polls(backend: Backend) {
    let app = spawn_app(backend).await;
    let greedy = token(&app, "greedy", Role::Viewer, &[]).await;
    let other = token(&app, "other", Role::Viewer, &[]).await;
    let share = server::feed::MAX_WAITERS_PER_TOKEN;
    let mut polls = Vec::new();
    for i in 0..share {
        // Paced under the token's rate (20 a second) and the client's (50).
        let (app, greedy) = (app.clone_handle(), greedy.clone());
        polls.push(tokio::spawn(async move {
            get(&app, Some(&greedy), "/api/v1/feed?type=never&wait=30")
                .await
                .0
        }));
        if i % 15 == 14 {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(polls.iter().all(|p| !p.is_finished()), "they all wait");
    let response = app
        .client
        .get(app.url("/api/v1/feed?type=never&wait=30"))
        .bearer_auth(&greedy)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["type"], "urn:hookbox:problem:long-polls-of-token");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("{share} long polls")),
        "{body}"
    );
    // Another token still waits.
    let poll = waiting_poll(&app, &other, "/api/v1/feed?type=never&wait=30".into()).await;
    // An item ends every wait it takes.
    app.send_bytes(
        "gh",
        br#"{"repository":{"id":"r1"}}"#,
        &[("X-Delivery-Id", "d-1"), ("X-Event", "never")],
    )
    .await;
    let ((status, _, body), _) = poll.await.unwrap();
    assert_eq!(
        (status, body["data"].as_array().unwrap().len()),
        (200, 1),
        "{body}"
    );
    for p in polls {
        assert_eq!(p.await.unwrap(), 200);
    }
}

#[tokio::test]
async fn concurrent_creations_take_turns_and_never_pass_a_tokens_share() {
    use app::feed::consumers::{ConsumerError, MAX_CONSUMERS_PER_OWNER, Putter, put};
    use sea_orm::{ConnectionTrait, TransactionTrait};
    let app = spawn_app(Backend::Postgres).await;
    let by = Putter {
        actor: "token greedy",
        owner: Some(7),
        manages_any: false,
    };
    let selection = app::feed::Selection::default();
    for i in 1..MAX_CONSUMERS_PER_OWNER {
        put(&app.db, &format!("g{i}"), &selection, by)
            .await
            .unwrap();
    }
    // One place is left. Two creations arrive together while something holds the consumers'
    // lock.
    let holder = app.db.writer.begin().await.unwrap();
    holder
        .execute_unprepared("SELECT pg_advisory_xact_lock(hashtextextended('feed_consumers', 0))")
        .await
        .unwrap();
    let pid = backend_pid(&holder).await;
    let creations: Vec<_> = ["last-a", "last-b"]
        .into_iter()
        .map(|name| {
            let (db, selection) = (app.db.clone(), selection.clone());
            tokio::spawn(async move { put(&db, name, &selection, by).await })
        })
        .collect();
    // One waits for the database's lock (another process's creation would too); the other waits
    // its turn in this process, holding no connection.
    wait_until_blocked_by(&app.db, pid).await;
    holder.commit().await.unwrap();
    let mut created = 0;
    let mut refused = 0;
    for creation in creations {
        match creation.await.unwrap() {
            Ok((_, true)) => created += 1,
            Err(ConsumerError::TooManyOfOwner) => refused += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((created, refused), (1, 1), "one takes the last place");
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM feed_consumers WHERE owner_token_id = 7"
        )
        .await,
        MAX_CONSUMERS_PER_OWNER
    );
}
