//! What the application receives: a forwarded event exactly as sent and signed for its
//! destination, a replay that applies forwarded like a first delivery, and on PostgreSQL a commit
//! in one process waking the forwarder of another.

use super::*;

both_backends!(a_forwarded_event_arrives_exactly_as_sent_and_signed_for_its_destination);
async fn a_forwarded_event_arrives_exactly_as_sent_and_signed_for_its_destination(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let app = spawn_app_with(backend, config(&url, "[5]")).await;
    let snapshot = r#"{"total": 12345678901234567890, "rate": 0.1}"#;

    let answer = app.send("shop", &event("e1", "order-1", 7, snapshot)).await;
    let got = receiver.wait_for(1).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;

    assert_eq!(answer.outcome(), "applied");
    let request = &got[0];
    let body: serde_json::Value = serde_json::from_str(&request.body).expect("JSON");
    assert_eq!(body["type"], "object.updated");
    assert_eq!(body["source"], "shop");
    assert_eq!(body["event_id"], "e1");
    assert_eq!(body["object_id"], "order-1");
    assert_eq!(body["revision"], 7);
    assert!(
        request
            .body
            .contains(r#""snapshot":{"total": 12345678901234567890, "rate": 0.1}"#),
        "the snapshot is the bytes sent: {}",
        request.body
    );
    assert_eq!(header(request, "content-type"), "application/json");
    // The Standard Webhooks project's own library verifies it with the destination's secret,
    // and refuses it once a byte of the body changed.
    let verifier = standardwebhooks::Webhook::new(DESTINATION_SECRET).expect("secret");
    verifier
        .verify(request.body.as_bytes(), &request.headers)
        .expect("the application's library verifies the request");
    let tampered = request.body.replace("0.1", "0.2");
    assert!(
        verifier
            .verify(tampered.as_bytes(), &request.headers)
            .is_err()
    );
    let id = scalar(&app.db, "SELECT id FROM forward_deliveries", vec![])
        .await
        .expect("a row");
    assert_eq!(header(request, "webhook-id"), format!("fwd_{id}"));
    assert_eq!(
        texts(
            &app.db,
            "SELECT CAST(attempts AS TEXT), CAST(last_status_code AS TEXT) FROM forward_deliveries",
            vec![]
        )
        .await,
        [vec![Some("1".into()), Some("200".into())]]
    );
    assert_eq!(got.len(), 1, "sent once");
}

both_backends!(a_replay_that_applies_is_forwarded_like_a_first_delivery);
async fn a_replay_that_applies_is_forwarded_like_a_first_delivery(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    // The source first reads the revision from the wrong place, so the delivery is invalid.
    let text = format!(
        r#"
[[destinations]]
name = "orders-app"
url = "{url}"
secret_env = "DESTINATION_SECRET"
retry_schedule_secs = [1]

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
revision = "/rev"
forward = ["orders-app"]
"#
    );
    let wrong_config =
        app::config::Config::parse(&text, Path::new("wrong.toml"), &test_env).expect("valid");
    let app = spawn_app_with(backend, wrong_config).await;
    let answer = app
        .send("shop", &event("e1", "order-1", 4, r#"{"v":4}"#))
        .await;
    assert_eq!(answer.outcome(), "invalid");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM forward_deliveries").await,
        0
    );

    // Replayed under the corrected mapping it applies, and is forwarded.
    let original = scalar(&app.db, "SELECT id FROM webhook_events", vec![])
        .await
        .unwrap();
    let stored = app::db::events::stored_delivery(&app.db, original)
        .await
        .unwrap()
        .unwrap();
    let recorded =
        app::ingest::replay::replay(&app.db, &config(&url, "[1]"), &stored, "olga", false)
            .await
            .unwrap();
    assert_eq!(recorded.outcome.name(), "applied");
    let got = receiver.wait_for(1).await;

    let body: serde_json::Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(body["event_id"], "e1");
    assert_eq!(body["revision"], 4);
    assert_eq!(
        texts(
            &app.db,
            "SELECT CAST(archive_id AS TEXT) FROM forward_deliveries",
            vec![]
        )
        .await,
        [vec![Some(recorded.archive_id.to_string())]]
    );
}

#[tokio::test]
async fn on_postgresql_a_commit_in_one_process_wakes_the_forwarder_of_another() {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let (db, _) = fresh_postgres(&cluster_url()).await;
    // The forwarder polls every ten minutes: only the notification can wake it in time.
    let forwarding = spawn_app_on_with_state(db.clone(), config(&url, "[1]"), |state| {
        let mut settings = (*state.settings).clone();
        settings.forward_poll = Duration::from_secs(600);
        state.settings = Arc::new(settings);
    })
    .await;
    // The other process ingests and forwards nothing itself (no destination of its own).
    let mut ingest_only = config(&url, "[1]");
    ingest_only.destinations.clear();
    let ingesting = spawn_app_on_with_state(db.clone(), ingest_only, |_| {}).await;
    // The forwarding process listens before anything is sent.
    wait_for_count(
        &db,
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND query = 'LISTEN \"hookbox_forward\"'",
        1,
    )
    .await;

    let answer = ingesting
        .send("shop", &event("e1", "order-1", 1, "{}"))
        .await;
    assert_eq!(answer.outcome(), "applied");
    let got = receiver.wait_for(1).await;

    assert!(header(&got[0], "webhook-id").starts_with("fwd_"));
    wait_for_count(
        &forwarding.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;
}
