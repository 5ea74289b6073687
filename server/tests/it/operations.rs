//! What monitoring and protection see: health, metrics, request ids, rate limits.

use crate::support::*;

#[tokio::test]
async fn metrics_count_deliveries_authentication_failures_and_the_pool() {
    let app = spawn_app(Backend::Postgres).await;
    let before = unix_now();
    app.send("shop", &event("e1", "o1", 1, "{}")).await;
    app.send("shop", &event("e1", "o1", 1, "{}")).await;
    let after = unix_now();
    app.post("shop", &[], event("e2", "o1", 2, "{}").into_bytes())
        .await;
    app.post("no-such-source", &[], b"{}".to_vec()).await;
    let too_large = vec![b' '; 65537];
    app.send_bytes("shop", &too_large, &[]).await;

    let metrics = metrics_text(&app).await;

    for expected in [
        r#"hookbox_deliveries_total{source="shop",outcome="applied"} 1"#,
        r#"hookbox_deliveries_total{source="shop",outcome="duplicate"} 1"#,
        r#"hookbox_auth_failures_total{source="shop"} 1"#,
        r#"hookbox_db_pool_connections{state="max"} 16"#,
        "hookbox_db_pool_waiting 0",
        r#"hookbox_ingest_transaction_duration_seconds_bucket{source="shop",le="+Inf"} 2"#,
        r#"hookbox_http_request_duration_seconds_count{method="POST",route="/hooks/{source}",status="200"} 2"#,
        // Every request refused before ingest, by source and reason; an unknown source's name
        // is not a label value (the sender chooses it).
        r#"hookbox_refused_requests_total{source="shop",reason="unauthorized"} 1"#,
        r#"hookbox_refused_requests_total{source="shop",reason="too_large"} 1"#,
        r#"hookbox_refused_requests_total{source="(unknown)",reason="unknown_source"} 1"#,
        r#"hookbox_source_info{source="shop"} 1"#,
        r#"hookbox_source_info{source="limited"} 1"#,
        r#"hookbox_deliveries_total{source="shop",outcome="unavailable"} 0"#,
        // Nothing has run yet: "never" is 0, not a missing series.
        "hookbox_last_purge_timestamp_seconds 0",
        "hookbox_verify_last_run_timestamp_seconds 0",
        "hookbox_verify_last_run_drifts 0",
        r#"hookbox_metrics_read_failures_total{read="verify_runs"} 0"#,
    ] {
        assert!(
            metrics.contains(expected),
            "missing {expected} in:\n{metrics}"
        );
    }
    assert!(!metrics.contains("no-such-source"), "{metrics}");
    // The time of the last recorded delivery, not of the refused one after it.
    let last = sample(
        &metrics,
        r#"hookbox_last_delivery_timestamp_seconds{source="shop"}"#,
    );
    assert!(
        (before..=after).contains(&last),
        "{last} not within [{before}, {after}]"
    );
    assert!(
        !metrics.contains(r#"hookbox_last_delivery_timestamp_seconds{source="limited"}"#),
        "a source that sent nothing has no last delivery"
    );
}

both_backends!(the_metrics_show_the_last_purge_and_the_last_verify_run);
async fn the_metrics_show_the_last_purge_and_the_last_verify_run(backend: Backend) {
    use sea_orm::ConnectionTrait;

    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "o1", 1, "{}")).await;
    app.db
        .dashboard
        .execute_unprepared("UPDATE object_state SET revision = 7 WHERE object_id = 'o1'")
        .await
        .expect("a drifted projection row");

    let before = unix_now();
    app::maintenance::daily::run_once(
        &app.db,
        &app::maintenance::purge::Policy::uniform(30),
        None,
        30,
    )
    .await;
    let cutoff = app::maintenance::purge::retention_cutoff(chrono::Utc::now(), 30);
    let report = app::maintenance::verify::verify(&app.db, cutoff, false)
        .await
        .expect("verify");
    let after = unix_now();
    assert_eq!(report.drifts.len(), 1, "{backend:?}");

    let metrics = metrics_text(&app).await;
    for expected in [
        r#"hookbox_purge_runs_total{outcome="ok"} 1"#,
        "hookbox_verify_last_run_drifts 1",
        "hookbox_verify_last_run_repaired 0",
    ] {
        assert!(
            metrics.contains(expected),
            "{backend:?}: missing {expected} in:\n{metrics}"
        );
    }
    for series in [
        "hookbox_last_purge_timestamp_seconds",
        "hookbox_verify_last_run_timestamp_seconds",
    ] {
        let at = sample(&metrics, series);
        // `verify_runs.ran_at` may be stored to the millisecond or the microsecond.
        assert!(
            (before - 0.001..=after).contains(&at),
            "{backend:?}: {series} {at} not within [{before}, {after}]"
        );
    }
}

both_backends!(the_metrics_count_each_destinations_dead_deliveries);
async fn the_metrics_count_each_destinations_dead_deliveries(backend: Backend) {
    use crate::forwarder::{Receiver, config, wait_for_count};

    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.down.lock().expect("the receiver's flag") = true;
    // One retry at once, then dead.
    let app = spawn_app_with(backend, config(&url, "[0]")).await;
    let before = metrics_text(&app).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'dead'",
        1,
    )
    .await;

    let after = metrics_text(&app).await;
    assert!(
        before.contains(r#"hookbox_forward_dead{destination="orders-app"} 0"#)
            && before.contains(
                r#"hookbox_forward_attempts_total{destination="orders-app",result="dead"} 0"#
            ),
        "{backend:?}: {before}"
    );
    assert!(
        after.contains(r#"hookbox_forward_dead{destination="orders-app"} 1"#)
            && after.contains(
                r#"hookbox_forward_attempts_total{destination="orders-app",result="dead"} 1"#
            ),
        "{backend:?}: {after}"
    );
    assert!(
        after.contains(r#"hookbox_metrics_read_failures_total{read="forward_dead"} 0"#),
        "{backend:?}: {after}"
    );
}

/// The value of the one sample of `series` (its name and labels exactly) in a scrape.
fn sample(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in:\n{metrics}"))
        .parse()
        .expect("a number")
}

fn unix_now() -> f64 {
    chrono::Utc::now().timestamp_micros() as f64 / 1e6
}

async fn metrics_text(app: &TestApp) -> String {
    app.client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("answer")
        .text()
        .await
        .expect("text")
}

#[tokio::test]
async fn a_delivery_waiting_for_a_pool_connection_shows_in_the_waiting_gauge() {
    use sea_orm::TransactionTrait;

    let app = spawn_app(Backend::Postgres).await;
    // Every connection of the pool taken by an open transaction.
    let max = app
        .db
        .writer
        .get_postgres_connection_pool()
        .options()
        .get_max_connections();
    let mut held = Vec::new();
    for _ in 0..max {
        held.push(app.db.writer.begin().await.expect("a pool connection"));
    }

    let sender = app.clone_handle();
    let delivery =
        tokio::spawn(async move { sender.send("shop", &event("e1", "o1", 1, "{}")).await });
    // Its wait, seen in the gauge (not assumed after a sleep).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        if metrics_text(&app)
            .await
            .contains("hookbox_db_pool_waiting 1")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the waiting delivery never showed in hookbox_db_pool_waiting"
        );
        tokio::task::yield_now().await;
    }

    drop(held);
    let answer = delivery.await.expect("the delivery task");
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.body["status"], "applied");
    assert!(
        metrics_text(&app)
            .await
            .contains("hookbox_db_pool_waiting 0")
    );
}

#[tokio::test]
async fn health_and_readiness_answer_and_every_response_has_a_request_id() {
    let app = spawn_app(Backend::Sqlite).await;

    let health = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("answer");
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("answer");
    let delivery = app.send("shop", &event("e1", "o1", 1, "{}")).await;

    assert_eq!(
        (health.status().as_u16(), ready.status().as_u16()),
        (200, 200)
    );
    assert!(
        health
            .headers()
            .get("x-request-id")
            .is_some_and(|v| v.len() == 16)
    );
    assert!(delivery.headers.get("x-request-id").is_some());
}

#[tokio::test]
async fn a_source_over_its_rate_limit_gets_429_with_retry_after() {
    let app = spawn_app(Backend::Sqlite).await;

    let mut answers = Vec::new();
    for i in 0..3 {
        answers.push(
            app.send("limited", &event(&format!("e{i}"), "o1", i + 1, "{}"))
                .await,
        );
    }

    assert_eq!(
        answers.iter().map(|a| a.status).collect::<Vec<_>>(),
        vec![200, 200, 429]
    );
    assert_eq!(answers[2].body["status"], "rate_limited");
    assert_eq!(
        answers[2]
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE source = 'limited'"
        )
        .await,
        2,
        "nothing stored for the refused one"
    );
    let other = app.send("shop", &event("e9", "o9", 1, "{}")).await;
    assert_eq!(other.status, 200, "other sources are not limited");
    assert!(
        metrics_text(&app).await.contains(
            r#"hookbox_refused_requests_total{source="limited",reason="rate_limited"} 1"#
        )
    );
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_disconnected() {
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let mut config = test_config();
    config.server.header_read_timeout_secs = 1;
    let app = spawn_app_with(Backend::Sqlite, config).await;

    // A slowloris: half a request head, then silence.
    let mut slow = tokio::net::TcpStream::connect(app.addr)
        .await
        .expect("connect");
    slow.write_all(b"POST /hooks/shop HTTP/1.1\r\nHost: hookbox\r\nContent-Type: appl")
        .await
        .expect("send half a head");
    let started = Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), slow.read_to_end(&mut answer))
        .await
        .expect("the server closes the connection instead of waiting forever");
    let waited = started.elapsed();
    // Closed (EOF, or a reset), with at most a 408 written: never a request handled.
    if let Err(error) = read {
        assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset, "{error}");
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "unexpected answer {answer:?}"
    );
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(10),
        "closed after {waited:?}, configured 1 s"
    );

    // A client that sends its request promptly is served as usual.
    let prompt = app.send("shop", &event("e1", "o1", 1, "{}")).await;
    assert_eq!(prompt.status, 200);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        1,
        "only the complete request was archived"
    );
}
