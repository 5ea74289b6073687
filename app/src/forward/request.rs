//! The request a claimed forward delivery is: its body (the event as received), its message id
//! and its Standard Webhooks signature. The HTTP call itself is the server's
//! (`server::forwarder`).

use crate::config::Destination;
use crate::schemes::Scheme;
use chrono::Utc;

use super::Claimed;

/// The request body: the event with its snapshot (or a dedup source's payload) embedded as
/// received, so no number changes on the way.
pub fn request_body(claimed: &Claimed) -> String {
    let text = |v: &str| serde_json::Value::String(v.to_string()).to_string();
    let optional = |v: &Option<String>| v.as_deref().map_or("null".to_string(), text);
    let received_at = claimed
        .received_at
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // A snapshot source's revision and snapshot, or a dedup source's payload.
    let (kind, content) = match claimed.revision {
        Some(revision) => (
            "object.updated",
            format!(r#""revision":{revision},"snapshot":{}"#, claimed.payload),
        ),
        None => (
            "event.accepted",
            format!(r#""payload":{}"#, claimed.payload),
        ),
    };
    format!(
        r#"{{"type":"{kind}","source":{},"event_id":{},"object_id":{},{content},"event_type":{},"received_at":{}}}"#,
        text(&claimed.source),
        text(&claimed.event_id),
        optional(&claimed.object_id),
        optional(&claimed.event_type),
        text(&received_at),
    )
}

/// The `webhook-id` of a forward delivery: the same on every attempt, another for every row.
pub fn message_id(claimed: &Claimed) -> String {
    format!("fwd_{}", claimed.id)
}

/// The Standard Webhooks headers signing `body` for `destination` now.
pub fn signed_headers(
    destination: &Destination,
    claimed: &Claimed,
    body: &str,
) -> Vec<(http::HeaderName, String)> {
    Scheme::StandardWebhooks.sign(
        &destination.key,
        &message_id(claimed),
        body.as_bytes(),
        Utc::now().timestamp(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;

    fn claimed(revision: Option<i64>, payload: &str) -> Claimed {
        Claimed {
            id: 7,
            destination: "orders-app".into(),
            source: "shop".into(),
            event_id: "event-\"3\"".into(),
            object_id: revision.map(|_| "order-1".into()),
            revision,
            event_type: Some("order.paid".into()),
            received_at: DateTime::parse_from_rfc3339("2026-12-01T10:00:00.123Z")
                .expect("time")
                .with_timezone(&Utc),
            payload: payload.into(),
            attempts: 0,
            schedule_base: 0,
        }
    }

    #[test]
    fn a_snapshot_sources_request_carries_the_revision_and_the_snapshot_as_received() {
        assert_eq!(
            request_body(&claimed(
                Some(3),
                r#"{"total": 12345678901234567890, "rate": 0.1}"#
            )),
            r#"{"type":"object.updated","source":"shop","event_id":"event-\"3\"","object_id":"order-1","revision":3,"snapshot":{"total": 12345678901234567890, "rate": 0.1},"event_type":"order.paid","received_at":"2026-12-01T10:00:00.123Z"}"#
        );
    }

    #[test]
    fn a_dedup_sources_request_carries_the_payload_as_received_and_no_revision() {
        let body = request_body(&claimed(None, r#"{"id": "evt_1", "n": 1.50}"#));
        assert_eq!(
            body,
            r#"{"type":"event.accepted","source":"shop","event_id":"event-\"3\"","object_id":null,"payload":{"id": "evt_1", "n": 1.50},"event_type":"order.paid","received_at":"2026-12-01T10:00:00.123Z"}"#
        );
        let parsed: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert!(parsed.get("revision").is_none() && parsed.get("snapshot").is_none());
    }
}
