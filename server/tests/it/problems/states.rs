//! What an operator says of a cause: acknowledged (still open, still counted), ignored (quiet,
//! new failures too, listed apart), resolved (its failures leave; one after it reopens the
//! cause), open again. Resolving or ignoring is confirmed with the count it covers, ignoring
//! takes a reason; each change is audited, the resolved and ignored causes listed who, when and
//! why; viewers cannot change anything.

use super::*;

/// Sets a cause's state as the page's buttons do: resolving or ignoring asks what it covers,
/// then confirms that count with a reason.
async fn set(app: &TestApp, cookie: &str, class: &str, state: &str) -> (StatusCode, Json) {
    let args = [
        ("source", "crm"),
        ("outcome", "invalid"),
        ("class", class),
        ("state", state),
    ];
    let (status, answer) = call_json(app, cookie, "problem_state", &args).await;
    if status != StatusCode::OK || !matches!(state, "resolved" | "ignored") {
        return (status, answer);
    }
    assert_eq!(answer["changed"], false, "asking changes nothing: {answer}");
    let covers = answer["covers"].as_i64().expect("a count").to_string();
    let mut confirmed = args.to_vec();
    confirmed.extend([
        ("confirm", covers.as_str()),
        ("reason", "known; the sender fixes it"),
    ]);
    call_json(app, cookie, "problem_state", &confirmed).await
}

both_backends!(an_acknowledged_cause_stays_open_and_counted_and_is_audited);
async fn an_acknowledged_cause_stays_open_and_counted_and_is_audited(backend: Backend) {
    let app = broken(backend).await;
    crm_failures(&app, "a", 3).await;
    let cookie = signed_in(&app, "olga", Role::Operator).await;

    let (status, answer) = set(&app, &cookie, MISSING, "acknowledged").await;

    assert_eq!(status, StatusCode::OK, "{backend:?}: {answer}");
    let page = problems(&app, &cookie).await;
    assert_eq!(
        open_groups(&page),
        vec![("crm".into(), "invalid".into(), MISSING.into(), 3)]
    );
    assert_eq!(page["open"][0]["state"], "acknowledged");
    assert_eq!(page["open"][0]["changed_by"], "olga");
    assert_eq!(page["can_act"], true);
    let audit = texts(
        &app.db,
        "SELECT actor, action, target, outcome FROM audit_log WHERE action LIKE '%problem'",
        vec![],
    )
    .await;
    assert_eq!(
        audit,
        vec![vec![
            Some("olga".into()),
            Some("acknowledge_problem".into()),
            Some(format!("crm invalid {MISSING}")),
            Some("acknowledged".into())
        ]]
    );
}

both_backends!(an_ignored_cause_stays_quiet_with_new_failures_too_until_reopened);
async fn an_ignored_cause_stays_quiet_with_new_failures_too_until_reopened(backend: Backend) {
    let app = broken(backend).await;
    crm_failures(&app, "i", 2).await;
    bad_revision(&app, "keep").await;
    let cookie = signed_in(&app, "olga", Role::Operator).await;

    let (status, _) = set(&app, &cookie, MISSING, "ignored").await;
    crm_failures(&app, "i-later", 1).await;

    assert_eq!(status, StatusCode::OK);
    let page = problems(&app, &cookie).await;
    assert_eq!(
        open_groups(&page),
        vec![("crm".into(), "invalid".into(), BAD_REVISION.into(), 1)],
        "{backend:?}"
    );
    assert_eq!(
        page["open_failures"], 1,
        "the ignored cause's failures are not counted"
    );
    assert_eq!(page["ignored_total"], 1);
    assert_eq!(
        page["ignored"][0]["count"], 3,
        "listed apart, its new failure too"
    );
    let open = app::db::problems::open_counts(&app.db)
        .await
        .expect("counts");
    assert_eq!((open.problems, open.failures), (1, 1));
    let html = super::page(&app, &cookie, "/problems").await;
    assert!(
        html.contains("Ignored causes (1)"),
        "{backend:?}: a collapsed section"
    );

    let (status, _) = set(&app, &cookie, MISSING, "open").await;

    assert_eq!(status, StatusCode::OK);
    let open = app::db::problems::open_counts(&app.db)
        .await
        .expect("counts");
    assert_eq!(
        (open.problems, open.failures),
        (2, 4),
        "{backend:?}: open again"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action IN ('ignore_problem', 'reopen_problem')"
        )
        .await,
        2
    );
}

both_backends!(a_resolved_cause_leaves_and_a_new_failure_reopens_it);
async fn a_resolved_cause_leaves_and_a_new_failure_reopens_it(backend: Backend) {
    let app = broken(backend).await;
    crm_failures(&app, "s", 5).await;
    let cookie = signed_in(&app, "olga", Role::Operator).await;

    let (status, _) = set(&app, &cookie, MISSING, "resolved").await;
    let after_resolving = app::db::problems::open_counts(&app.db)
        .await
        .expect("counts");
    let later = crm_failures(&app, "s-later", 1).await[0];

    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (after_resolving.problems, after_resolving.failures),
        (0, 0),
        "{backend:?}"
    );
    let page = problems(&app, &cookie).await;
    assert_eq!(
        open_groups(&page),
        vec![("crm".into(), "invalid".into(), MISSING.into(), 1)],
        "{backend:?}: reopened by the failure after, which alone counts"
    );
    assert_eq!(page["open"][0]["example"].as_i64(), Some(later));
    assert_eq!(
        page["open"][0]["state"], "resolved",
        "shown as failing again after it was resolved"
    );
    // The failed list of open failures agrees.
    let (_, listed) = call_json(
        &app,
        &cookie,
        "events",
        &[("status", "failed"), ("open", "1")],
    )
    .await;
    assert_eq!(
        listed["rows"].as_array().map(Vec::len),
        Some(1),
        "{backend:?}"
    );
}

both_backends!(only_operators_change_states_and_only_of_causes_that_exist);
async fn only_operators_change_states_and_only_of_causes_that_exist(backend: Backend) {
    let app = broken(backend).await;
    crm_failures(&app, "v", 1).await;
    let viewer = signed_in(&app, "vera", Role::Viewer).await;
    let operator = signed_in(&app, "olga", Role::Operator).await;

    let (as_viewer, _) = set(&app, &viewer, MISSING, "ignored").await;
    let (made_up, answer) = set(&app, &operator, "no such cause", "ignored").await;
    let (bad_state, _) = set(&app, &operator, MISSING, "fixed").await;
    let (too_long, _) = set(&app, &operator, &"x".repeat(5000), "ignored").await;
    let html = super::page(&app, &viewer, "/problems").await;

    assert_eq!(as_viewer, StatusCode::FORBIDDEN, "{backend:?}");
    assert_eq!(made_up, StatusCode::NOT_FOUND, "{answer}");
    assert_eq!(bad_state, StatusCode::BAD_REQUEST);
    assert_eq!(too_long, StatusCode::BAD_REQUEST);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM problem_states").await,
        0
    );
    assert!(html.contains("data-testid=\"problem-row\""), "{backend:?}");
    assert!(
        !html.contains("data-testid=\"problem-ignored\""),
        "a viewer sees no buttons"
    );
}

both_backends!(resolving_says_how_many_deliveries_were_never_applied_and_ignoring_needs_a_reason);
async fn resolving_says_how_many_deliveries_were_never_applied_and_ignoring_needs_a_reason(
    backend: Backend,
) {
    let app = broken(backend).await;
    crm_failures(&app, "c", 9).await;
    let cookie = signed_in(&app, "olga", Role::Operator).await;
    let args = |state: &'static str| {
        vec![
            ("source", "crm"),
            ("outcome", "invalid"),
            ("class", MISSING),
            ("state", state),
        ]
    };

    let (status, asked) = call_json(&app, &cookie, "problem_state", &args("resolved")).await;
    let before = app::db::problems::open_counts(&app.db)
        .await
        .expect("counts");
    let (no_reason, refused) = call_json(&app, &cookie, "problem_state", &{
        let mut a = args("ignored");
        a.push(("confirm", "9"));
        a
    })
    .await;
    let (stale, conflict) = call_json(&app, &cookie, "problem_state", &{
        let mut a = args("ignored");
        a.extend([("confirm", "8"), ("reason", "expected")]);
        a
    })
    .await;
    let (long, _) = call_json(&app, &cookie, "problem_state", &{
        let mut a = args("ignored");
        a.extend([("confirm", "9"), ("reason", &*"x".repeat(501).leak())]);
        a
    })
    .await;
    let (ignored, _) = call_json(&app, &cookie, "problem_state", &{
        let mut a = args("ignored");
        a.extend([
            ("confirm", "9"),
            ("reason", "a test sender; its owner knows"),
        ]);
        a
    })
    .await;

    assert_eq!(status, StatusCode::OK, "{asked}");
    assert_eq!(asked["covers"], 9, "{backend:?}");
    assert_eq!(asked["covers_words"], "9 deliveries were never applied");
    assert_eq!(asked["changed"], false);
    assert_eq!(
        (before.problems, before.failures),
        (1, 9),
        "nothing changed"
    );
    assert_eq!(no_reason, StatusCode::BAD_REQUEST, "{refused}");
    assert!(
        refused.to_string().contains("reason: required"),
        "{refused}"
    );
    assert_eq!(stale, StatusCode::CONFLICT, "{conflict}");
    assert_eq!(long, StatusCode::BAD_REQUEST);
    assert_eq!(ignored, StatusCode::OK);
    assert_eq!(
        texts(
            &app.db,
            "SELECT action, detail FROM audit_log WHERE action LIKE '%problem' ORDER BY id",
            vec![],
        )
        .await,
        vec![vec![
            Some("ignore_problem".into()),
            Some("9 deliveries were never applied; reason: a test sender; its owner knows".into()),
        ]],
        "{backend:?}: one entry, the refused calls none"
    );
    let (status, settled) = call_json(&app, &cookie, "problems_settled", &[]).await;
    assert_eq!(status, StatusCode::OK, "{settled}");
    assert_eq!(settled["total"], 1);
    let row = &settled["rows"][0];
    assert_eq!(row["cause"]["source"], "crm");
    assert_eq!(row["state"], "ignored");
    assert_eq!(row["changed_by"], "olga");
    assert_eq!(row["reason"], "a test sender; its owner knows");
    let html = super::page(&app, &cookie, "/problems").await;
    assert!(
        html.contains("Resolved and ignored causes (1)"),
        "{backend:?}"
    );
    assert!(
        html.contains("a test sender; its owner knows"),
        "{backend:?}"
    );
}

both_backends!(the_list_of_resolved_and_ignored_causes_is_paged_and_bounded);
async fn the_list_of_resolved_and_ignored_causes_is_paged_and_bounded(backend: Backend) {
    let app = broken(backend).await;
    let cookie = signed_in(&app, "olga", Role::Operator).await;
    use sea_orm::ConnectionTrait;
    // 55 settled causes, written as the states table holds them.
    for n in 0..55 {
        app.db
            .writer
            .execute_raw(sea_orm::Statement::from_sql_and_values(
                app.db.backend(),
                "INSERT INTO problem_states (source, outcome, error_class, state, changed_at, changed_by, reason)
                 VALUES ('crm', 'invalid', $1, 'resolved', $2, 'olga', 'fixed')",
                vec![
                    format!("class {n:02}").into(),
                    (chrono::Utc::now() - chrono::Duration::minutes(n)).into(),
                ],
            ))
            .await
            .expect("a state");
    }

    let (_, first) = call_json(&app, &cookie, "problems_settled", &[]).await;
    let (_, second) = call_json(&app, &cookie, "problems_settled", &[("page", "1")]).await;
    let (past, _) = call_json(&app, &cookie, "problems_settled", &[("page", "1000")]).await;

    assert_eq!(first["total"], 55, "{backend:?}");
    assert_eq!(first["rows"].as_array().map(Vec::len), Some(50));
    assert_eq!(
        first["rows"][0]["cause"]["class"], "class 00",
        "the newest first"
    );
    assert_eq!(second["rows"].as_array().map(Vec::len), Some(5));
    assert_eq!(second["rows"][4]["cause"]["class"], "class 54");
    assert_eq!(past, StatusCode::BAD_REQUEST);
}
