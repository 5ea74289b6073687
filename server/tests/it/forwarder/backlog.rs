//! A destination's backlog: older revisions superseded and never sent after a newer one while it
//! fails, its rate limit spreading the attempts, and the metrics of its backlog and oldest age.

use super::*;

both_backends!(
    while_the_destination_fails_older_revisions_are_superseded_and_never_sent_after_a_newer_one
);
async fn while_the_destination_fails_older_revisions_are_superseded_and_never_sent_after_a_newer_one(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.down.lock().unwrap() = true;
    let app = spawn_app_with(backend, config(&url, "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1]")).await;

    app.send("shop", &event("e1", "order-1", 1, r#"{"v":1}"#))
        .await;
    receiver.wait_for(1).await;
    app.send("shop", &event("e2", "order-1", 2, r#"{"v":2}"#))
        .await;
    app.send("shop", &event("e3", "order-1", 3, r#"{"v":3}"#))
        .await;
    // The application comes back only once revision 3 has been tried (and failed).
    let revision_of = |r: &Received| {
        serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["revision"]
            .as_i64()
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !receiver.got().iter().any(|r| revision_of(r) == 3) {
        assert!(Instant::now() < deadline, "revision 3 was never tried");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    *receiver.down.lock().unwrap() = false;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;

    let revisions: Vec<i64> = receiver.got().iter().map(revision_of).collect();
    assert!(
        revisions.windows(2).all(|w| w[0] <= w[1]),
        "never a step back: {revisions:?}"
    );
    assert_eq!(revisions.last(), Some(&3), "{revisions:?}");
    // The older revisions are superseded when they next come due (a claim supersedes them, never
    // sends them): revision 3 may be delivered before that.
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'pending'",
        0,
    )
    .await;
    assert_eq!(
        receiver.got().iter().map(revision_of).next_back(),
        Some(3),
        "nothing was sent after revision 3"
    );
    assert_eq!(
        texts(
            &app.db,
            "SELECT event_id, status FROM forward_deliveries ORDER BY id",
            vec![]
        )
        .await,
        [
            vec![Some("e1".into()), Some("superseded".into())],
            vec![Some("e2".into()), Some("superseded".into())],
            vec![Some("e3".into()), Some("delivered".into())],
        ]
    );
}

both_backends!(a_destinations_rate_limit_spreads_its_attempts);
async fn a_destinations_rate_limit_spreads_its_attempts(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let app = spawn_app_with(backend, config_with(&url, "[5]", "rate_limit_per_sec = 2")).await;

    for i in 1..=6 {
        app.send(
            "shop",
            &event(&format!("e{i}"), &format!("order-{i}"), 1, "{}"),
        )
        .await;
    }
    receiver.wait_for(6).await;
    wait_for_count(&app.db, "SELECT count(*) FROM forward_attempts", 6).await;

    // A burst of 2, then 2 a second: the sixth attempt starts at least 1.5 s after the first.
    let span = scalar(
        &app.db,
        match backend {
            Backend::Postgres => {
                "SELECT CAST(EXTRACT(EPOCH FROM (max(started_at) - min(started_at))) * 1000 AS bigint)
                 FROM forward_attempts"
            }
            Backend::Sqlite => {
                "SELECT CAST((julianday(max(started_at)) - julianday(min(started_at))) * 86400000 AS INTEGER)
                 FROM forward_attempts"
            }
        },
        vec![],
    )
    .await
    .expect("attempts");
    assert!(span >= 1500, "six attempts within {span} ms");
}

both_backends!(the_metrics_show_each_destinations_backlog_and_its_oldest_age);
async fn the_metrics_show_each_destinations_backlog_and_its_oldest_age(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.down.lock().unwrap() = true;
    // Long waits: what failed once stays pending while the metrics are read.
    let app = spawn_app_with(backend, config(&url, "[3600]")).await;
    let metrics = || async {
        app.client
            .get(app.url("/metrics"))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text")
    };

    let before = metrics().await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    app.send("shop", &event("e2", "order-2", 1, "{}")).await;
    receiver.wait_for(2).await;
    wait_for_count(&app.db, "SELECT count(*) FROM forward_attempts", 2).await;
    // The attempt counter is counted just after the attempt's row commits.
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        let text = metrics().await;
        if text.contains(r#"result="failed"} 2"#) || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    assert!(
        before.contains(r#"hookbox_forward_pending{destination="orders-app"} 0"#),
        "{before}"
    );
    assert!(
        after.contains(r#"hookbox_forward_pending{destination="orders-app"} 2"#),
        "{after}"
    );
    assert!(
        after.contains(r#"hookbox_forward_oldest_pending_seconds{destination="orders-app"}"#),
        "{after}"
    );
    assert!(
        after.contains(
            r#"hookbox_forward_attempts_total{destination="orders-app",result="failed"} 2"#
        ),
        "{after}"
    );
}
