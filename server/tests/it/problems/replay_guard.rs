//! The replay guard: a replay that would fail as its original did is refused (409, nothing
//! written) unless the operator types the override; after the fix it runs as any replay.

use super::*;

both_backends!(a_replay_that_would_fail_the_same_way_is_a_409_unless_the_operator_insists);
async fn a_replay_that_would_fail_the_same_way_is_a_409_unless_the_operator_insists(
    backend: Backend,
) {
    let app = broken(backend).await;
    let failed = crm_failures(&app, "x", 1).await[0];
    let cookie = signed_in(&app, "olga", Role::Operator).await;
    let id = failed.to_string();
    let archive_before = count(&app.db, "SELECT count(*) FROM webhook_events").await;

    let (dry_status, dry) = call_json(
        &app,
        &cookie,
        "replay",
        &[("id", &id), ("confirm", "false")],
    )
    .await;
    let (refused, answer) = replay(&app, &cookie, failed, false).await;
    let after_refusal = count(&app.db, "SELECT count(*) FROM webhook_events").await;
    let (mistyped, _) = call_json(
        &app,
        &cookie,
        "replay",
        &[("id", &id), ("confirm", "true"), ("anyway", "yes please")],
    )
    .await;
    let (insisted, done) = replay(&app, &cookie, failed, true).await;

    assert_eq!(dry_status, StatusCode::OK, "{dry}");
    assert_eq!(
        dry["same_failure"], true,
        "{backend:?}: the dry run says so"
    );
    assert_eq!(refused, StatusCode::CONFLICT, "{backend:?}: {answer}");
    let message = answer.to_string();
    assert!(
        message.contains("would fail as the original did")
            && message.contains(MISSING)
            && message.contains("replay anyway"),
        "{message}"
    );
    assert_eq!(
        after_refusal, archive_before,
        "{backend:?}: nothing written"
    );
    assert_eq!(mistyped, StatusCode::BAD_REQUEST);
    assert_eq!(insisted, StatusCode::OK, "{done}");
    assert_eq!(done["outcome"], "invalid");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        archive_before + 1
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'replay'"
        )
        .await,
        1,
        "the refused replay left no audit row"
    );

    let fixed = fixed(&app).await;
    let (status, applied) = replay(&fixed, &cookie, failed, false).await;
    assert_eq!(status, StatusCode::OK, "{backend:?}: {applied}");
    assert_eq!(
        applied["outcome"], "applied",
        "once fixed, no override needed"
    );
}
