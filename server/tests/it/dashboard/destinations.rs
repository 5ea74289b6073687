//! The destinations pages against a real receiver on loopback: each destination's backlog, dead
//! count, success rate and last error; a dead delivery retried by an operator and refused for a
//! viewer; every dead delivery of a filter retried after a count and the typed confirmation;
//! pause and resume; the event page's forward deliveries and the overview's warning. Every
//! change is audited.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::forwarder::{Receiver, config, wait_for_count};
use serde_json::Value as Json;
use std::time::Duration;

fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A server forwarding `shop` to `orders-app` (the receiver at `url`), with an operator `olga`
/// and a viewer `vera` signed in: (app, operator's cookie, viewer's cookie).
async fn forwarding_app(backend: Backend, url: &str, schedule: &str) -> (TestApp, String, String) {
    let app = spawn_app_with(backend, config(url, schedule)).await;
    with_user(&app, "olga", Role::Operator).await;
    with_user(&app, "vera", Role::Viewer).await;
    let operator = sign_in(&app, "olga", PASSWORD).await.expect("operator");
    let viewer = sign_in(&app, "vera", PASSWORD).await.expect("viewer");
    (app, operator, viewer)
}

async fn status_of(app: &TestApp, id: i64) -> String {
    texts(
        &app.db,
        "SELECT status FROM forward_deliveries WHERE id = $1",
        vec![id.into()],
    )
    .await[0][0]
        .clone()
        .unwrap()
}

async fn audited(app: &TestApp, action: &str) -> Vec<Vec<Option<String>>> {
    texts(
        &app.db,
        "SELECT actor, target, outcome, detail FROM audit_log WHERE action = $1 ORDER BY id",
        vec![action.into()],
    )
    .await
}

both_backends!(a_dead_delivery_is_retried_by_an_operator_and_refused_for_a_viewer);
async fn a_dead_delivery_is_retried_by_an_operator_and_refused_for_a_viewer(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.down.lock().unwrap() = true;
    let (app, operator, viewer) = forwarding_app(backend, &url, "[1]").await;
    app.send("shop", &event("e1", "order-1", 1, r#"{"a":1}"#))
        .await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'dead'",
        1,
    )
    .await;
    let id = scalar(&app.db, "SELECT id FROM forward_deliveries", vec![])
        .await
        .unwrap();

    // Both roles read the pages: the dead delivery, its two failed attempts, the last error.
    let (status, list) = call(&app, Some(&viewer), "destinations", &[]).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let list = json(&list);
    let d = &list[0][0];
    assert_eq!(d["name"], "orders-app");
    assert_eq!(d["url"], url.as_str());
    assert_eq!(
        (d["pending"].as_i64(), d["dead"].as_i64()),
        (Some(0), Some(1))
    );
    assert_eq!(d["attempts_last_hour"], 2);
    assert_eq!(d["delivered_last_hour"], 0);
    assert_eq!(d["last_error"], "answered 500");
    assert_eq!(d["last_status_code"], 500);
    assert_eq!(list[1], false, "a viewer cannot act");
    let (status, page) = call(
        &app,
        Some(&viewer),
        "destination",
        &[("name", "orders-app"), ("status", "dead")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let page = json(&page);
    let row = &page["rows"][0];
    assert_eq!(row["id"], id);
    assert_eq!(row["event_id"], "e1");
    let log: Vec<(i64, i64)> = row["attempt_log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["attempt"].as_i64().unwrap(),
                a["status_code"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(log, [(1, 500), (2, 500)]);
    let (_, overview) = call(&app, Some(&viewer), "overview", &[]).await;
    let trouble = &json(&overview)["destinations_in_trouble"];
    assert_eq!(trouble[0]["name"], "orders-app", "{trouble}");
    assert_eq!(trouble[0]["dead"], 1);

    // A viewer may not retry it.
    let id_text = id.to_string();
    let args = [("name", "orders-app"), ("id", id_text.as_str())];
    let (status, _) = call(&app, Some(&viewer), "retry_forward", &args).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(status_of(&app, id).await, "dead");
    assert!(audited(&app, "retry_forward").await.is_empty());

    // An operator does: the schedule starts again, and the application gets the same webhook-id.
    *receiver.down.lock().unwrap() = false;
    let (status, body) = call(&app, Some(&operator), "retry_forward", &args).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;
    let got = receiver.got();
    assert_eq!(got.len(), 3);
    let ids: Vec<&str> = got
        .iter()
        .map(|r| crate::forwarder::header(r, "webhook-id"))
        .collect();
    let expected = format!("fwd_{id}");
    assert_eq!(ids, [expected.as_str(); 3]);
    assert_eq!(
        texts(
            &app.db,
            "SELECT CAST(attempts AS TEXT), CAST(schedule_base AS TEXT), CAST(last_status_code AS TEXT)
             FROM forward_deliveries",
            vec![]
        )
        .await,
        [vec![Some("3".into()), Some("2".into()), Some("200".into())]]
    );
    assert_eq!(
        audited(&app, "retry_forward").await,
        [vec![
            Some("olga".into()),
            Some(format!("orders-app/{id}")),
            Some("done".into()),
            None
        ]]
    );
    // Only a dead delivery is retried, of a destination that exists.
    let (status, body) = call(&app, Some(&operator), "retry_forward", &args).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("is delivered, not dead"), "{body}");
    let (status, _) = call(
        &app,
        Some(&operator),
        "retry_forward",
        &[("name", "nowhere"), ("id", id_text.as_str())],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(audited(&app, "retry_forward").await.len(), 1);
}

both_backends!(every_dead_delivery_of_a_filter_is_retried_after_a_count_and_the_typed_confirmation);
async fn every_dead_delivery_of_a_filter_is_retried_after_a_count_and_the_typed_confirmation(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.down.lock().unwrap() = true;
    let (app, operator, viewer) = forwarding_app(backend, &url, "[1]").await;
    for n in 1..=3 {
        app.send(
            "shop",
            &event(&format!("e{n}"), &format!("order-{n}"), 1, "{}"),
        )
        .await;
    }
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'dead'",
        3,
    )
    .await;
    let retry = |filter: &'static [(&'static str, &'static str)],
                 confirmation: Option<&'static str>| {
        let mut args = vec![("name", "orders-app")];
        args.extend_from_slice(filter);
        if let Some(c) = confirmation {
            args.push(("confirmation", c));
        }
        args
    };

    // The count: the filter narrows it, and counting changes nothing.
    let (status, body) = call(
        &app,
        Some(&operator),
        "retry_dead_forwards",
        &retry(&[("q", "order-2")], None),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let counted = json(&body);
    assert_eq!(counted["matched"], 1);
    assert_eq!(counted["retried"], false);
    assert_eq!(
        counted["scope"],
        "orders-app, event or object id order-2, status dead"
    );
    let (_, body) = call(
        &app,
        Some(&operator),
        "retry_dead_forwards",
        &retry(&[], None),
    )
    .await;
    assert_eq!(json(&body)["confirmation"], "retry 3");
    // A viewer cannot, and a wrong count retries nothing.
    let (status, _) = call(
        &app,
        Some(&viewer),
        "retry_dead_forwards",
        &retry(&[], Some("retry 3")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call(
        &app,
        Some(&operator),
        "retry_dead_forwards",
        &retry(&[], Some("retry 2")),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("type \\\"retry 3\\\""), "{body}");
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE status = 'dead'"
        )
        .await,
        3
    );
    assert!(audited(&app, "bulk_retry_forward").await.is_empty());
    // A bad status filter is a 400 naming it.
    let (status, body) = call(
        &app,
        Some(&viewer),
        "destination",
        &[("name", "orders-app"), ("status", "lost")],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body.contains("status: \\\"lost\\\" is not one of pending, delivered, superseded, dead"),
        "{body}"
    );

    // Confirmed: all three are due again and reach the application.
    *receiver.down.lock().unwrap() = false;
    let (status, body) = call(
        &app,
        Some(&operator),
        "retry_dead_forwards",
        &retry(&[], Some("retry 3")),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(json(&body)["retried"], true);
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        3,
    )
    .await;
    assert_eq!(
        audited(&app, "bulk_retry_forward").await,
        [vec![
            Some("olga".into()),
            Some("orders-app".into()),
            Some("done".into()),
            Some("3 dead deliveries of orders-app, status dead".into())
        ]]
    );
    // Each was sent twice before it died and once after: nine requests, three webhook-ids.
    let got = receiver.got();
    assert_eq!(got.len(), 9);
    let mut ids: Vec<&str> = got
        .iter()
        .map(|r| crate::forwarder::header(r, "webhook-id"))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3);
}

both_backends!(a_paused_destination_keeps_its_queue_and_resumes_where_it_stopped);
async fn a_paused_destination_keeps_its_queue_and_resumes_where_it_stopped(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let (app, operator, viewer) = forwarding_app(backend, &url, "[1]").await;
    let pause = [("name", "orders-app"), ("paused", "true")];
    let resume = [("name", "orders-app"), ("paused", "false")];

    let (status, _) = call(&app, Some(&viewer), "pause_destination", &pause).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call(&app, Some(&operator), "pause_destination", &pause).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, "true");
    for n in 1..=2 {
        let answer = app
            .send(
                "shop",
                &event(&format!("e{n}"), &format!("order-{n}"), 1, "{}"),
            )
            .await;
        assert_eq!(answer.outcome(), "applied");
    }

    // Paused: its rows wait, and no claim takes them (the forwarder claims the same way).
    let probe = app::forward::claim_due(
        &app.db,
        &["orders-app"],
        "probe",
        Duration::from_secs(60),
        10,
    )
    .await
    .unwrap();
    assert!(
        probe.is_empty(),
        "a paused destination's rows are not claimed"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE status = 'pending'"
        )
        .await,
        2
    );
    let (_, list) = call(&app, Some(&viewer), "destinations", &[]).await;
    let d = &json(&list)[0][0];
    assert_eq!(d["paused_by"], "olga");
    assert_eq!(d["pending"], 2);
    assert!(d["oldest_pending_secs"].as_i64().is_some());
    assert!(receiver.got().is_empty());

    let (status, body) = call(&app, Some(&operator), "pause_destination", &resume).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        2,
    )
    .await;
    assert_eq!(receiver.got().len(), 2);
    assert_eq!(
        texts(
            &app.db,
            "SELECT action, actor, target, outcome FROM audit_log
             WHERE action IN ('pause_destination', 'resume_destination') ORDER BY id",
            vec![]
        )
        .await,
        [
            vec![
                Some("pause_destination".into()),
                Some("olga".into()),
                Some("orders-app".into()),
                Some("done".into())
            ],
            vec![
                Some("resume_destination".into()),
                Some("olga".into()),
                Some("orders-app".into()),
                Some("done".into())
            ],
        ]
    );
    // Resuming again changes nothing; an unknown destination is a 404.
    let (_, body) = call(&app, Some(&operator), "pause_destination", &resume).await;
    assert_eq!(body, "false");
    let (status, _) = call(
        &app,
        Some(&operator),
        "pause_destination",
        &[("name", "nowhere"), ("paused", "true")],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

both_backends!(the_event_page_lists_the_forward_deliveries_a_delivery_produced);
async fn the_event_page_lists_the_forward_deliveries_a_delivery_produced(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let (app, _operator, viewer) = forwarding_app(backend, &url, "[1]").await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;
    let archive = scalar(&app.db, "SELECT id FROM webhook_events", vec![])
        .await
        .unwrap()
        .to_string();

    let (status, body) = call(&app, Some(&viewer), "event", &[("id", &archive)]).await;

    assert_eq!(status, StatusCode::OK, "{body}");
    let forwarded = &json(&body)["forwarded"];
    assert_eq!(forwarded.as_array().map(Vec::len), Some(1), "{forwarded}");
    assert_eq!(forwarded[0]["destination"], "orders-app");
    assert_eq!(forwarded[0]["status"], "delivered");
    assert_eq!(forwarded[0]["attempt_log"][0]["status_code"], 200);
    assert_eq!(receiver.got().len(), 1);
    // The pages render it: the event page and the destination's page.
    let (status, html) = page(&app, Some(&viewer), &format!("/events/{archive}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("data-testid=\"forwarded\""), "{html}");
    let (status, html) = page(
        &app,
        Some(&viewer),
        "/destinations/orders-app?status=delivered",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("data-testid=\"forward-row\""));
    let (status, _) = page(&app, Some(&viewer), "/destinations/nowhere").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

both_backends!(
    a_refused_delivery_is_dead_sooner_shows_the_answer_and_a_bulk_retry_counts_by_answer
);
async fn a_refused_delivery_is_dead_sooner_shows_the_answer_and_a_bulk_retry_counts_by_answer(
    backend: Backend,
) {
    // The application refuses the first delivery (422), then fails the second (500).
    let (receiver, url) = Receiver::start(vec![(422, None); 3]).await;
    let (app, operator, _viewer) = forwarding_app(backend, &url, "[1, 1, 1, 1, 1]").await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'dead'",
        1,
    )
    .await;
    // Three attempts, not six: a refusal is dead at its third.
    assert_eq!(receiver.got().len(), 3);
    assert_eq!(
        texts(
            &app.db,
            "SELECT CAST(attempts AS TEXT), CAST(last_status_code AS TEXT) FROM forward_deliveries",
            vec![]
        )
        .await,
        [vec![Some("3".into()), Some("422".into())]]
    );
    *receiver.down.lock().unwrap() = true;
    app.send("shop", &event("e2", "order-2", 1, "{}")).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'dead'",
        2,
    )
    .await;
    // A failure runs the whole schedule: six attempts.
    assert_eq!(receiver.got().len(), 3 + 6);

    // The dead rows show what the application answered, as text.
    let (status, html) = page(
        &app,
        Some(&operator),
        "/destinations/orders-app?status=dead",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        html.matches("data-testid=\"last-answer\"").count(),
        2,
        "{html}"
    );
    assert!(
        html.contains("the application&#x27;s answer") || html.contains("the application's answer"),
        "{html}"
    );

    // The bulk retry's count breaks the selection down by answer, refusals named.
    let (status, body) = call(
        &app,
        Some(&operator),
        "retry_dead_forwards",
        &[("name", "orders-app")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let counted = json(&body);
    assert_eq!(counted["matched"], 2);
    assert_eq!(counted["retried"], false);
    let mut by_answer: Vec<(String, i64)> = counted["by_answer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["class"].as_str().unwrap().to_string(),
                a["count"].as_i64().unwrap(),
            )
        })
        .collect();
    by_answer.sort();
    assert_eq!(
        by_answer,
        [("Failed".to_string(), 1), ("Refused".to_string(), 1)]
    );
    // Counting changed nothing.
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE status = 'dead'"
        )
        .await,
        2
    );
}
