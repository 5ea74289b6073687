//! The write path's statements: parameters, statuses, and what a delivery forwards.

use super::*;
use crate::envelope::{Envelope, Mode};
use crate::ingest::Received;
use crate::ingest::binds::Delivery;
use crate::ingest::outcome::Outcome;

#[test]
fn a_dedup_delivery_forwards_its_body_and_a_form_its_fields_as_json() {
    let envelope = Envelope {
        event_id: "e1".into(),
        object_id: None,
        revision: None,
        snapshot: None,
        event_type: None,
    };
    let destinations = ["app".to_string()];
    let received = |body: &'static [u8], body_fields: Option<String>| Received {
        source: "twilio",
        headers_json: "{}",
        body,
        body_fields,
        received_at: chrono::Utc::now(),
        replay_of: None,
        replayed_by: None,
        signed_body_digest: None,
        forward_to: &destinations,
    };
    let json = received(br#"{"id":"e1"}"#, None);
    let delivery = Delivery::new(Dialect::Postgres, Mode::Dedup, &json, &envelope);
    assert_eq!(delivery.body_payload.as_deref(), Some(r#"{"id":"e1"}"#));
    let form = received(
        b"MessageSid=SM1&To=%2B1",
        Some(r#"{"MessageSid":"SM1","To":"+1"}"#.into()),
    );
    let delivery = Delivery::new(Dialect::Postgres, Mode::Dedup, &form, &envelope);
    assert_eq!(
        delivery.body_payload.as_deref(),
        Some(r#"{"MessageSid":"SM1","To":"+1"}"#)
    );
}

#[test]
fn every_outcome_a_claim_decides_has_the_one_claimed_status() {
    for kind in [
        OutcomeKind::Applied,
        OutcomeKind::Stale,
        OutcomeKind::Accepted,
    ] {
        assert_eq!(kind.status(), OutcomeKind::Applied.status(), "{kind}");
    }
}

#[test]
fn a_duplicate_is_archived_with_no_error_as_the_classification_writes_it() {
    // `classify` writes a duplicate's archive row with no error message and no class.
    assert_eq!(Outcome::Duplicate.error_message(), None);
    assert_eq!(
        super::super::problem::error_class(OutcomeKind::Duplicate, None),
        None
    );
    let sql = Statements::of(Dialect::Postgres).classify.sql();
    assert!(sql.contains("INSERT INTO webhook_events"), "{sql}");
    assert!(
        sql.contains(&format!("'{}'", OutcomeKind::Duplicate.status().as_str())),
        "{sql}"
    );
    // SQLite's one writer has no round trip to save: it classifies alone.
    let sql = Statements::of(Dialect::Sqlite).classify.sql();
    assert!(!sql.contains("INSERT"), "{sql}");
}

#[test]
fn the_statements_name_only_parameters_the_delivery_or_the_archive_row_binds() {
    let delivery = [
        "source",
        "event_id",
        "object_id",
        "revision",
        "snapshot",
        "canonical",
        "content",
        "received_at",
        "digest",
        "event_type",
        "headers",
        "body",
        "body_fields",
        "replay_of",
        "replayed_by",
        "destinations",
        "body_payload",
        "now",
        "projected",
        "dedup",
        "event_day",
    ];
    let archive = [
        "source",
        "event_id",
        "object_id",
        "revision",
        "event_type",
        "status",
        "outcome",
        "error_message",
        "error_class",
        "headers",
        "body",
        "body_fields",
        "received_at",
        "replay_of",
        "replayed_by",
        "event_day",
    ];
    for dialect in [Dialect::Postgres, Dialect::Sqlite] {
        let s = Statements::of(dialect);
        for named in [
            &s.forwarding.own,
            &s.forwarding.in_transaction,
            &s.unforwarded.own,
            &s.unforwarded.in_transaction,
            &s.classify,
            &s.current_revision,
        ] {
            for name in named.names() {
                assert!(delivery.contains(&name.as_str()), "{dialect:?}: :{name}");
            }
        }
        for name in s.archive.names() {
            assert!(archive.contains(&name.as_str()), "{dialect:?}: :{name}");
        }
        for name in s.resolve.names() {
            assert!(["replayed", "replay"].contains(&name.as_str()), ":{name}");
        }
    }
}

#[test]
fn only_the_statements_of_a_delivery_with_somewhere_to_go_name_the_forward_rows() {
    for dialect in [Dialect::Postgres, Dialect::Sqlite] {
        let s = Statements::of(dialect);
        for named in [&s.forwarding.own, &s.forwarding.in_transaction] {
            assert!(named.sql().contains("forward_deliveries"), "{dialect:?}");
            assert!(
                named.names().iter().any(|n| n == "destinations"),
                "{dialect:?}"
            );
        }
        for named in [&s.unforwarded.own, &s.unforwarded.in_transaction] {
            assert!(!named.sql().contains("forward_deliveries"), "{dialect:?}");
            assert!(
                !named.names().iter().any(|n| n == "destinations"),
                "{dialect:?}"
            );
            assert!(
                named.sql().contains("INSERT INTO webhook_events"),
                "{dialect:?}"
            );
        }
    }
}
