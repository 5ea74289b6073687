//! A destination's dead forward deliveries are problems of the same model: grouped by
//! (destination, answer class), counted in the overview's open problems, resolved by a retry
//! that delivers them, and resolved or ignored by an operator after the same confirmation.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::forwarder::{Receiver, config, wait_for_count};

const DEAD: &str = "SELECT count(*) FROM forward_deliveries WHERE status = 'dead'";

/// A server forwarding `shop` to `orders-app` (the receiver at `url`, one retry), with `n`
/// deliveries sent and dead there; an operator's cookie.
async fn with_dead(
    backend: Backend,
    receiver: &Receiver,
    url: &str,
    n: usize,
) -> (TestApp, String) {
    *receiver.down.lock().unwrap() = true;
    let app = spawn_app_with(backend, config(url, "[1]")).await;
    let cookie = signed_in(&app, "olga", Role::Operator).await;
    for i in 0..n {
        let answer = app
            .send(
                "shop",
                &event(&format!("f{i}"), &format!("order-{i}"), 1, "{}"),
            )
            .await;
        assert_eq!(answer.status, 200, "{answer:?}");
    }
    wait_for_count(&app.db, DEAD, n as i64).await;
    (app, cookie)
}

both_backends!(dead_forward_deliveries_are_problems_until_a_retry_delivers_them);
async fn dead_forward_deliveries_are_problems_until_a_retry_delivers_them(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let (app, cookie) = with_dead(backend, &receiver, &url, 3).await;

    let page = problems(&app, &cookie).await;
    let (_, overview) = call_json(&app, &cookie, "overview", &[]).await;

    assert_eq!(
        open_groups(&page),
        vec![("orders-app".into(), "forward".into(), "5xx".into(), 3)],
        "{backend:?}: one cause, the destination and its answer class"
    );
    assert_eq!(page["open"][0]["example_message"], "answered 500");
    assert_eq!(
        overview["problems"],
        serde_json::json!({"problems": 1, "failures": 3}),
        "{backend:?}: counted in the overview's open problems"
    );

    // The application is back; the operator retries every dead delivery.
    *receiver.down.lock().unwrap() = false;
    let (status, counted) = call_json(
        &app,
        &cookie,
        "retry_dead_forwards",
        &[("name", "orders-app")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{counted}");
    let (status, retried) = call_json(
        &app,
        &cookie,
        "retry_dead_forwards",
        &[("name", "orders-app"), ("confirmation", "retry 3")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        3,
    )
    .await;

    let page = problems(&app, &cookie).await;
    let (_, overview) = call_json(&app, &cookie, "overview", &[]).await;
    assert_eq!(
        open_groups(&page),
        vec![],
        "{backend:?}: resolved by the retry"
    );
    assert_eq!(
        overview["problems"],
        serde_json::json!({"problems": 0, "failures": 0})
    );
}

both_backends!(resolving_a_forwarding_cause_is_confirmed_with_its_count_and_a_4xx_is_its_own_cause);
async fn resolving_a_forwarding_cause_is_confirmed_with_its_count_and_a_4xx_is_its_own_cause(
    backend: Backend,
) {
    // Two answers 404 (one delivery, two attempts), then the application is down (500).
    let (receiver, url) = Receiver::start(vec![(404, None), (404, None)]).await;
    let (app, cookie) = with_dead(backend, &receiver, &url, 1).await;
    for i in 1..3 {
        app.send(
            "shop",
            &event(&format!("f{i}"), &format!("order-{i}"), 1, "{}"),
        )
        .await;
    }
    wait_for_count(&app.db, DEAD, 3).await;
    let args = |state: &'static str| {
        vec![
            ("source", "orders-app"),
            ("outcome", "forward"),
            ("class", "5xx"),
            ("state", state),
        ]
    };

    let page = problems(&app, &cookie).await;
    let (status, asked) = call_json(&app, &cookie, "problem_state", &args("resolved")).await;
    let states_after_asking = count(&app.db, "SELECT count(*) FROM problem_states").await;
    let mut wrong = args("resolved");
    wrong.push(("confirm", "5"));
    let (wrong_count, _) = call_json(&app, &cookie, "problem_state", &wrong).await;
    let (no_reason, answer) = call_json(&app, &cookie, "problem_state", &{
        let mut a = args("ignored");
        a.push(("confirm", "2"));
        a
    })
    .await;
    let mut confirmed = args("resolved");
    confirmed.extend([
        ("confirm", "2"),
        ("reason", "the application was redeployed"),
    ]);
    let (status_confirmed, done) = call_json(&app, &cookie, "problem_state", &confirmed).await;

    assert_eq!(
        open_groups(&page),
        vec![
            ("orders-app".into(), "forward".into(), "5xx".into(), 2),
            ("orders-app".into(), "forward".into(), "4xx".into(), 1),
        ],
        "{backend:?}"
    );
    assert_eq!(status, StatusCode::OK, "{asked}");
    assert_eq!(asked["covers"], 2);
    assert_eq!(
        asked["covers_words"],
        "2 deliveries were never delivered to orders-app"
    );
    assert_eq!(asked["changed"], false);
    assert_eq!(
        states_after_asking, 0,
        "{backend:?}: asking changes nothing"
    );
    assert_eq!(wrong_count, StatusCode::CONFLICT);
    assert_eq!(no_reason, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer.to_string().contains("reason"), "{answer}");
    assert_eq!(status_confirmed, StatusCode::OK, "{done}");
    assert_eq!(done["changed"], true);
    let page = problems(&app, &cookie).await;
    assert_eq!(
        open_groups(&page),
        vec![("orders-app".into(), "forward".into(), "4xx".into(), 1)],
        "{backend:?}: the resolved cause left"
    );
    assert_eq!(
        texts(
            &app.db,
            "SELECT actor, target, detail FROM audit_log WHERE action = 'resolve_problem'",
            vec![],
        )
        .await,
        vec![vec![
            Some("olga".into()),
            Some("orders-app forward 5xx".into()),
            Some(
                "2 deliveries were never delivered to orders-app; reason: the application was redeployed"
                    .into()
            ),
        ]]
    );
}
