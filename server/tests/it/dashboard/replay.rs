//! Replay from the dashboard: a dry run writes nothing, a confirmed replay writes one archive
//! row and one audit row, and a bulk replay takes its filter, needs the typed count and commits
//! its replays and audit entry together.

use super::*;

both_backends!(
    a_replay_dry_run_writes_nothing_and_a_confirmed_replay_writes_one_archive_and_one_audit_row
);
async fn a_replay_dry_run_writes_nothing_and_a_confirmed_replay_writes_one_archive_and_one_audit_row(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    app.send("shop", &event("e1", "order-1", 1, r#"{"a":1}"#))
        .await;
    let conflict = app
        .send("shop", &event("e1-other", "order-1", 1, r#"{"a":1}"#))
        .await;
    assert_eq!(conflict.outcome(), "reused_revision");
    let failed_id = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'e1-other'",
        vec![],
    )
    .await
    .expect("archived");
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");
    let id = failed_id.to_string();
    let archive_before = count(&app.db, "SELECT count(*) FROM webhook_events").await;
    let audit_before = count(
        &app.db,
        "SELECT count(*) FROM audit_log WHERE action = 'replay'",
    )
    .await;

    let (status, dry) = call(
        &app,
        Some(&cookie),
        "replay",
        &[("id", &id), ("confirm", "false")],
    )
    .await;

    assert_eq!(status, StatusCode::OK, "{dry}");
    assert!(dry.contains("\"outcome\":\"reused_revision\""), "{dry}");
    assert!(dry.contains("\"archive_id\":null"), "{dry}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        archive_before,
        "{backend:?}: dry run wrote nothing"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'replay'"
        )
        .await,
        audit_before
    );

    // The replay fails as the original did: it runs only with the typed override.
    let (status, done) = call(
        &app,
        Some(&cookie),
        "replay",
        &[
            ("id", &id),
            ("confirm", "true"),
            ("anyway", app::model::REPLAY_ANYWAY),
        ],
    )
    .await;

    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        archive_before + 1,
        "{backend:?}"
    );
    let replay_rows = texts(
        &app.db,
        "SELECT outcome, replayed_by FROM webhook_events WHERE replay_of = $1",
        vec![failed_id.into()],
    )
    .await;
    assert_eq!(
        replay_rows,
        vec![vec![Some("reused_revision".into()), Some("olga".into())]]
    );
    let audit = texts(
        &app.db,
        "SELECT actor, target, outcome FROM audit_log WHERE action = 'replay'",
        vec![],
    )
    .await;
    assert_eq!(
        audit,
        vec![vec![
            Some("olga".into()),
            Some(id.clone()),
            Some("reused_revision".into())
        ]]
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        1,
        "replay never bypasses the inbox"
    );
}

#[tokio::test]
async fn replaying_an_accepted_event_is_a_recorded_duplicate() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");
    let id = scalar(&app.db, "SELECT id FROM webhook_events", vec![])
        .await
        .expect("row")
        .to_string();

    let (_, body) = call(
        &app,
        Some(&cookie),
        "replay",
        &[("id", &id), ("confirm", "true")],
    )
    .await;

    assert!(body.contains("\"outcome\":\"duplicate\""), "{body}");
    assert_eq!(
        archived(&app.db, "shop", "e1")
            .await
            .last()
            .map(|(_, o)| o.as_str()),
        Some("duplicate")
    );
}

#[tokio::test]
async fn bulk_replay_shows_the_dry_run_breakdown_and_needs_the_typed_count() {
    // Three failures whose cause the operator fixed (a bulk replay leaves out the others).
    let broken = crate::problems::broken(Backend::Postgres).await;
    crate::problems::crm_failures(&broken, "bad", 3).await;
    let app = crate::problems::fixed(&broken).await;
    app.send("shop", &event("fine", "o", 1, "{}")).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");

    let (_, dry) = call(&app, Some(&cookie), "bulk_replay", &[]).await;
    let (wrong_status, _) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("confirmation", "replay 2")],
    )
    .await;
    let before = count(&app.db, "SELECT count(*) FROM webhook_events").await;
    let (status, done) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("confirmation", "replay 3")],
    )
    .await;

    assert!(
        dry.contains("\"matched\":3")
            && dry.contains("[\"applied\",3]")
            && dry.contains("\"replayed\":false"),
        "{dry}"
    );
    assert_eq!(wrong_status, StatusCode::BAD_REQUEST);
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(done.contains("\"replayed\":true"), "{done}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        before + 3
    );
    let audit = texts(
        &app.db,
        "SELECT target, detail FROM audit_log WHERE action = 'bulk_replay'",
        vec![],
    )
    .await;
    assert_eq!(audit.len(), 1, "one audit entry: {audit:?}");
    assert_eq!(audit[0][0].as_deref(), Some("3"));
    assert!(
        audit[0][1]
            .as_deref()
            .is_some_and(|d| d.starts_with("applied: 3; deliveries ")),
        "{audit:?}"
    );
}

/// Sends `n` deliveries that fail validation (revision 0) from `source`; returns their ids.
async fn failed_deliveries(app: &TestApp, source: &str, n: usize) -> Vec<i64> {
    for i in 0..n {
        let answer = app
            .send(
                source,
                &format!(
                    r#"{{"event_id":"{source}-bad-{i}","object_id":"o","revision":0,"snapshot":{{}}}}"#
                ),
            )
            .await;
        assert_eq!(answer.status, 422, "{answer:?}");
    }
    texts(
        &app.db,
        "SELECT CAST(id AS TEXT) FROM webhook_events WHERE source = $1 AND status = 'failed' ORDER BY id",
        vec![source.into()],
    )
    .await
    .into_iter()
    .map(|r| r[0].as_deref().unwrap_or_default().parse().expect("an id"))
    .collect()
}

/// `replay_of` of every replayed row, in order.
async fn replayed_originals(app: &TestApp) -> Vec<i64> {
    texts(
        &app.db,
        "SELECT CAST(replay_of AS TEXT) FROM webhook_events WHERE replay_of IS NOT NULL ORDER BY replay_of",
        vec![],
    )
    .await
    .into_iter()
    .map(|r| r[0].as_deref().unwrap_or_default().parse().expect("an id"))
    .collect()
}

#[tokio::test]
async fn bulk_replay_takes_the_filter_it_is_given_and_names_it() {
    // crm's two failures are fixed; sw's revision 0 would fail again.
    let broken = crate::problems::broken(Backend::Postgres).await;
    let crm = crate::problems::crm_failures(&broken, "crm-bad", 2).await;
    let sw = failed_deliveries(&broken, "sw", 1).await;
    let app = crate::problems::fixed(&broken).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");

    let (_, everything) = call(&app, Some(&cookie), "bulk_replay", &[]).await;
    let (_, of_crm) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("status", "failed"), ("source", "crm")],
    )
    .await;
    let (_, of_sw) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("source", "sw"), ("outcome", "invalid")],
    )
    .await;
    let (status, done) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("source", "crm"), ("confirmation", "replay 2")],
    )
    .await;

    assert!(
        everything.contains("\"matched\":3")
            && everything.contains("\"scope\":\"every source, status failed\""),
        "{everything}"
    );
    assert!(
        of_crm.contains("\"matched\":2")
            && of_crm.contains("\"scope\":\"source crm, status failed\""),
        "{of_crm}"
    );
    assert!(
        of_sw.contains("\"matched\":1")
            && of_sw.contains("\"scope\":\"source sw, outcome invalid, status failed\""),
        "{of_sw}"
    );
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(done.contains("\"replayed\":true"), "{done}");
    assert_eq!(
        replayed_originals(&app).await,
        crm,
        "only the filter's deliveries"
    );
    assert!(!replayed_originals(&app).await.contains(&sw[0]));
}

both_backends!(a_bulk_replay_commits_its_replays_and_its_audit_entry_together);
async fn a_bulk_replay_commits_its_replays_and_its_audit_entry_together(backend: Backend) {
    use sea_orm::ConnectionTrait;
    let broken = crate::problems::broken(backend).await;
    let failed = crate::problems::crm_failures(&broken, "bad", 3).await;
    let app = crate::problems::fixed(&broken).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");
    let archive_before = count(&app.db, "SELECT count(*) FROM webhook_events").await;

    // The audit entry cannot be written: nothing of the bulk replay may stay.
    let refuse = match backend {
        Backend::Postgres => {
            "CREATE FUNCTION refuse_bulk_audit() RETURNS trigger LANGUAGE plpgsql AS
                   $$ BEGIN RAISE EXCEPTION 'audit refused' USING ERRCODE = 'check_violation'; END $$;
                 CREATE TRIGGER refuse_bulk_audit BEFORE INSERT ON audit_log FOR EACH ROW
                   WHEN (NEW.action = 'bulk_replay') EXECUTE FUNCTION refuse_bulk_audit();"
        }
        Backend::Sqlite => {
            "CREATE TRIGGER refuse_bulk_audit BEFORE INSERT ON audit_log
                   WHEN NEW.action = 'bulk_replay' BEGIN SELECT RAISE(ABORT, 'audit refused'); END;"
        }
    };
    app.db
        .writer
        .execute_unprepared(refuse)
        .await
        .expect("refuse the audit entry");
    let (status, refused) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("confirmation", "replay 3")],
    )
    .await;
    // A refusal of the data, which trying again meets again: 422, not 503.
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{backend:?}: {refused}"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        archive_before,
        "{backend:?}: no replay without its audit entry"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'bulk_replay'"
        )
        .await,
        0
    );
    let allow = match backend {
        Backend::Postgres => "DROP TRIGGER refuse_bulk_audit ON audit_log",
        Backend::Sqlite => "DROP TRIGGER refuse_bulk_audit",
    };
    app.db
        .writer
        .execute_unprepared(allow)
        .await
        .expect("drop the trigger");

    let (status, done) = call(
        &app,
        Some(&cookie),
        "bulk_replay",
        &[("confirmation", "replay 3")],
    )
    .await;

    assert_eq!(status, StatusCode::OK, "{backend:?}: {done}");
    assert_eq!(replayed_originals(&app).await, failed, "{backend:?}");
    let audit = texts(
        &app.db,
        "SELECT target, detail FROM audit_log WHERE action = 'bulk_replay'",
        vec![],
    )
    .await;
    let ids = failed
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    assert_eq!(
        audit,
        vec![vec![
            Some("3".into()),
            Some(format!("applied: 3; deliveries {ids}"))
        ]],
        "{backend:?}: one entry naming the count and the deliveries replayed"
    );
}

both_backends!(a_replay_the_database_refuses_is_422_and_writes_nothing);
/// A refusal of the replayed data by the database is deterministic: 422 naming it, not a 503 that
/// invites the operator to try again. A constraint the test adds stands for such refusals.
async fn a_replay_the_database_refuses_is_422_and_writes_nothing(backend: Backend) {
    use sea_orm::ConnectionTrait;
    let app = spawn_app(backend).await;
    let first = app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    assert_eq!(first.outcome(), "applied");
    let id = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'e1'",
        vec![],
    )
    .await
    .expect("archived")
    .to_string();
    let refuse = match backend {
        Backend::Postgres => {
            "ALTER TABLE webhook_events ADD CONSTRAINT test_refuses_replays CHECK (replay_of IS NULL)"
        }
        Backend::Sqlite => {
            "CREATE TRIGGER test_refuses_replays BEFORE INSERT ON webhook_events
             WHEN NEW.replay_of IS NOT NULL BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        }
    };
    app.db
        .dashboard
        .execute_unprepared(refuse)
        .await
        .expect("add the refusal");
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.expect("sign in");

    for confirm in ["false", "true"] {
        let (status, answer) = call(
            &app,
            Some(&cookie),
            "replay",
            &[("id", &id), ("confirm", confirm)],
        )
        .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{backend:?} confirm={confirm}: {answer}"
        );
        assert!(answer.contains("nothing was replayed"), "{answer}");
    }
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        1,
        "{backend:?}: nothing written"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'replay'"
        )
        .await,
        0
    );
}
