//! What monitoring and protection see: health, metrics, request ids, rate limits.

mod support;

use support::*;

#[tokio::test]
async fn metrics_count_deliveries_authentication_failures_and_the_pool() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("e1", "o1", 1, "{}")).await;
    app.send("shop", &event("e1", "o1", 1, "{}")).await;
    app.post("shop", &[], event("e2", "o1", 2, "{}").into_bytes())
        .await;

    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("answer")
        .text()
        .await
        .expect("text");

    for expected in [
        r#"hookbox_deliveries_total{source="shop",outcome="applied"} 1"#,
        r#"hookbox_deliveries_total{source="shop",outcome="duplicate"} 1"#,
        r#"hookbox_auth_failures_total{source="shop"} 1"#,
        r#"hookbox_db_pool_connections{state="max"} 16"#,
        r#"hookbox_ingest_transaction_duration_seconds_bucket{source="shop",le="+Inf"} 2"#,
        r#"hookbox_http_request_duration_seconds_count{method="POST",route="/hooks/{source}",status="200"} 2"#,
    ] {
        assert!(
            metrics.contains(expected),
            "missing {expected} in:\n{metrics}"
        );
    }
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
