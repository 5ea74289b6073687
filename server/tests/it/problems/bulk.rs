//! A bulk replay after the fix leaves out the failures already resolved, the replays
//! themselves and the failures whose replay would fail as they did; it says how many and why,
//! its typed count is the number it replays, and its audit entry records what it skipped.

use super::*;

both_backends!(a_bulk_replay_skips_what_is_resolved_what_is_a_replay_and_what_would_fail_again);
async fn a_bulk_replay_skips_what_is_resolved_what_is_a_replay_and_what_would_fail_again(
    backend: Backend,
) {
    let app = broken(backend).await;
    let failed = crm_failures(&app, "b", 4).await;
    let revision_zero = bad_revision(&app, "b-zero").await;
    let cookie = signed_in(&app, "olga", Role::Operator).await;
    // A failed replay of the first, made while the cause was not fixed.
    let (_, failed_replay) = replay(&app, &cookie, failed[0], true).await;
    let failed_replay = failed_replay["archive_id"]
        .as_i64()
        .expect("a failed replay");
    let fixed = fixed(&app).await;
    // The second, replayed alone after the fix: resolved.
    let (_, alone) = replay(&fixed, &cookie, failed[1], false).await;
    assert_eq!(alone["outcome"], "applied");
    let filter = [("source", "crm")];

    let (status, dry) = call_json(&fixed, &cookie, "bulk_replay", &filter).await;
    let (wrong, refused) = call_json(
        &fixed,
        &cookie,
        "bulk_replay",
        &[("source", "crm"), ("confirmation", "replay 6")],
    )
    .await;
    let archive_before = count(&app.db, "SELECT count(*) FROM webhook_events").await;
    let (done_status, done) = call_json(
        &fixed,
        &cookie,
        "bulk_replay",
        &[("source", "crm"), ("confirmation", "replay 3")],
    )
    .await;

    assert_eq!(status, StatusCode::OK, "{backend:?}: {dry}");
    assert_eq!(dry["matched"], 6, "{dry}: 5 failures and the failed replay");
    assert_eq!(
        dry["breakdown"],
        serde_json::json!([["applied", 3]]),
        "{dry}"
    );
    assert_eq!(
        dry["skipped"],
        serde_json::json!({"resolved": 1, "replays": 1, "same_failure": 1, "unknown_source": 0, "body_expired": 0}),
        "{backend:?}: {dry}"
    );
    assert_eq!(dry["confirmation"], "replay 3");
    assert_eq!(wrong, StatusCode::BAD_REQUEST, "{refused}");
    assert!(
        refused.to_string().contains("type \\\"replay 3\\\""),
        "{refused}"
    );
    assert_eq!(done_status, StatusCode::OK, "{backend:?}: {done}");
    assert_eq!(done["replayed"], true);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        archive_before + 3,
        "{backend:?}: three replays, nothing of the skipped"
    );
    // Every original is resolved now, but revision 0, which no fix of the mapping helps.
    for id in [failed[0], failed[2], failed[3]] {
        assert!(resolved_by(&app, id).await.is_some(), "{backend:?}: {id}");
    }
    assert_eq!(
        resolved_by(&app, failed_replay).await,
        resolved_by(&app, failed[0]).await
    );
    assert_eq!(resolved_by(&app, revision_zero).await, None);
    let audit = texts(
        &app.db,
        "SELECT target, detail FROM audit_log WHERE action = 'bulk_replay'",
        vec![],
    )
    .await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0][0].as_deref(), Some("3"));
    let detail = audit[0][1].clone().unwrap_or_default();
    assert!(
        detail.starts_with(
            "applied: 3; skipped 3: already resolved 1, replays themselves 1, would fail the same way 1; deliveries "
        ),
        "{detail}"
    );
    // Nothing is left to replay: the dry run offers no confirmation.
    let (_, again) = call_json(&fixed, &cookie, "bulk_replay", &filter).await;
    assert_eq!(again["confirmation"], "", "{again}");
    assert_eq!(again["skipped"]["resolved"], 4, "{again}");
    let open = app::db::problems::open_counts(&app.db)
        .await
        .expect("counts");
    assert_eq!(
        (open.problems, open.failures),
        (1, 1),
        "{backend:?}: revision 0 alone"
    );
}
