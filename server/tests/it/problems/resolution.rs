//! What resolves a failure: a replay that applies (or is a duplicate) resolves it, and the two
//! pages link each other; a replay that fails leaves it open; a replay of a failed replay
//! resolves the original and the failed replay between them.

use super::*;

both_backends!(a_replay_that_applies_resolves_the_failure_and_the_pages_link_both_ways);
async fn a_replay_that_applies_resolves_the_failure_and_the_pages_link_both_ways(backend: Backend) {
    let app = broken(backend).await;
    let failed = crm_failures(&app, "r", 1).await[0];
    let fixed = fixed(&app).await;
    let cookie = signed_in(&fixed, "olga", Role::Operator).await;

    let (status, answer) = replay(&fixed, &cookie, failed, false).await;

    assert_eq!(status, StatusCode::OK, "{backend:?}: {answer}");
    assert_eq!(answer["outcome"], "applied");
    let replay_id = answer["archive_id"].as_i64().expect("the new row");
    assert_eq!(
        resolved_by(&app, failed).await,
        Some(replay_id),
        "{backend:?}"
    );
    assert_eq!(
        scalar(
            &app.db,
            "SELECT replay_of FROM webhook_events WHERE id = $1",
            vec![replay_id.into()]
        )
        .await,
        Some(failed)
    );
    let original = page(&fixed, &cookie, &format!("/events/{failed}")).await;
    let resolved = original
        .split("data-testid=\"resolved-by\"")
        .nth(1)
        .and_then(|rest| rest.split("</dd>").next())
        .expect("the failure says it is resolved");
    assert!(
        resolved.contains("Resolved by replay")
            && resolved.contains(&format!("href=\"/events/{replay_id}\"")),
        "{backend:?}: the failure links its replay: {resolved}"
    );
    let replayed = page(&fixed, &cookie, &format!("/events/{replay_id}")).await;
    assert!(
        replayed.contains(&format!("href=\"/events/{failed}\"")),
        "the replay links back"
    );
    let open = app::db::problems::open_counts(&app.db)
        .await
        .expect("counts");
    assert_eq!((open.problems, open.failures), (0, 0), "{backend:?}");
    let audit = texts(
        &app.db,
        "SELECT detail FROM audit_log WHERE action = 'replay'",
        vec![],
    )
    .await;
    assert_eq!(
        audit,
        vec![vec![Some(format!(
            "new archive row {replay_id}, which resolves the failure"
        ))]]
    );
}

both_backends!(a_replay_that_fails_leaves_the_failure_open_and_is_no_failure_of_its_own);
async fn a_replay_that_fails_leaves_the_failure_open_and_is_no_failure_of_its_own(
    backend: Backend,
) {
    let app = broken(backend).await;
    let failed = crm_failures(&app, "f", 1).await[0];
    let cookie = signed_in(&app, "olga", Role::Operator).await;

    let (status, answer) = replay(&app, &cookie, failed, true).await;

    assert_eq!(status, StatusCode::OK, "{backend:?}: {answer}");
    assert_eq!(answer["outcome"], "invalid");
    assert_eq!(resolved_by(&app, failed).await, None, "{backend:?}");
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE status = 'failed'"
        )
        .await,
        2,
        "the failed replay is archived"
    );
    let open = app::db::problems::open_counts(&app.db)
        .await
        .expect("counts");
    assert_eq!(
        (open.problems, open.failures),
        (1, 1),
        "{backend:?}: the original alone is open; its failed replay is no new failure"
    );
}

both_backends!(a_replay_of_a_failed_replay_resolves_the_original);
async fn a_replay_of_a_failed_replay_resolves_the_original(backend: Backend) {
    let app = broken(backend).await;
    let original = crm_failures(&app, "c", 1).await[0];
    let cookie = signed_in(&app, "olga", Role::Operator).await;
    let (_, first) = replay(&app, &cookie, original, true).await;
    let failed_replay = first["archive_id"].as_i64().expect("a failed replay");
    let fixed = fixed(&app).await;

    let (status, second) = replay(&fixed, &cookie, failed_replay, false).await;

    assert_eq!(status, StatusCode::OK, "{backend:?}: {second}");
    assert_eq!(second["outcome"], "applied");
    let applied = second["archive_id"].as_i64().expect("the new row");
    assert_eq!(
        resolved_by(&app, original).await,
        Some(applied),
        "{backend:?}: the original"
    );
    assert_eq!(
        resolved_by(&app, failed_replay).await,
        Some(applied),
        "{backend:?}"
    );
    let open = app::db::problems::open_counts(&app.db)
        .await
        .expect("counts");
    assert_eq!(open.failures, 0);
}

both_backends!(a_replay_that_is_a_duplicate_resolves_the_failure);
/// The sender retried after the fix, so the event is in already: the failure's replay is a
/// recorded duplicate, and the failure is resolved all the same.
async fn a_replay_that_is_a_duplicate_resolves_the_failure(backend: Backend) {
    let app = broken(backend).await;
    let failed = crm_failures(&app, "d", 1).await[0];
    let fixed = fixed(&app).await;
    let retry = fixed.send("crm", &crm("d-0", "d-o0", 1)).await;
    assert_eq!(retry.outcome(), "applied", "{retry:?}");
    let cookie = signed_in(&fixed, "olga", Role::Operator).await;

    let (status, answer) = replay(&fixed, &cookie, failed, false).await;

    assert_eq!(status, StatusCode::OK, "{backend:?}: {answer}");
    assert_eq!(answer["outcome"], "duplicate");
    assert_eq!(
        resolved_by(&app, failed).await,
        answer["archive_id"].as_i64(),
        "{backend:?}"
    );
}

both_backends!(a_dry_run_resolves_nothing);
async fn a_dry_run_resolves_nothing(backend: Backend) {
    let app = broken(backend).await;
    let failed = crm_failures(&app, "n", 1).await[0];
    let fixed = fixed(&app).await;
    let cookie = signed_in(&fixed, "olga", Role::Operator).await;
    let id = failed.to_string();

    let (status, dry) = call_json(
        &fixed,
        &cookie,
        "replay",
        &[("id", &id), ("confirm", "false")],
    )
    .await;

    assert_eq!(status, StatusCode::OK, "{dry}");
    assert_eq!(dry["outcome"], "applied");
    assert_eq!(dry["same_failure"], false);
    assert_eq!(resolved_by(&app, failed).await, None, "{backend:?}");
}
