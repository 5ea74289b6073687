//! What monitoring and protection see: health, metrics, request ids, rate limits.

use crate::support::*;

#[tokio::test]
async fn metrics_count_deliveries_authentication_failures_and_the_pool() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("e1", "o1", 1, "{}")).await;
    app.send("shop", &event("e1", "o1", 1, "{}")).await;
    app.post("shop", &[], event("e2", "o1", 2, "{}").into_bytes())
        .await;

    let metrics = metrics_text(&app).await;

    for expected in [
        r#"hookbox_deliveries_total{source="shop",outcome="applied"} 1"#,
        r#"hookbox_deliveries_total{source="shop",outcome="duplicate"} 1"#,
        r#"hookbox_auth_failures_total{source="shop"} 1"#,
        r#"hookbox_db_pool_connections{state="max"} 16"#,
        "hookbox_db_pool_waiting 0",
        r#"hookbox_ingest_transaction_duration_seconds_bucket{source="shop",le="+Inf"} 2"#,
        r#"hookbox_http_request_duration_seconds_count{method="POST",route="/hooks/{source}",status="200"} 2"#,
    ] {
        assert!(
            metrics.contains(expected),
            "missing {expected} in:\n{metrics}"
        );
    }
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
