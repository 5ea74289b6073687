//! Payload search: `/events?match={…}` finds the deliveries whose body contains the object,
//! with PostgreSQL's `@>` rules on both backends (nested objects by containment, arrays by their
//! elements, numbers by value, `true` not `1`); a bad `match` is a 400 naming it.
#![allow(clippy::unwrap_used)]

use super::*;

/// The event ids `/events` lists for a `match` (newest first), or the refusal.
async fn found(
    app: &TestApp,
    cookie: &str,
    matcher: &str,
) -> Result<Vec<String>, (StatusCode, String)> {
    let (status, body) = call(app, Some(cookie), "events", &[("match", matcher)]).await;
    if status != StatusCode::OK {
        return Err((status, body));
    }
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut ids: Vec<String> = page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["event_id"].as_str().unwrap_or("-").to_string())
        .collect();
    ids.sort();
    Ok(ids)
}

both_backends!(a_body_search_finds_the_deliveries_containing_the_object_as_postgresql_has_it);
async fn a_body_search_finds_the_deliveries_containing_the_object_as_postgresql_has_it(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    // A body that is not JSON is archived (failed) and contains nothing.
    let junk = app.send_bytes("shop", b"not json at all", &[]).await;
    assert_eq!(junk.status, 400);
    for (id, object, snapshot) in [
        (
            "e1",
            "order-1",
            r#"{"customer":{"id":"cus_123","vip":true},"tags":["a","b"],"total":10}"#,
        ),
        (
            "e2",
            "order-2",
            r#"{"customer":{"id":"cus_456","vip":1},"tags":["b"],"total":10.0}"#,
        ),
        (
            "e3",
            "order-3",
            r#"{"customer":{"id":"cus_123"},"tags":[{"k":"x","v":1}],"total":"10"}"#,
        ),
    ] {
        assert_eq!(
            app.send("shop", &event(id, object, 1, snapshot))
                .await
                .outcome(),
            "applied"
        );
    }

    for (matcher, expected) in [
        (
            r#"{"snapshot":{"customer":{"id":"cus_123"}}}"#,
            &["e1", "e3"][..],
        ),
        (r#"{"snapshot":{"customer":{"vip":true}}}"#, &["e1"][..]),
        (r#"{"snapshot":{"customer":{"vip":1}}}"#, &["e2"][..]),
        (r#"{"snapshot":{"tags":["b"]}}"#, &["e1", "e2"][..]),
        (r#"{"snapshot":{"tags":["b","a"]}}"#, &["e1"][..]),
        (r#"{"snapshot":{"tags":[{"k":"x"}]}}"#, &["e3"][..]),
        (r#"{"snapshot":{"total":10}}"#, &["e1", "e2"][..]),
        (r#"{"snapshot":{"total":10.00}}"#, &["e1", "e2"][..]),
        (r#"{"snapshot":{"total":"10"}}"#, &["e3"][..]),
        (r#"{"event_id":"e2","object_id":"order-2"}"#, &["e2"][..]),
        (r#"{"snapshot":{"customer":"cus_123"}}"#, &[][..]),
        (r#"{"nowhere":null}"#, &[][..]),
        ("{}", &["e1", "e2", "e3"][..]),
    ] {
        assert_eq!(
            found(&app, &cookie, matcher).await.unwrap(),
            expected,
            "{backend:?}: {matcher}"
        );
    }

    for (matcher, named) in [
        ("{\"snapshot\":", "match: not JSON"),
        ("[1]", "match: must be a JSON object"),
    ] {
        let (status, body) = found(&app, &cookie, matcher).await.unwrap_err();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{matcher}");
        assert!(body.contains(named), "{matcher}: {body}");
    }
}

both_backends!(the_event_page_offers_to_find_the_deliveries_with_a_value_of_its_body);
async fn the_event_page_offers_to_find_the_deliveries_with_a_value_of_its_body(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    app.send(
        "shop",
        &event("e1", "order-1", 1, r#"{"customer":"cus_9"}"#),
    )
    .await;
    app.send(
        "shop",
        &event("e2", "order-2", 1, r#"{"customer":"cus_9"}"#),
    )
    .await;
    app.send(
        "shop",
        &event("e3", "order-3", 1, r#"{"customer":"cus_1"}"#),
    )
    .await;
    let id = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'e1'",
        vec![],
    )
    .await
    .unwrap()
    .to_string();

    let (status, body) = call(&app, Some(&cookie), "event", &[("id", &id)]).await;

    assert_eq!(status, StatusCode::OK, "{body}");
    let detail: serde_json::Value = serde_json::from_str(&body).unwrap();
    let field = detail["searchable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f[0] == "/snapshot/customer")
        .cloned()
        .unwrap_or_else(|| panic!("{detail}"));
    let matcher = field[1].as_str().unwrap();
    assert_eq!(matcher, r#"{"snapshot":{"customer":"cus_9"}}"#);
    assert_eq!(found(&app, &cookie, matcher).await.unwrap(), ["e1", "e2"]);
    let (status, html) = page(&app, Some(&cookie), &format!("/events/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("data-testid=\"find-by-field\""), "{html}");
}
