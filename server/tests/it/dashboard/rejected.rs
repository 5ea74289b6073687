//! `/rejected` and the overview's refusals: the refused-requests log as viewers read it, filtered
//! by source and reason, paged, a bad filter a 400 naming it, nothing for the signed-out.
#![allow(clippy::unwrap_used)]

use super::*;
use app::db::rejected::{self, NewRejected};
use serde_json::Value;

/// `n` refused rows of `bucket` for `reason`, received `minutes_ago`.
fn refused(bucket: &str, reason: &'static str, n: usize, minutes_ago: i64) -> Vec<NewRejected> {
    (0..n)
        .map(|i| NewRejected {
            received_at: chrono::Utc::now() - chrono::Duration::minutes(minutes_ago),
            bucket: bucket.into(),
            source: if bucket == "(unknown)" {
                format!("made-up-{i}")
            } else {
                bucket.into()
            },
            reason: app::model::RefusalReason::parse(reason).expect("a refusal reason"),
            cause: format!("{reason} number {i}"),
            client_address: "192.0.2.7".into(),
            request_id: Some(format!("req-{i}")),
            headers: r#"{"stripe-signature":"[redacted, 71 bytes]","user-agent":"Stripe/1.0"}"#
                .into(),
            body_bytes: Some(12),
            body_sha256: Some("ab".repeat(32)),
        })
        .collect()
}

async fn page(app: &TestApp, cookie: &str, args: &[(&str, &str)]) -> (StatusCode, Value) {
    let (status, body) = call(app, Some(cookie), "rejected", args).await;
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

both_backends!(viewers_read_the_refused_requests_by_source_and_reason_page_by_page);
async fn viewers_read_the_refused_requests_by_source_and_reason_page_by_page(backend: Backend) {
    let app = spawn_app(backend).await;
    let mut rows = refused("shop", "unauthorized", 130, 5);
    rows.extend(refused("shop", "rate_limited", 2, 5));
    rows.extend(refused("(unknown)", "unknown_source", 3, 5));
    // Two days old: on the page, not in the overview's 24 hours.
    rows.extend(refused("sw", "unauthorized", 4, 48 * 60));
    rejected::insert_batch(&app.db.writer, &rows[..100])
        .await
        .unwrap();
    rejected::insert_batch(&app.db.writer, &rows[100..])
        .await
        .unwrap();
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();

    let (status, body) = page(
        &app,
        &cookie,
        &[("source", "shop"), ("reason", "unauthorized")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let first = body[0]["rows"].as_array().unwrap();
    assert_eq!(first.len(), 100);
    assert_eq!(first[0]["cause"], "unauthorized number 129", "newest first");
    assert!(
        first
            .iter()
            .all(|r| r["bucket"] == "shop" && r["reason"] == "unauthorized")
    );
    assert_eq!(
        first[0]["headers"][0],
        serde_json::json!(["stripe-signature", "[redacted, 71 bytes]"])
    );
    assert_eq!(first[0]["client_address"], "192.0.2.7");
    // The configured sources, for the filter's choices.
    assert_eq!(body[1], serde_json::json!(["gh", "limited", "shop", "sw"]));
    let before = body[0]["next_before"].as_i64().unwrap().to_string();
    let (_, body) = page(
        &app,
        &cookie,
        &[
            ("source", "shop"),
            ("reason", "unauthorized"),
            ("before", &before),
        ],
    )
    .await;
    let second = body[0]["rows"].as_array().unwrap();
    assert_eq!(second.len(), 30);
    assert_eq!(second[0]["cause"], "unauthorized number 29");
    assert_eq!(second[29]["cause"], "unauthorized number 0");
    assert!(body[0]["next_before"].is_null());

    let (_, body) = page(&app, &cookie, &[("source", "(unknown)")]).await;
    let unknown = body[0]["rows"].as_array().unwrap();
    assert_eq!(unknown.len(), 3);
    assert_eq!(unknown[0]["source"], "made-up-2");

    // A bad filter is a 400 naming it.
    let (status, body) = page(&app, &cookie, &[("reason", "nonsense")]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body.to_string()
            .contains("reason: \\\"nonsense\\\" is not one of"),
        "{body}"
    );
    let (status, body) = page(&app, &cookie, &[("before", "x'; --")]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.to_string().contains("before"), "{body}");
    // Signed out: nothing.
    let (status, _) = call(&app, None, "rejected", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The overview: the last 24 hours by source and reason, the most first.
    let (status, body) = call(&app, Some(&cookie), "overview", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let overview: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        overview["refused_24h"],
        serde_json::json!([
            {"source": "shop", "reason": "unauthorized", "n": 130},
            {"source": "(unknown)", "reason": "unknown_source", "n": 3},
            {"source": "shop", "reason": "rate_limited", "n": 2},
        ])
    );
}
