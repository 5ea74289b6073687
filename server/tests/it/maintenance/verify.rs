//! The invariant check: projection and archive drift is reported, `--repair` re-derives the
//! projection (waiting for a delivery that holds the row), and the overview shows the last run.

use super::*;

/// Objects A (revisions 1-3), B (1), C (1-2) and D (1, a snapshot with two keys).
async fn four_objects(db: &Db) {
    for (object_id, revisions) in [("A", 3), ("B", 1), ("C", 2)] {
        for revision in 1..=revisions {
            let body = event(
                &format!("{object_id}{revision}"),
                object_id,
                revision,
                &format!(r#"{{"r":{revision}}}"#),
            );
            deliver(db, &body, Utc::now(), None).await;
        }
    }
    deliver(
        db,
        &event("D1", "D", 1, r#"{"a":1,"b":[true,"x"]}"#),
        Utc::now(),
        None,
    )
    .await;
}

both_backends!(verify_reports_corrupted_and_missing_projection_rows_and_repair_rederives_them);
async fn verify_reports_corrupted_and_missing_projection_rows_and_repair_rederives_them(
    backend: Backend,
) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    four_objects(db).await;
    let clean = verify(db, cutoff(), false).await.expect("verify");
    assert_eq!(clean.drifts, vec![], "{backend:?}");

    execute(
        db,
        r#"UPDATE object_state SET revision = 7, snapshot = '{"r":7}' WHERE object_id = 'A'"#,
    )
    .await;
    execute(db, "DELETE FROM object_state WHERE object_id = 'B'").await;
    execute(
        db,
        r#"UPDATE object_state SET snapshot = '{"r":99}' WHERE object_id = 'C'"#,
    )
    .await;
    // The same JSON value written differently is no drift (jsonb equality on both backends).
    execute(
            db,
            r#"UPDATE object_state SET snapshot = '{ "b": [true, "x"], "a": 1.0 }' WHERE object_id = 'D'"#,
        )
        .await;

    let found = verify(db, cutoff(), false).await.expect("verify");
    let expected = vec![
        Drift::ProjectionDiffers {
            source: "shop".into(),
            object_id: "A".into(),
            projected_revision: 7,
            greatest_revision: 3,
        },
        Drift::ProjectionMissing {
            source: "shop".into(),
            object_id: "B".into(),
            greatest_revision: 1,
        },
        Drift::ProjectionDiffers {
            source: "shop".into(),
            object_id: "C".into(),
            projected_revision: 2,
            greatest_revision: 2,
        },
    ];
    assert_eq!(found.drifts, expected, "{backend:?}");
    assert_eq!((found.repaired, found.remaining()), (0, 3));
    assert_eq!(
        projection(db, "A").await,
        Some((7, r#"{"r":7}"#.into())),
        "{backend:?}: without --repair nothing changes"
    );
    assert!(found.drifts[0].to_string().contains("shop/A"));
    assert!(found.drifts[0].to_string().contains("--repair"));

    let repaired = verify(db, cutoff(), true).await.expect("repair");
    assert_eq!(repaired.drifts, expected, "{backend:?}");
    assert_eq!((repaired.repaired, repaired.remaining()), (3, 0));
    assert_eq!(projection(db, "A").await, Some((3, r#"{"r":3}"#.into())));
    assert_eq!(projection(db, "B").await, Some((1, r#"{"r":1}"#.into())));
    assert_eq!(projection(db, "C").await, Some((2, r#"{"r":2}"#.into())));

    let after = verify(db, cutoff(), false).await.expect("verify again");
    assert_eq!(after.drifts, vec![], "{backend:?}");
    assert_eq!(count(db, "SELECT count(*) FROM verify_runs").await, 4);
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM verify_runs WHERE drift_count = 3 AND repaired = 3"
        )
        .await,
        1
    );
    let overview = app::db::overview::overview(db, 1, app::db::overview::Tz::UTC)
        .await
        .expect("overview");
    let last = overview.last_verify.expect("a recorded run");
    assert_eq!(
        (last.drift_count, last.repaired, last.summary.as_str()),
        (0, 0, "no drift"),
        "{backend:?}"
    );
}

both_backends!(verify_reports_archive_drift_and_repair_leaves_the_records_alone);
async fn verify_reports_archive_drift_and_repair_leaves_the_records_alone(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    deliver(db, &event("e1", "X", 1, "{}"), Utc::now(), None).await;
    deliver(db, &event("e2", "X", 2, "{}"), Utc::now(), None).await;
    deliver(db, &event("e3", "Y", 1, "{}"), Utc::now(), None).await;
    let long_ago = Utc::now() - Duration::days(100);
    deliver(db, &event("purged", "Z", 1, "{}"), long_ago, None).await;
    assert_eq!(purge_archive(db, cutoff(), 10).await.expect("purge"), 1);

    execute(db, "DELETE FROM webhook_events WHERE event_id = 'e1'").await;
    execute(
        db,
        "UPDATE webhook_events SET revision = 5 WHERE event_id = 'e2'",
    )
    .await;
    execute(db, "DELETE FROM webhook_inbox WHERE event_id = 'e3'").await;

    let report = verify(db, cutoff(), true).await.expect("verify");
    let archive_id = |event_id: &str| {
        let db = db.clone();
        let event_id = event_id.to_string();
        async move {
            scalar(
                &db,
                "SELECT id FROM webhook_events WHERE event_id = $1",
                vec![event_id.into()],
            )
            .await
            .expect("archive row")
        }
    };
    assert_eq!(
        report.drifts,
        vec![
            Drift::ProjectionWithoutInbox {
                source: "shop".into(),
                object_id: "Y".into(),
                projected_revision: 1,
            },
            Drift::ArchiveMissing {
                source: "shop".into(),
                event_id: "e1".into(),
            },
            Drift::ArchiveContradicts {
                archive_id: archive_id("e2").await,
                source: "shop".into(),
                event_id: Some("e2".into()),
                outcome: "applied".into(),
                problem: "claims applied at revision 5 but the inbox row holds revision 2".into(),
            },
            Drift::ArchiveContradicts {
                archive_id: archive_id("e3").await,
                source: "shop".into(),
                event_id: Some("e3".into()),
                outcome: "applied".into(),
                problem: "claims applied but the inbox has no row of this event".into(),
            },
        ],
        "{backend:?}: the purged archive row of an old inbox row is no drift"
    );
    assert_eq!((report.repaired, report.remaining()), (0, 4));
    assert_eq!(
        scalar(
            db,
            "SELECT revision FROM webhook_events WHERE event_id = 'e2'",
            vec![]
        )
        .await,
        Some(5),
        "{backend:?}: archive rows are never rewritten"
    );
    assert_eq!(current_revision(db, "shop", "Y").await, Some(1));
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM verify_runs WHERE drift_count = 4 AND repaired = 0"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_repair_waits_for_a_delivery_holding_the_row_and_derives_from_what_it_committed() {
    let test_db = test_db(Backend::Postgres).await;
    let db = test_db.db.clone();
    four_objects(&db).await;
    execute(
        &db,
        r#"UPDATE object_state SET revision = 7, snapshot = '{"r":7}' WHERE object_id = 'A'"#,
    )
    .await;

    // Revision 4 of A, its transaction open: it holds A's projection row (and is stale against
    // the corrupted 7).
    let body = event("A4", "A", 4, r#"{"r":4}"#);
    let envelope = parse_envelope(
        &app::envelope::Mapping::snapshot_envelope(),
        &http::HeaderMap::new(),
        body.as_bytes(),
    )
    .expect("valid envelope");
    let received = Received {
        source: "shop",
        headers_json: "{}",
        body: body.as_bytes(),
        body_fields: None,
        received_at: Utc::now(),
        replay_of: None,
        replayed_by: None,
        signed_body_digest: None,
        forward_to: &[],
    };
    let txn = ingest::begin(&db).await.expect("begin");
    let held = ingest::apply_in(&txn, Mode::Snapshot, &received, &envelope)
        .await
        .expect("apply");
    assert_eq!(
        held.outcome,
        Outcome::Stale {
            revision: 4,
            current_revision: 7
        }
    );
    let holder = crate::support::backend_pid(&txn).await;

    let repair_db = db.clone();
    let repair = tokio::spawn(async move {
        repair_projection(&repair_db, "shop", "A")
            .await
            .expect("repair")
    });
    wait_until_blocked_by(&db, holder).await;
    assert!(!repair.is_finished(), "the repair waits on the row lock");
    txn.commit().await.expect("commit the delivery");
    repair.await.expect("repair task");

    assert_eq!(projection(&db, "A").await, Some((4, r#"{"r":4}"#.into())));
    assert_eq!(
        verify(&db, cutoff(), false).await.expect("verify").drifts,
        vec![]
    );
}

/// The overview page as a signed-in viewer sees it.
async fn overview_html(app: &TestApp, cookie: &str) -> String {
    let page = app
        .client
        .get(app.url("/"))
        .header("Cookie", cookie)
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), reqwest::StatusCode::OK);
    page.text().await.expect("html")
}

#[tokio::test]
async fn the_overview_shows_the_last_invariant_check() {
    let app = spawn_app(Backend::Postgres).await;
    deliver(&app.db, &event("e1", "X", 1, "{}"), Utc::now(), None).await;
    let cookie = signed_in(&app, "vera", app::model::Role::Viewer).await;
    let before = overview_html(&app, &cookie).await;
    assert!(before.contains("data-testid=\"invariant-check\""));
    assert!(before.contains("never run"), "{before}");

    execute(&app.db, "DELETE FROM object_state WHERE object_id = 'X'").await;
    let report = verify(&app.db, cutoff(), false).await.expect("verify");
    assert_eq!(report.remaining(), 1);
    let after = overview_html(&app, &cookie).await;

    assert!(!after.contains("never run"));
    assert!(after.contains("1 drift"), "{after}");
    assert!(
        after.contains("objects missing from object_state: 1; repaired: 0"),
        "{after}"
    );
}
