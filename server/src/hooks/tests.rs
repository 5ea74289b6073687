//! Unit tests of the endpoint's answers and of the archived headers.

#![allow(clippy::unwrap_used)]
use super::answer::outcome_answer;
use super::archived::{archived_entries, archived_headers};
use super::*;
use app::ingest::Outcome;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// The archive's entries as a JSON object of them: what the archive kept before the
/// headers were written straight into text.
fn as_json_value(headers: &HeaderMap, source: &app::config::Source) -> String {
    let map: serde_json::Map<String, Value> = archived_entries(headers, source)
        .into_iter()
        .map(|(name, value)| (name, Value::String(value)))
        .collect();
    Value::Object(map).to_string()
}

fn shop() -> app::config::Source {
    let config = app::config::Config::parse(
        "[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\n",
        std::path::Path::new("t.toml"),
        &|_| Some("s3cret".into()),
    )
    .unwrap();
    config.source("shop").unwrap().clone()
}

/// What the answers were before they were serialised from a struct: JSON objects.
fn as_json_object(outcome: &Outcome, event_id: Option<&str>) -> Value {
    match outcome {
        Outcome::Applied { revision } => {
            json!({"status": "applied", "event_id": event_id, "revision": revision})
        }
        Outcome::Stale {
            revision,
            current_revision,
        } => {
            json!({"status": "stale", "event_id": event_id, "revision": revision, "current_revision": current_revision})
        }
        Outcome::Accepted => json!({"status": "accepted", "event_id": event_id}),
        Outcome::Duplicate => {
            json!({"status": "duplicate", "event_id": event_id, "idempotent": true})
        }
        Outcome::ReplayedBody { original_event_id } => {
            json!({"status": "duplicate", "event_id": original_event_id, "idempotent": true, "delivered_as": event_id})
        }
        Outcome::ReusedEventId | Outcome::ReusedRevision { .. } => {
            let mut body = json!({
                "status": "conflict",
                "reason": outcome.name(),
                "event_id": event_id,
                "message": outcome.error_message(),
            });
            if let (
                Outcome::ReusedRevision {
                    existing_event_id: Some(holder),
                },
                Value::Object(map),
            ) = (outcome, &mut body)
            {
                map.insert("existing_event_id".into(), Value::String(holder.clone()));
            }
            body
        }
        Outcome::Invalid { reason } => json!({"status": "invalid", "reason": reason}),
    }
}

#[tokio::test]
async fn every_answer_is_the_json_object_it_was_byte_for_byte() {
    let outcomes = [
        Outcome::Applied { revision: 7 },
        Outcome::Stale {
            revision: 3,
            current_revision: 7,
        },
        Outcome::Accepted,
        Outcome::Duplicate,
        Outcome::ReplayedBody {
            original_event_id: "evt \"1\"".into(),
        },
        Outcome::ReusedEventId,
        Outcome::ReusedRevision {
            existing_event_id: Some("evt-9".into()),
        },
        Outcome::ReusedRevision {
            existing_event_id: None,
        },
        Outcome::Invalid {
            reason: "snapshot is missing".into(),
        },
    ];
    for outcome in &outcomes {
        for event_id in [Some("evt-2"), None] {
            let response = outcome_answer(outcome, event_id, None);
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
                .await
                .unwrap();
            assert_eq!(
                String::from_utf8(bytes.to_vec()).unwrap(),
                as_json_object(outcome, event_id).to_string(),
                "{outcome:?} {event_id:?}"
            );
        }
    }
    assert_eq!(
        outcome_answer(&Outcome::ReusedEventId, None, None).status(),
        StatusCode::CONFLICT
    );
    assert_eq!(
        outcome_answer(
            &Outcome::Invalid { reason: "x".into() },
            None,
            Some(StatusCode::BAD_REQUEST)
        )
        .status(),
        StatusCode::BAD_REQUEST
    );
}

#[test]
fn archived_headers_are_the_json_object_of_the_headers_byte_for_byte() {
    let source = shop();
    let mut headers = HeaderMap::new();
    headers.insert("x-z-last", HeaderValue::from_static("z"));
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_static("Bearer s3cret"),
    );
    headers.append("x-forwarded-for", HeaderValue::from_static("192.0.2.1"));
    headers.append("x-forwarded-for", HeaderValue::from_static("198.51.100.2"));
    headers.insert(
        header::USER_AGENT,
        HeaderValue::from_static(r#"say "hi" \ back"#),
    );
    headers.insert("accept", HeaderValue::from_bytes(b"caf\xe9\tx").unwrap());
    headers.insert(header::COOKIE, HeaderValue::from_static("a=b"));
    headers.insert("x-hookbox-signature", HeaderValue::from_static("t=1,v1=ab"));
    headers.insert("content-type", HeaderValue::from_static(""));
    let written = archived_headers(&headers, &source);
    assert_eq!(written, as_json_value(&headers, &source));
    let parsed: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(parsed["authorization"], "[redacted, 13 bytes]");
    assert_eq!(parsed["cookie"], "[redacted, 3 bytes]");
    assert_eq!(parsed["x-z-last"], "[redacted, 1 bytes]");
    assert_eq!(parsed["x-forwarded-for"], "192.0.2.1, 198.51.100.2");
    assert_eq!(parsed["user-agent"], r#"say "hi" \ back"#);
    assert_eq!(parsed["accept"], "caf\u{fffd}\tx");
    assert_eq!(parsed["x-hookbox-signature"], "t=1,v1=ab");
    assert!(written.starts_with(r#"{"accept":"caf"#), "{written}");
    assert!(!written.contains("s3cret"));
    assert_eq!(archived_headers(&HeaderMap::new(), &source), "{}");
}

#[test]
fn archived_headers_are_bounded_whatever_arrives() {
    let source = shop();
    let mut headers = HeaderMap::new();
    for i in 0..100 {
        // Names of 2 kB sharing their first 64 bytes, then short distinct ones.
        let name = if i < 10 {
            format!("{}{i}", "n".repeat(2000))
        } else {
            format!("x-h{i}")
        };
        headers.insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(&"v".repeat(5000)).unwrap(),
        );
    }
    headers.insert(
        header::USER_AGENT,
        HeaderValue::from_str(&"u".repeat(100_000)).unwrap(),
    );
    let written = archived_headers(&headers, &source);
    assert_eq!(written, as_json_value(&headers, &source));
    let parsed: serde_json::Map<String, Value> = serde_json::from_str(&written).unwrap();
    // 10 long names as one, 53 short ones, the user agent and the rest counted.
    assert_eq!(parsed.len(), ARCHIVED_REDACTED_KEPT + 2, "{parsed:?}");
    let long = format!("{}…", "n".repeat(ARCHIVED_NAME_BYTES - 3));
    assert_eq!(parsed[&long], "[redacted, 50000 bytes]");
    assert_eq!(parsed["…"], "27 more headers (135135 bytes) not kept");
    assert_eq!(
        parsed["user-agent"].as_str().unwrap().len(),
        ARCHIVED_VALUE_BYTES
    );
    assert!(parsed.keys().all(|k| k.len() <= ARCHIVED_NAME_BYTES));
    assert!(
        written.len() < ARCHIVED_VALUE_BYTES + 64 * 100,
        "{}",
        written.len()
    );
}
