//! `POST /api/v1/events/{id}/replay`: operators only (a viewer's token is 403), another source's
//! delivery is 404, a dry run writes nothing, a replay is archived and audited under the token's
//! name, and one that would fail as the original did is 409 unless sent `anyway`.

use super::*;

both_backends!(an_operators_token_replays_a_delivery_and_a_viewers_cannot);
async fn an_operators_token_replays_a_delivery_and_a_viewers_cannot(backend: Backend) {
    let app = spawn_app(backend).await;
    assert_eq!(
        app.send("shop", &event("evt_1", "order-1", 2, r#"{"n":1}"#))
            .await
            .outcome(),
        "applied"
    );
    // Invalid: no revision. Its replay fails the same way.
    let invalid = app
        .send(
            "shop",
            r#"{"event_id":"evt_bad","object_id":"order-2","snapshot":{}}"#,
        )
        .await;
    assert_eq!(invalid.status, 422);
    let (good, bad) = (
        scalar(
            &app.db,
            "SELECT id FROM webhook_events WHERE event_id = 'evt_1'",
            vec![],
        )
        .await
        .unwrap(),
        scalar(
            &app.db,
            "SELECT id FROM webhook_events WHERE event_id = 'evt_bad'",
            vec![],
        )
        .await
        .unwrap(),
    );
    let viewer = token(&app, "viewer", Role::Viewer, &[]).await;
    let operator = token(&app, "retry-script", Role::Operator, &[]).await;
    let elsewhere = token(&app, "gh-operator", Role::Operator, &["gh"]).await;
    let path = format!("/api/v1/events/{good}/replay");

    let (status, problem) = post(&app, &viewer, &path, "{}").await;
    assert_eq!((status, problem["status"].as_i64()), (403, Some(403)));
    let (status, _) = post(&app, &elsewhere, &path, "{}").await;
    assert_eq!(
        status, 404,
        "another source's delivery does not exist for the token"
    );

    let before = count(&app.db, "SELECT count(*) FROM webhook_events").await;
    let (status, dry) = post(&app, &operator, &path, r#"{"dry_run":true}"#).await;
    assert_eq!(status, 200, "{dry}");
    assert_eq!(
        (
            dry["outcome"].as_str(),
            dry["dry_run"].as_bool(),
            &dry["event"]
        ),
        (Some("duplicate"), Some(true), &serde_json::Value::Null)
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        before
    );

    let (status, done) = post(&app, &operator, &path, "").await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["outcome"], "duplicate");
    assert_eq!(done["event"]["replay_of"], good);
    assert_eq!(done["event"]["replayed_by"], "token retry-script");
    let audited = texts(
        &app.db,
        "SELECT actor, action FROM audit_log WHERE action = 'replay'",
        vec![],
    )
    .await;
    assert_eq!(
        audited,
        [[
            Some("token retry-script".to_string()),
            Some("replay".to_string())
        ]]
    );

    // A replay that would fail as the original did: 409, unless insisted on.
    let bad_path = format!("/api/v1/events/{bad}/replay");
    let (status, problem) = post(&app, &operator, &bad_path, "{}").await;
    assert_eq!(status, 409, "{problem}");
    let (status, done) = post(&app, &operator, &bad_path, r#"{"anyway":true}"#).await;
    assert_eq!((status, done["outcome"].as_str()), (200, Some("invalid")));
    // A body that is not the request's is named.
    let (status, problem) = post(&app, &operator, &path, r#"{"dry-run":true}"#).await;
    assert_eq!(status, 400);
    assert!(
        problem["detail"].as_str().unwrap().contains("dry-run"),
        "{problem}"
    );
}

both_backends!(a_bulk_replay_runs_only_for_the_count_its_dry_run_answered);
async fn a_bulk_replay_runs_only_for_the_count_its_dry_run_answered(backend: Backend) {
    let app = spawn_app(backend).await;
    // Two failures: a revision reused by another event id.
    app.send("shop", &event("evt_1", "order-1", 1, r#"{"a":1}"#))
        .await;
    for id in ["evt_2", "evt_3"] {
        let answer = app
            .send("shop", &event(id, "order-1", 1, r#"{"a":2}"#))
            .await;
        assert_eq!(answer.status, 409, "{:?}", answer.body);
    }
    let operator = token(&app, "bulk-script", Role::Operator, &["shop"]).await;
    let path = "/api/v1/events/replay";
    let (status, dry) = post(&app, &operator, path, r#"{"source":"shop","dry_run":true}"#).await;
    assert_eq!(status, 200, "{dry}");
    assert_eq!(dry["matched"], 2);
    let count = dry["count"].as_u64().unwrap() as usize;
    let skipped = dry["skipped"]["same_failure"].as_u64().unwrap() as usize;
    assert_eq!(count + skipped, 2, "{dry}");
    // The wrong count: 409 with the actual one, nothing written.
    let before = count_rows(&app).await;
    let wrong = count + 1;
    let (status, problem) = post(
        &app,
        &operator,
        path,
        &format!(r#"{{"source":"shop","expected_count":{wrong}}}"#),
    )
    .await;
    assert_eq!(status, 409, "{problem}");
    assert_eq!(problem["actual_count"].as_u64(), Some(count as u64));
    assert_eq!(count_rows(&app).await, before);
    // Without a count: 400 naming it. With the right one: done.
    let (status, problem) = post(&app, &operator, path, r#"{"source":"shop"}"#).await;
    assert_eq!(status, 400);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("expected_count")
    );
    let (status, done) = post(
        &app,
        &operator,
        path,
        &format!(r#"{{"source":"shop","expected_count":{count}}}"#),
    )
    .await;
    assert_eq!(
        (status, done["dry_run"].as_bool()),
        (200, Some(false)),
        "{done}"
    );
    assert_eq!(count_rows(&app).await, before + count as i64);
}

async fn count_rows(app: &TestApp) -> i64 {
    count(&app.db, "SELECT count(*) FROM webhook_events").await
}

both_backends!(a_bulk_replay_takes_status_failed_and_match_as_an_object);
async fn a_bulk_replay_takes_status_failed_and_match_as_an_object(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("evt_1", "order-1", 1, r#"{"a":1}"#))
        .await;
    // Two failures: the revision reused with other bodies, one naming a customer.
    for (id, body) in [
        ("evt_2", r#"{"customer":"cus_9"}"#),
        ("evt_3", r#"{"a":2}"#),
    ] {
        let answer = app.send("shop", &event(id, "order-1", 1, body)).await;
        assert_eq!(answer.status, 409, "{:?}", answer.body);
    }
    let operator = token(&app, "bulk-script", Role::Operator, &["shop"]).await;
    let path = "/api/v1/events/replay";
    // `status` is a field of the filter: failed is what a bulk replay takes.
    let (status, dry) = post(
        &app,
        &operator,
        path,
        r#"{"source":"shop","status":"failed","dry_run":true}"#,
    )
    .await;
    assert_eq!(status, 200, "{dry}");
    assert_eq!(dry["matched"], 2, "{dry}");
    // Any other status is a 400 naming the field and the value.
    let (status, problem) = post(
        &app,
        &operator,
        path,
        r#"{"source":"shop","status":"applied","dry_run":true}"#,
    )
    .await;
    assert_eq!(status, 400, "{problem}");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("status:") && detail.contains("applied"),
        "{detail}"
    );
    // `match` as the JSON object a program sends: only the customer's failure.
    let (status, dry) = post(
        &app,
        &operator,
        path,
        r#"{"source":"shop","match":{"snapshot":{"customer":"cus_9"}},"dry_run":true}"#,
    )
    .await;
    assert_eq!(status, 200, "{dry}");
    assert_eq!(dry["matched"], 1, "{dry}");
    let (status, problem) = post(&app, &operator, path, r#"{"match":[1],"dry_run":true}"#).await;
    assert_eq!(status, 400, "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().starts_with("match:"),
        "{problem}"
    );
}
