//! Issue 36's pages: the object page shows where its revisions were forwarded and with what
//! result; the event page retries and re-sends forward deliveries (the destination page's server
//! functions, operators only) and carries its body once; the events list's source filter offers
//! the configured sources; a `reused_revision` delivery links the event holding its revision.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::forwarder::{Receiver, config, wait_for_count};
use serde_json::Value as Json;

fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

both_backends!(the_object_page_shows_where_each_revision_went_and_the_event_page_acts_on_it);
async fn the_object_page_shows_where_each_revision_went_and_the_event_page_acts_on_it(
    backend: Backend,
) {
    // Revision 1 is refused for good (dead), revision 2 is delivered.
    let (receiver, url) = Receiver::start(vec![(400, None); 3]).await;
    let app = spawn_app_with(backend, config(&url, "[1, 1, 1]")).await;
    with_user(&app, "olga", Role::Operator).await;
    with_user(&app, "vera", Role::Viewer).await;
    let operator = sign_in(&app, "olga", PASSWORD).await.unwrap();
    let viewer = sign_in(&app, "vera", PASSWORD).await.unwrap();
    app.send("shop", &event("e1", "order-1", 1, r#"{"a":1}"#))
        .await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'dead'",
        1,
    )
    .await;
    app.send("shop", &event("e2", "order-1", 2, r#"{"a":2}"#))
        .await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;
    assert_eq!(receiver.got().len(), 4);

    // The object's forward deliveries, greatest revision first, each with its result.
    let (status, body) = call(
        &app,
        Some(&viewer),
        "object_forwarded",
        &[("source", "shop"), ("object_id", "order-1")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let answer = json(&body);
    let rows: Vec<(i64, String, String)> = answer[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["revision"].as_i64().unwrap(),
                r["destination"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (2, "orders-app".into(), "delivered".into()),
            (1, "orders-app".into(), "dead".into())
        ]
    );
    assert_eq!(answer[1], false, "nothing left out");
    let (status, html) = page(&app, Some(&viewer), "/objects/shop/order-1").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("data-testid=\"object-forwarded\""), "{html}");
    assert_eq!(html.matches("data-testid=\"forward-row\"").count(), 2);

    // The event page of revision 1: an operator gets Retry, a viewer does not.
    let first = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'e1'",
        vec![],
    )
    .await
    .unwrap();
    let second = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'e2'",
        vec![],
    )
    .await
    .unwrap();
    let (_, html) = page(&app, Some(&operator), &format!("/events/{first}")).await;
    assert!(html.contains("data-testid=\"retry\""), "{html}");
    let (_, html) = page(&app, Some(&viewer), &format!("/events/{first}")).await;
    assert!(!html.contains("data-testid=\"retry\""), "{html}");
    // And Re-send on the delivered one, for an operator only.
    let (_, html) = page(&app, Some(&operator), &format!("/events/{second}")).await;
    assert!(html.contains("data-testid=\"resend\""), "{html}");
    let (_, html) = page(&app, Some(&viewer), &format!("/events/{second}")).await;
    assert!(!html.contains("data-testid=\"resend\""), "{html}");
}

both_backends!(the_event_page_carries_its_body_once_and_fetches_the_rest_when_asked);
async fn the_event_page_carries_its_body_once_and_fetches_the_rest_when_asked(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let viewer = sign_in(&app, "vera", PASSWORD).await.unwrap();
    // 3,000 lines: the page shows the first 2,000; the marker is past the cut (inside an
    // array, which the page's searchable fields leave out).
    let items: Vec<String> = (0..3000).map(|i| format!("\"item-{i}\"")).collect();
    let snapshot = format!(r#"{{"items":[{},"PAST-THE-CUT"]}}"#, items.join(","));
    let body = event("big-1", "order-9", 1, &snapshot);
    assert!(app.send("shop", &body).await.status < 300);
    let id = scalar(&app.db, "SELECT id FROM webhook_events", vec![])
        .await
        .unwrap()
        .to_string();

    let (status, html) = page(&app, Some(&viewer), &format!("/events/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("data-testid=\"body-cut\""), "the body is cut");
    // Neither the raw body nor the curl command rides along: the rest is not on the page.
    assert_eq!(html.matches("PAST-THE-CUT").count(), 0);
    assert!(!html.contains("data-testid=\"curl\""));
    // Shown once, and once in the page's data for hydration (it was four times: the raw body
    // and the curl command rode along).
    let shown = html.matches("item-1500").count();
    assert!((1..=2).contains(&shown), "{shown}");

    // The copy buttons fetch the bytes and the command when used.
    let (status, source) = call(&app, Some(&viewer), "event_source", &[("id", &id)]).await;
    assert_eq!(status, StatusCode::OK, "{source}");
    let source = json(&source);
    assert_eq!(source["raw_body"], body.as_str());
    assert!(
        source["curl"].as_str().unwrap().contains("PAST-THE-CUT"),
        "{source}"
    );
    // The API's read of the event is unchanged: it still carries both.
    let (_, detail) = call(&app, Some(&viewer), "event", &[("id", &id)]).await;
    assert_eq!(json(&detail)["raw_body"], body.as_str());
}

both_backends!(the_source_filter_offers_the_sources_and_a_conflict_links_its_holder);
async fn the_source_filter_offers_the_sources_and_a_conflict_links_its_holder(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let viewer = sign_in(&app, "vera", PASSWORD).await.unwrap();
    assert_eq!(
        app.send("shop", &event("held", "order-1", 1, "{}"))
            .await
            .outcome(),
        "applied"
    );
    let refused = app
        .send("shop", &event("other", "order-1", 1, r#"{"b":1}"#))
        .await;
    assert_eq!(refused.status, 409, "{refused:?}");
    let holder = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'held'",
        vec![],
    )
    .await
    .unwrap();
    let conflict = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'other'",
        vec![],
    )
    .await
    .unwrap();

    let (_, html) = page(&app, Some(&viewer), &format!("/events/{conflict}")).await;
    let link = tag_with(&html, "a", &["data-testid=\"revision-holder\""])
        .unwrap_or_else(|| panic!("{html}"));
    assert!(
        link.contains(&format!("href=\"/events/{holder}\"")),
        "{link}"
    );

    // The source filter: a select of the configured sources, the URL's one chosen.
    let (status, html) = page(&app, Some(&viewer), "/events?source=sw").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        tag_with(&html, "select", &["name=\"source\""]).is_some(),
        "{html}"
    );
    for name in ["shop", "sw", "gh", "limited"] {
        assert!(
            html.contains(&format!("<option value=\"{name}\"")),
            "{name}: {html}"
        );
    }
    assert!(
        tag_with(&html, "option", &["value=\"sw\"", "selected"]).is_some(),
        "{html}"
    );
}
