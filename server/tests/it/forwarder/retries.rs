//! Failed attempts: retried on the schedule with the same `webhook-id` or after a larger
//! `Retry-After` (of any size, cut to a day), attempts not answered within the timeout, dead
//! deliveries after the last wait, and ingest answering at once while the destination never does.

use super::*;

both_backends!(
    a_failed_attempt_is_retried_with_the_same_webhook_id_after_the_wait_or_a_larger_retry_after
);
async fn a_failed_attempt_is_retried_with_the_same_webhook_id_after_the_wait_or_a_larger_retry_after(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(vec![(503, Some(2)), (500, None)]).await;
    let app = spawn_app_with(backend, config(&url, "[0, 0, 0]")).await;

    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    let got = receiver.wait_for(3).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered' AND attempts = 3",
        1,
    )
    .await;

    let ids: Vec<&str> = got.iter().map(|r| header(r, "webhook-id")).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    let attempts = texts(
        &app.db,
        "SELECT CAST(attempt AS TEXT), CAST(status_code AS TEXT), response_excerpt FROM forward_attempts ORDER BY attempt",
        vec![],
    )
    .await;
    let codes: Vec<Option<String>> = attempts.iter().map(|a| a[1].clone()).collect();
    assert_eq!(
        codes,
        [Some("503".into()), Some("500".into()), Some("200".into())]
    );
    assert_eq!(attempts[0][2].as_deref(), Some("the application's answer"));
    // The 503's Retry-After (2 s) outweighed the schedule's 0 s.
    let gap = scalar(
        &app.db,
        match backend {
            Backend::Postgres => {
                "SELECT CAST(EXTRACT(EPOCH FROM (b.started_at - a.started_at)) * 1000 AS bigint)
                 FROM forward_attempts a JOIN forward_attempts b ON b.delivery_id = a.delivery_id
                 WHERE a.attempt = 1 AND b.attempt = 2"
            }
            Backend::Sqlite => {
                "SELECT CAST((julianday(b.started_at) - julianday(a.started_at)) * 86400000 AS INTEGER)
                 FROM forward_attempts a JOIN forward_attempts b ON b.delivery_id = a.delivery_id
                 WHERE a.attempt = 1 AND b.attempt = 2"
            }
        },
        vec![],
    )
    .await
    .expect("two attempts");
    assert!(gap >= 1900, "{gap} ms between the 503 and the next attempt");
}

both_backends!(after_the_last_wait_of_the_schedule_a_delivery_is_dead);
async fn after_the_last_wait_of_the_schedule_a_delivery_is_dead(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.down.lock().unwrap() = true;
    let app = spawn_app_with(backend, config(&url, "[0]")).await;

    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'dead' AND attempts = 2",
        1,
    )
    .await;
    // Nothing more is attempted.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    assert_eq!(receiver.got().len(), 2);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM forward_attempts").await,
        2
    );
}

both_backends!(an_attempt_not_answered_within_the_timeout_fails_and_is_retried);
async fn an_attempt_not_answered_within_the_timeout_fails_and_is_retried(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.delay.lock().unwrap() = Duration::from_secs(3);
    let app = spawn_app_with(backend, config_timeout(&url, 1, "[1]")).await;

    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    wait_for_count(&app.db, "SELECT count(*) FROM forward_attempts", 1).await;
    *receiver.delay.lock().unwrap() = Duration::ZERO;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;

    let attempts = texts(
        &app.db,
        "SELECT CAST(attempt AS TEXT), CAST(status_code AS TEXT), error, CAST(duration_ms AS TEXT)
         FROM forward_attempts ORDER BY attempt",
        vec![],
    )
    .await;
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0][1], None, "no answer came");
    assert_eq!(attempts[0][2].as_deref(), Some("no answer within 1 s"));
    let waited: i64 = attempts[0][3].as_deref().unwrap().parse().unwrap();
    assert!(
        (1000..3000).contains(&waited),
        "the attempt gave up after its timeout, not the answer: {waited} ms"
    );
    assert_eq!(attempts[1][1].as_deref(), Some("200"));
    let got = receiver.got();
    assert_eq!(got.len(), 2);
    assert_eq!(header(&got[0], "webhook-id"), header(&got[1], "webhook-id"));
}

/// A destination that accepts connections and never answers.
async fn silent_destination() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (url, task)
}

both_backends!(ingest_answers_at_once_while_the_destination_never_answers);
async fn ingest_answers_at_once_while_the_destination_never_answers(backend: Backend) {
    let (url, _destination) = silent_destination().await;
    let app = spawn_app_with(backend, config_timeout(&url, 30, "[60]")).await;

    let mut slowest = Duration::ZERO;
    for n in 0..60 {
        let started = Instant::now();
        let answer = app
            .send(
                "shop",
                &event(&format!("e{n}"), &format!("order-{n}"), 1, "{}"),
            )
            .await;
        slowest = slowest.max(started.elapsed());
        assert_eq!(answer.status, 200);
        assert_eq!(answer.outcome(), "applied");
    }

    // Every delivery answered while the forwarder's attempts hang: ingest never waits for a
    // destination (its 30 s timeout would show in the answers).
    assert!(
        slowest < Duration::from_secs(5),
        "the slowest answer took {slowest:?}"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE status = 'pending'"
        )
        .await,
        60
    );
    // Attempts are in flight (claimed: more than half a batch, at most a batch), and none has
    // finished.
    let deadline = Instant::now() + Duration::from_secs(20);
    let in_flight = loop {
        let claimed = count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE lease_until IS NOT NULL",
        )
        .await;
        if claimed > 16 || Instant::now() > deadline {
            break claimed;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        (17..=32).contains(&in_flight),
        "{in_flight} attempts in flight"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM forward_attempts").await,
        0
    );
}

both_backends!(a_retry_after_of_any_size_is_recorded_and_cut_to_a_day);
async fn a_retry_after_of_any_size_is_recorded_and_cut_to_a_day(backend: Backend) {
    // u64::MAX seconds: a wait no clock can hold (it used to panic the attempt, unrecorded).
    let (receiver, url) = Receiver::start(vec![(503, Some(u64::MAX))]).await;
    let app = spawn_app_with(backend, config(&url, "[0, 0, 0]")).await;

    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    receiver.wait_for(1).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_attempts WHERE status_code = 503",
        1,
    )
    .await;
    let wait = scalar(
        &app.db,
        match backend {
            Backend::Postgres => {
                "SELECT CAST(EXTRACT(EPOCH FROM (d.next_attempt_at - a.started_at)) AS bigint)
                 FROM forward_deliveries d JOIN forward_attempts a ON a.delivery_id = d.id
                 WHERE d.status = 'pending' AND d.attempts = 1"
            }
            Backend::Sqlite => {
                "SELECT CAST((julianday(d.next_attempt_at) - julianday(a.started_at)) * 86400 AS INTEGER)
                 FROM forward_deliveries d JOIN forward_attempts a ON a.delivery_id = d.id
                 WHERE d.status = 'pending' AND d.attempts = 1"
            }
        },
        vec![],
    )
    .await
    .expect("the delivery waits, pending, after one recorded attempt");
    let day = i64::try_from(app::forward::MAX_RETRY_AFTER_SECS).unwrap();
    assert!(
        (day - 60..=day + 60).contains(&wait),
        "waits {wait} s, not a day"
    );
}
