//! What each delivery becomes, on PostgreSQL and on SQLite, through the real endpoint.

use crate::support::*;
use sea_orm::ConnectionTrait;

both_backends!(a_new_event_is_applied_and_its_retry_is_a_recorded_duplicate);
async fn a_new_event_is_applied_and_its_retry_is_a_recorded_duplicate(backend: Backend) {
    let app = spawn_app(backend).await;
    let body = event("event-1", "order-1", 1, r#"{"status":"new"}"#);

    let first = app.send("shop", &body).await;
    let retry = app.send("shop", &body).await;

    assert_eq!(
        (first.status, &first.body),
        (
            200,
            &serde_json::json!({"status":"applied","event_id":"event-1","revision":1})
        ),
        "{backend:?}"
    );
    assert_eq!(
        (retry.status, &retry.body),
        (
            200,
            &serde_json::json!({"status":"duplicate","event_id":"event-1","idempotent":true})
        ),
        "{backend:?}"
    );
    assert_eq!(
        archived(&app.db, "shop", "event-1").await,
        vec![
            ("processed".into(), "applied".into()),
            ("skipped".into(), "duplicate".into())
        ],
        "{backend:?}"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        1,
        "{backend:?}"
    );
    assert_eq!(
        current_revision(&app.db, "shop", "order-1").await,
        Some(1),
        "{backend:?}"
    );
}

both_backends!(an_older_revision_is_stale_kept_in_the_inbox_and_never_current);
async fn an_older_revision_is_stale_kept_in_the_inbox_and_never_current(backend: Backend) {
    let app = spawn_app(backend).await;

    let third = app
        .send(
            "shop",
            &event("e3", "order-1", 3, r#"{"status":"shipped"}"#),
        )
        .await;
    let second = app
        .send("shop", &event("e2", "order-1", 2, r#"{"status":"paid"}"#))
        .await;

    assert_eq!(third.outcome(), "applied", "{backend:?}");
    assert_eq!(
        second.body,
        serde_json::json!({"status":"stale","event_id":"e2","revision":2,"current_revision":3}),
        "{backend:?}"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_inbox WHERE object_id = 'order-1'"
        )
        .await,
        2
    );
    assert_eq!(
        current_revision(&app.db, "shop", "order-1").await,
        Some(3),
        "{backend:?}"
    );
    assert_eq!(
        archived(&app.db, "shop", "e2").await,
        vec![("processed".into(), "stale".into())]
    );
}

both_backends!(a_revision_may_skip_ahead);
async fn a_revision_may_skip_ahead(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;

    let third = app
        .send("shop", &event("e3", "order-1", 3, r#"{"v":3}"#))
        .await;

    assert_eq!(third.outcome(), "applied", "{backend:?}");
    assert_eq!(
        current_revision(&app.db, "shop", "order-1").await,
        Some(3),
        "{backend:?}"
    );
}

both_backends!(a_reused_event_id_with_other_content_is_a_conflict);
async fn a_reused_event_id_with_other_content_is_a_conflict(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "order-1", 1, r#"{"value": true}"#))
        .await;

    let other_value = app
        .send("shop", &event("e1", "order-1", 1, r#"{"value": 1}"#))
        .await;
    let other_revision = app
        .send("shop", &event("e1", "order-1", 2, r#"{"value": true}"#))
        .await;

    for answer in [&other_value, &other_revision] {
        assert_eq!(answer.status, 409, "{backend:?}");
        assert_eq!(answer.body["status"], "conflict");
        assert_eq!(
            answer.body["reason"], "reused_event_id",
            "{backend:?}: {:?}",
            answer.body
        );
    }
    assert_eq!(
        archived(&app.db, "shop", "e1").await,
        vec![
            ("processed".into(), "applied".into()),
            ("failed".into(), "reused_event_id".into()),
            ("failed".into(), "reused_event_id".into())
        ]
    );
    assert_eq!(
        current_revision(&app.db, "shop", "order-1").await,
        Some(1),
        "nothing applied"
    );
    assert_eq!(
        inbox_snapshot(&app.db, "shop", "e1")
            .await
            .as_deref()
            .map(|s| s.replace(' ', "")),
        Some(r#"{"value":true}"#.into())
    );
}

both_backends!(another_event_id_for_a_held_revision_is_a_conflict);
async fn another_event_id_for_a_held_revision_is_a_conflict(backend: Backend) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "order-1", 1, r#"{"a":1}"#))
        .await;

    let answer = app
        .send("shop", &event("e1-again", "order-1", 1, r#"{"a":1}"#))
        .await;

    assert_eq!(answer.status, 409, "{backend:?}");
    assert_eq!(answer.body["reason"], "reused_revision");
    assert_eq!(answer.body["existing_event_id"], "e1");
    assert_eq!(
        archived(&app.db, "shop", "e1-again").await,
        vec![("failed".into(), "reused_revision".into())]
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        1
    );
}

both_backends!(content_identity_is_json_value_equality_on_both_backends);
/// Content identity is `jsonb` equality on both backends.
async fn content_identity_is_json_value_equality_on_both_backends(backend: Backend) {
    // (stored snapshot, repeated snapshot, same content?)
    let cases: &[(&str, &str, bool)] = &[
        (r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#, true),
        (r#"{"a":1}"#, "{\n  \"a\" : 1\n}", true),
        (r#"{"n":1.0}"#, r#"{"n":1}"#, true),
        (r#"{"n":1e2}"#, r#"{"n":100}"#, true),
        (r#"{"n":-0}"#, r#"{"n":0}"#, true),
        (r#"{"n":0.10}"#, r#"{"n":0.1}"#, true),
        (r#"{"s":"\u00e9"}"#, "{\"s\":\"é\"}", true),
        (r#"{"a":1,"a":2}"#, r#"{"a":2}"#, true),
        (r#"{"value":true}"#, r#"{"value":1}"#, false),
        (r#"{"value":"1"}"#, r#"{"value":1}"#, false),
        (r#"{"value":null}"#, r#"{}"#, false),
        (r#"{"l":[1,2]}"#, r#"{"l":[2,1]}"#, false),
        (
            r#"{"n":12345678901234567890123}"#,
            r#"{"n":12345678901234567890124}"#,
            false,
        ),
        (r#"{"n":0.1000000000000000000001}"#, r#"{"n":0.1}"#, false),
        (r#"{"s":"a"}"#, r#"{"s":"A"}"#, false),
    ];
    let app = spawn_app(backend).await;
    for (i, (stored, repeated, same)) in cases.iter().enumerate() {
        let event_id = format!("identity-{i}");
        let object_id = format!("object-{i}");
        let first = app
            .send("shop", &event(&event_id, &object_id, 1, stored))
            .await;
        assert_eq!(
            first.outcome(),
            "applied",
            "{backend:?} case {i}: {:?}",
            first.body
        );

        let again = app
            .send("shop", &event(&event_id, &object_id, 1, repeated))
            .await;

        let expected = if *same {
            "duplicate"
        } else {
            "reused_event_id"
        };
        assert_eq!(
            again.outcome(),
            expected,
            "{backend:?} case {i}: {stored} vs {repeated}"
        );
    }
}

both_backends!(numbers_are_stored_exactly);
async fn numbers_are_stored_exactly(backend: Backend) {
    let snapshot = r#"{"big":123456789012345678901234567890,"neg":-98765432109876543210987654321,"dec":3.14159265358979323846264338327950288419716939937510,"tiny":1e-30}"#;
    let app = spawn_app(backend).await;
    assert_eq!(
        app.send(
            "shop",
            &event("n1", "o1", 9_223_372_036_854_775_807, snapshot)
        )
        .await
        .outcome(),
        "applied"
    );

    let stored = inbox_snapshot(&app.db, "shop", "n1").await.expect("stored");
    let projected = texts(
        &app.db,
        if backend == Backend::Postgres {
            "SELECT snapshot::text FROM object_state WHERE object_id = 'o1'"
        } else {
            "SELECT snapshot FROM object_state WHERE object_id = 'o1'"
        },
        vec![],
    )
    .await;

    for text in [
        stored.as_str(),
        projected[0][0].as_deref().unwrap_or_default(),
    ] {
        assert!(
            text.contains("123456789012345678901234567890"),
            "{backend:?}: {text}"
        );
        assert!(
            text.contains("-98765432109876543210987654321"),
            "{backend:?}: {text}"
        );
        assert!(
            text.contains("3.14159265358979323846264338327950288419716939937510"),
            "{backend:?}: {text}"
        );
    }
    assert_eq!(
        current_revision(&app.db, "shop", "o1").await,
        Some(i64::MAX)
    );
}

both_backends!(dedup_sources_accept_each_event_id_once);
async fn dedup_sources_accept_each_event_id_once(backend: Backend) {
    let app = spawn_app(backend).await;
    let body = r#"{"repository":{"id":"repo-7"},"action":"opened"}"#;
    let headers = [("X-Delivery-Id", "d-1"), ("X-Event", "pull_request")];

    let first = app.send_bytes("gh", body.as_bytes(), &headers).await;
    let retry = app.send_bytes("gh", body.as_bytes(), &headers).await;

    assert_eq!(
        first.body,
        serde_json::json!({"status":"accepted","event_id":"d-1"}),
        "{backend:?}"
    );
    assert_eq!(retry.outcome(), "duplicate");
    let rows = texts(
        &app.db,
        "SELECT object_id, event_type FROM webhook_events WHERE event_id = 'd-1'",
        vec![],
    )
    .await;
    assert_eq!(
        rows[0],
        vec![Some("repo-7".into()), Some("pull_request".into())]
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM object_state").await,
        0,
        "dedup keeps no projection"
    );
}

both_backends!(every_delivery_is_archived_with_headers_and_raw_body_and_credentials_redacted);
async fn every_delivery_is_archived_with_headers_and_raw_body_and_credentials_redacted(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    let body = event("e1", "o1", 1, r#"{"x": 1}"#);

    app.send_bytes(
        "shop",
        body.as_bytes(),
        &[("Authorization", "Bearer hunter2"), ("X-Trace", "abc")],
    )
    .await;

    let headers_sql = if backend == Backend::Postgres {
        "SELECT headers::text FROM webhook_events"
    } else {
        "SELECT headers FROM webhook_events"
    };
    let headers = texts(&app.db, headers_sql, vec![])
        .await
        .remove(0)
        .remove(0)
        .expect("headers");
    let headers: serde_json::Value = serde_json::from_str(&headers).expect("JSON");
    // Headers outside app::headers' allowlist keep their size only.
    assert_eq!(headers["x-trace"], "[redacted, 3 bytes]");
    assert_eq!(headers["authorization"], "[redacted, 14 bytes]");
    assert!(
        headers["x-hookbox-signature"]
            .as_str()
            .is_some_and(|s| s.starts_with("t="))
    );
    let stored_body = app
        .db
        .dashboard
        .query_one_raw(sea_orm::Statement::from_string(
            app.db.backend(),
            "SELECT body FROM webhook_events",
        ))
        .await
        .expect("query")
        .expect("row")
        .try_get_by_index::<Vec<u8>>(0)
        .expect("bytes");
    assert_eq!(stored_body, body.as_bytes(), "{backend:?}");
}

// The vocabulary the code shares (`model::Status`, `model::OutcomeKind` and its one mapping)
// is the one the schema's CHECK accepts: every outcome with its status is stored, every other
// pair is refused.
both_backends!(the_schema_accepts_every_outcome_with_its_status_and_no_other_pair);
async fn the_schema_accepts_every_outcome_with_its_status_and_no_other_pair(backend: Backend) {
    use app::model::{OutcomeKind, Status};
    use sea_orm::Statement;
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let insert = |status: Status, outcome: OutcomeKind| {
        let headers = match db.backend() {
            sea_orm::DatabaseBackend::Postgres => "'{}'::jsonb",
            _ => "'{}'",
        };
        Statement::from_sql_and_values(
            db.backend(),
            format!(
                "INSERT INTO webhook_events (source, status, outcome, headers, body, received_at)
                 VALUES ('vocabulary', $1, $2, {headers}, $3, $4)"
            ),
            vec![
                status.as_str().into(),
                outcome.as_str().into(),
                sea_orm::Value::Bytes(Some(b"{}".to_vec())),
                chrono::Utc::now().into(),
            ],
        )
    };
    for &outcome in OutcomeKind::ALL {
        for &status in Status::ALL {
            let stored = db.writer.execute_raw(insert(status, outcome)).await;
            assert_eq!(
                stored.is_ok(),
                status == outcome.status(),
                "{backend:?}: {status} / {outcome}: {stored:?}"
            );
        }
    }
    assert_eq!(
        count(db, "SELECT count(*) FROM webhook_events").await,
        OutcomeKind::ALL.len() as i64
    );
}
