//! Bad bodies: answered 4xx with a reason and archived as invalid, over the limit 413 and not
//! stored, unknown sources 404; data the database refuses is 422, a retryable error is not.

use super::*;

both_backends!(bad_bodies_are_answered_with_a_reason_and_archived_as_invalid);
async fn bad_bodies_are_answered_with_a_reason_and_archived_as_invalid(backend: Backend) {
    let long = "x".repeat(256);
    // (body, expected HTTP status, a word the reason must contain)
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (b"this is not json".to_vec(), 400, "JSON"),
        (b"\xff\xfe{}".to_vec(), 400, "UTF-8"),
        (
            event("b1", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":\"1\"")
                .into_bytes(),
            422,
            "revision",
        ),
        (event("b2", "o", 0, "{}").into_bytes(), 422, "revision"),
        (event("b3", "o", -4, "{}").into_bytes(), 422, "revision"),
        (
            event("b4", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":1.5")
                .into_bytes(),
            422,
            "revision",
        ),
        (
            event("b5", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":3.0")
                .into_bytes(),
            422,
            "revision",
        ),
        (
            event("b6", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":9223372036854775808")
                .into_bytes(),
            422,
            "revision",
        ),
        (
            br#"{"event_id":"b7","object_id":"o","revision":1}"#.to_vec(),
            422,
            "snapshot",
        ),
        (event("b8", "o", 1, "[1,2]").into_bytes(), 422, "snapshot"),
        (
            event("b9", "o", 1, "\"text\"").into_bytes(),
            422,
            "snapshot",
        ),
        (event("", "o", 1, "{}").into_bytes(), 422, "event_id"),
        (event("b10", "", 1, "{}").into_bytes(), 422, "object_id"),
        (event(&long, "o", 1, "{}").into_bytes(), 422, "event_id"),
        (event("b11", &long, 1, "{}").into_bytes(), 422, "object_id"),
        (
            event("b12", "o", 1, r#"{"note":"nul \u0000 here"}"#).into_bytes(),
            422,
            "\\u0000",
        ),
        (
            br#"{"object_id":"o","revision":1,"snapshot":{}}"#.to_vec(),
            422,
            "event_id",
        ),
    ];
    let app = spawn_app(backend).await;
    for (i, (body, status, word)) in cases.iter().enumerate() {
        let answer = app.send_bytes("shop", body, &[]).await;

        assert_eq!(
            answer.status, *status,
            "{backend:?} case {i}: {:?}",
            answer.body
        );
        assert_eq!(answer.body["status"], "invalid", "{backend:?} case {i}");
        let reason = answer.body["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains(word),
            "{backend:?} case {i}: reason {reason:?} should name {word:?}"
        );
    }
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE status = 'failed' AND outcome = 'invalid'"
        )
        .await,
        cases.len() as i64,
        "{backend:?}: every bad delivery is archived"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        cases.len() as i64
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        0,
        "{backend:?}: nothing claimed"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM object_state").await,
        0,
        "{backend:?}: nothing applied"
    );
    let readable = texts(
        &app.db,
        "SELECT error_message FROM webhook_events WHERE event_id = 'b2'",
        vec![],
    )
    .await;
    assert!(
        readable[0][0]
            .as_deref()
            .is_some_and(|m| m.contains("revision")),
        "the error is archived"
    );
}

#[tokio::test]
async fn bodies_over_the_limit_are_413_and_not_stored() {
    let app = spawn_app(Backend::Postgres).await;
    let big = event(
        "big",
        "o",
        1,
        &format!(r#"{{"pad":"{}"}}"#, "x".repeat(70_000)),
    );

    let answer = app.send("shop", &big).await;

    assert_eq!(answer.status, 413);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0
    );
}

#[tokio::test]
async fn unknown_sources_are_404() {
    let app = spawn_app(Backend::Sqlite).await;
    let answer = app.send("nobody", &event("e", "o", 1, "{}")).await;
    assert_eq!(answer.status, 404);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0
    );
}

both_backends!(numbers_postgresql_cannot_store_are_422_and_archived_on_both_backends);
async fn numbers_postgresql_cannot_store_are_422_and_archived_on_both_backends(backend: Backend) {
    let app = spawn_app(backend).await;
    for (i, number) in ["10e-16384", "0e-20000", "1.0e-16383"].iter().enumerate() {
        let id = format!("n{i}");
        let answer = app
            .send(
                "shop",
                &event(&id, "o", 1, &format!(r#"{{"amount":{number}}}"#)),
            )
            .await;
        assert_eq!(
            answer.status, 422,
            "{backend:?} {number}: {:?}",
            answer.body
        );
        assert_eq!(answer.body["status"], "invalid");
        assert!(
            answer.body["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("number"),
            "{:?}",
            answer.body
        );
    }
    // Refused, yet archived under the identity the body carries before the number.
    assert_eq!(
        texts(
            &app.db,
            "SELECT event_id, object_id FROM webhook_events WHERE status = 'failed' AND outcome = 'invalid' AND error_message LIKE '%number%' ORDER BY event_id",
            vec![],
        )
        .await,
        (0..3)
            .map(|i| vec![Some(format!("n{i}")), Some("o".to_string())])
            .collect::<Vec<_>>(),
        "{backend:?}: archived with their event and object ids, nothing lost"
    );
    // The largest scale PostgreSQL stores is applied on both.
    let fine = app
        .send("shop", &event("fine", "o", 1, r#"{"amount":1e-16383}"#))
        .await;
    assert_eq!(fine.outcome(), "applied", "{backend:?}: {:?}", fine.body);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        1
    );
}

both_backends!(a_delivery_the_database_refuses_is_422_and_archived_not_503);
/// Any refusal the database makes of a delivery's data is deterministic: a retry meets it again.
/// It is archived as invalid and answered 422, never an endless 503. Here a constraint the test
/// adds stands for refusals the parser cannot foresee.
async fn a_delivery_the_database_refuses_is_422_and_archived_not_503(backend: Backend) {
    use sea_orm::ConnectionTrait;
    let app = spawn_app(backend).await;
    let refuse = match backend {
            Backend::Postgres => "ALTER TABLE webhook_inbox ADD CONSTRAINT test_refuses CHECK (event_id <> 'refused')",
            Backend::Sqlite => "CREATE TRIGGER test_refuses BEFORE INSERT ON webhook_inbox
                                WHEN NEW.event_id = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
        };
    app.db
        .dashboard
        .execute_unprepared(refuse)
        .await
        .expect("add the refusal");

    let refused = app.send("shop", &event("refused", "o1", 1, "{}")).await;
    let again = app.send("shop", &event("refused", "o1", 1, "{}")).await;
    let fine = app.send("shop", &event("fine", "o1", 1, "{}")).await;

    for answer in [&refused, &again] {
        assert_eq!(answer.status, 422, "{backend:?}: {:?}", answer.body);
        assert!(
            answer.body["reason"]
                .as_str()
                .unwrap_or_default()
                .starts_with("the database refused this delivery"),
            "{backend:?}: {:?}",
            answer.body
        );
    }
    assert_eq!(fine.outcome(), "applied", "{backend:?}");
    assert_eq!(
        archived(&app.db, "shop", "refused").await,
        [
            ("failed".to_string(), "invalid".to_string()),
            ("failed".to_string(), "invalid".to_string())
        ],
        "{backend:?}: archived, nothing lost"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_inbox WHERE event_id = 'refused'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn retryable_database_errors_are_not_mistaken_for_refusals() {
    use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
    let test_db = test_db(Backend::Postgres).await;
    let db = test_db.db.clone();
    let err = |sql: &'static str| {
        let db = db.clone();
        async move {
            db.writer
                .execute_raw(Statement::from_string(db.backend(), sql))
                .await
                .expect_err("fails")
        }
    };
    assert!(
        app::ingest::refusal(&err("SELECT 1/0").await).is_some(),
        "22012 is deterministic"
    );
    let txn = db.writer.begin().await.expect("begin");
    txn.execute_unprepared("SET LOCAL statement_timeout = 1")
        .await
        .expect("set");
    let timed_out = txn
        .execute_raw(Statement::from_string(db.backend(), "SELECT pg_sleep(1)"))
        .await
        .expect_err("times out");
    assert!(
        app::ingest::refusal(&timed_out).is_none(),
        "a statement timeout may pass on retry: {timed_out}"
    );
    drop(txn);
    assert!(
        app::ingest::refusal(&err("SELECT pg_terminate_backend(pg_backend_pid())").await).is_none(),
        "a lost connection is retryable"
    );
}
