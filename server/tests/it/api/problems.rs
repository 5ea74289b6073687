//! `GET /api/v1/problems` and `POST /api/v1/problems/{id}/state`: the causes `/problems`
//! shows, each with an id that stays the cause's; a state given as the page gives it, audited
//! with the token's name; a token of other sources sees none of them.

use super::*;
use crate::problems::crm_failures;
use std::path::Path;

fn config() -> app::config::Config {
    let text = format!(
        "{CONFIG}
[[sources]]
name = \"crm\"
scheme = \"hmac-sha256\"
secrets_env = [\"SHOP_SECRET\"]
snapshot = \"/data\"
"
    );
    app::config::Config::parse(&text, Path::new("api-problems.toml"), &test_env).unwrap()
}

const MISSING: &str = "snapshot (/data) is missing";

both_backends!(problems_are_listed_with_their_ids_and_take_a_state_as_the_page_gives_it);
async fn problems_are_listed_with_their_ids_and_take_a_state_as_the_page_gives_it(
    backend: Backend,
) {
    let app = spawn_app_with(backend, config()).await;
    let ids = crm_failures(&app, "a", 3).await;
    let viewer = token(&app, "reader", Role::Viewer, &[]).await;
    let operator = token(&app, "fixer", Role::Operator, &[]).await;

    let (status, _, listed) = get(&app, Some(&viewer), "/api/v1/problems").await;
    assert_eq!(status, 200, "{backend:?}: {listed}");
    let problem = &listed["data"][0];
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(problem["source"], "crm");
    assert_eq!(problem["outcome"], "invalid");
    assert_eq!(problem["class"], MISSING);
    assert_eq!(problem["state"], "open");
    assert_eq!(problem["open_failures"], 3);
    assert_eq!(problem["example_event_id"], *ids.last().unwrap());
    let id = problem["id"].as_i64().expect("an id");

    let (status, again, _) =
        get(&app, Some(&viewer), "/api/v1/problems?state=all&source=crm").await;
    assert_eq!(status, 200, "{again}");
    let (_, _, again) = get(&app, Some(&viewer), "/api/v1/problems?state=all&source=crm").await;
    assert_eq!(again["data"][0]["id"], id, "the same id for the same cause");

    let path = format!("/api/v1/problems/{id}/state");
    let (status, refused) = post(&app, &viewer, &path, r#"{"state": "acknowledged"}"#).await;
    assert_eq!(status, 403, "{refused}");
    let (status, wrong) = post(&app, &operator, &path, r#"{"state": "fixed"}"#).await;
    assert_eq!(status, 400, "{wrong}");
    assert!(
        wrong["detail"].as_str().unwrap().contains("state"),
        "{wrong}"
    );
    let (status, stale) = post(
        &app,
        &operator,
        &path,
        r#"{"state": "resolved", "expected_count": 2}"#,
    )
    .await;
    assert_eq!(status, 409, "{stale}");
    let (status, answer) = post(
        &app,
        &operator,
        &path,
        r#"{"state": "resolved", "expected_count": 3, "reason": "mapping fixed"}"#,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["changed"], true);
    assert_eq!(answer["covers"], 3);

    let (_, _, open) = get(&app, Some(&viewer), "/api/v1/problems").await;
    assert_eq!(open["data"], serde_json::json!([]), "none open: {open}");
    let (_, _, resolved) = get(&app, Some(&viewer), "/api/v1/problems?state=resolved").await;
    assert_eq!(resolved["data"][0]["id"], id, "{resolved}");
    assert_eq!(resolved["data"][0]["state"], "resolved");
    assert_eq!(resolved["data"][0]["open_failures"], 0);
    let audit = texts(
        &app.db,
        "SELECT actor, action FROM audit_log WHERE action = 'resolve_problem'",
        vec![],
    )
    .await;
    assert_eq!(
        audit,
        vec![vec![
            Some("token fixer".into()),
            Some("resolve_problem".into())
        ]]
    );
}

both_backends!(a_token_of_other_sources_sees_no_problem_of_theirs_and_an_unknown_id_is_404);
async fn a_token_of_other_sources_sees_no_problem_of_theirs_and_an_unknown_id_is_404(
    backend: Backend,
) {
    let app = spawn_app_with(backend, config()).await;
    crm_failures(&app, "b", 1).await;
    let everyone = token(&app, "all", Role::Operator, &[]).await;
    let shop_only = token(&app, "shop-only", Role::Operator, &["shop"]).await;
    let (_, _, listed) = get(&app, Some(&everyone), "/api/v1/problems").await;
    let id = listed["data"][0]["id"].as_i64().expect("an id");

    let (status, _, theirs) = get(&app, Some(&shop_only), "/api/v1/problems?state=all").await;
    let (hidden, hidden_answer) = post(
        &app,
        &shop_only,
        &format!("/api/v1/problems/{id}/state"),
        r#"{"state": "acknowledged"}"#,
    )
    .await;
    let (unknown, _) = post(
        &app,
        &everyone,
        "/api/v1/problems/99999999/state",
        r#"{"state": "acknowledged"}"#,
    )
    .await;
    let (bad_filter, _, filter_answer) =
        get(&app, Some(&everyone), "/api/v1/problems?state=sad").await;

    assert_eq!(status, 200);
    assert_eq!(
        theirs["data"],
        serde_json::json!([]),
        "{backend:?}: {theirs}"
    );
    assert_eq!(hidden, 404, "{hidden_answer}");
    assert_eq!(unknown, 404);
    assert_eq!(bad_filter, 400, "{filter_answer}");
}
