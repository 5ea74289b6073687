//! Values inside bodies, results grouped by object, and the wording of an empty result.

use super::*;

/// The archive id of the newest delivery about an object.
async fn newest_id(app: &TestApp, source: &str, object_id: &str) -> i64 {
    scalar(
        &app.db,
        "SELECT max(id) FROM webhook_events WHERE source = $1 AND object_id = $2",
        vec![source.into(), object_id.into()],
    )
    .await
    .unwrap()
}

both_backends!(a_value_in_a_body_finds_its_object_with_its_current_revision_and_newest_delivery);
async fn a_value_in_a_body_finds_its_object_with_its_current_revision_and_newest_delivery(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    let ana = r#"{"customer":{"email":"ana@example.com"},"order_number":777123}"#;
    applied(&app, "shop", "b1", "ord_555", 1, ana).await;
    applied(&app, "shop", "b2", "ord_555", 2, ana).await;
    // A retry of the newest event: a duplicate, the object's newest delivery.
    let retry = app.send("shop", &event("b2", "ord_555", 2, ana)).await;
    assert_eq!(retry.outcome(), "duplicate");
    applied(
        &app,
        "shop",
        "b3",
        "ord_556",
        1,
        r#"{"customer":{"email":"bob@example.com"},"cc":["dan@example.com"],"order_number":"777124"}"#,
    )
    .await;
    // Never accepted: no revision. Archived as failed, under its object id.
    let failed = app
        .send(
            "shop",
            r#"{"event_id":"b4","object_id":"ord_557","snapshot":{"email":"carol@example.com"}}"#,
        )
        .await;
    assert_eq!(failed.status, 422, "{failed:?}");

    let found = find(&app, &cookie, "Ana@Example.com").await.unwrap();
    assert_eq!(objects(&found), ["shop/ord_555"], "{backend:?}: {found}");
    let order = object(&found, "shop/ord_555");
    assert_eq!(matched(order), ["Body Value"]);
    assert_eq!(order["current_revision"], 2);
    assert_eq!(
        order["newest"]["id"],
        newest_id(&app, "shop", "ord_555").await
    );
    assert_eq!(order["newest"]["outcome"], "duplicate");

    for (typed, key) in [
        ("777123", "shop/ord_555"),
        ("777124", "shop/ord_556"),
        ("dan@example.com", "shop/ord_556"),
    ] {
        let found = find(&app, &cookie, typed).await.unwrap();
        assert_eq!(objects(&found), [key], "{backend:?} {typed}: {found}");
        assert_eq!(matched(object(&found, key)), ["Body Value"], "{typed}");
    }

    let found = find(&app, &cookie, "carol@example.com").await.unwrap();
    assert_eq!(objects(&found), ["shop/ord_557"], "{found}");
    let never = object(&found, "shop/ord_557");
    assert_eq!(never["current_revision"], Json::Null);
    assert_eq!(never["accepted"], 0);
    assert_eq!(never["newest"]["status"], "failed");

    // A part of a text value, said as such.
    let found = find(&app, &cookie, "example.com").await.unwrap();
    assert_eq!(
        objects(&found),
        ["shop/ord_557", "shop/ord_556", "shop/ord_555"],
        "{found}"
    );
    assert_eq!(matched(object(&found, "shop/ord_555")), ["Body Part"]);
}

both_backends!(what_customers_quote_is_found_with_its_hash_inside_other_sources_and_in_any_case);
async fn what_customers_quote_is_found_with_its_hash_inside_other_sources_and_in_any_case(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    // A Shopify order: its name is "#1041", its ids say nothing of it. The city is sent escaped.
    applied(
        &app,
        "shop",
        "s1",
        "gid_820982911946154508",
        1,
        r##"{"name":"#1041","customer":{"name":"Anna Müller","city":"M\u00fcnchen"}}"##,
    )
    .await;
    applied(
        &app,
        "shop",
        "s2",
        "gid_820982911946154999",
        1,
        r##"{"name":"#10231","order_number":10231}"##,
    )
    .await;
    // Stripe payments of order 10231, another source: its number in the metadata, or quoted
    // inside a text.
    applied(
        &app,
        "sw",
        "p1",
        "pi_3Nq",
        1,
        r##"{"metadata":{"order_id":"10231"}}"##,
    )
    .await;
    applied(
        &app,
        "sw",
        "p2",
        "pi_3Nr",
        1,
        r##"{"description":"Shopify order #10231 (2 items)"}"##,
    )
    .await;
    applied(
        &app,
        "sw",
        "p3",
        "pi_3Ns",
        1,
        r##"{"description":"order 110231"}"##,
    )
    .await;

    let found = find(&app, &cookie, "#1041").await.unwrap();
    assert_eq!(found["q"], "#1041");
    assert_eq!(
        objects(&found),
        ["shop/gid_820982911946154508"],
        "{backend:?}: {found}"
    );
    assert_eq!(
        matched(object(&found, "shop/gid_820982911946154508")),
        ["Body Value"]
    );

    let found = find(&app, &cookie, "10231").await.unwrap();
    let mut keys = objects(&found);
    keys.sort();
    assert_eq!(
        keys,
        [
            "shop/gid_820982911946154999",
            "sw/pi_3Nq",
            "sw/pi_3Nr",
            "sw/pi_3Ns"
        ],
        "{backend:?}: {found}"
    );
    assert_eq!(matched(object(&found, "sw/pi_3Nq")), ["Body Value"]);
    assert_eq!(matched(object(&found, "sw/pi_3Nr")), ["Body Part"]);
    // With its `#`: the order by its name, the payments by the number and by the quote.
    let found = find(&app, &cookie, "#10231").await.unwrap();
    let mut keys = objects(&found);
    keys.sort();
    assert_eq!(
        keys,
        ["shop/gid_820982911946154999", "sw/pi_3Nq", "sw/pi_3Nr"],
        "{backend:?}: {found}"
    );

    for typed in ["münchen", "MÜNCHEN", "müll", "MÜLLER", "anna m"] {
        let found = find(&app, &cookie, typed).await.unwrap();
        assert_eq!(
            objects(&found),
            ["shop/gid_820982911946154508"],
            "{backend:?} {typed}: {found}"
        );
        assert_eq!(
            matched(object(&found, "shop/gid_820982911946154508")),
            ["Body Part"]
        );
    }
    // Too short to look inside texts: whole values only.
    let found = find(&app, &cookie, "mü").await.unwrap();
    assert!(objects(&found).is_empty(), "{found}");
}

both_backends!(an_empty_result_says_exactly_what_was_searched);
async fn an_empty_result_says_exactly_what_was_searched(backend: Backend) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    applied(&app, "shop", "c1", "ord_1", 1, r##"{"status":"new"}"##).await;

    let (status, html) = page(&app, &cookie, "/search?q=%2310231").await;

    assert_eq!(status, StatusCode::OK, "{html}");
    let text = html.replace("&quot;", "\"").replace("&#34;", "\"");
    let searched = match backend {
        Backend::Postgres => {
            "the ids of every accepted event, the exact ids of every archived delivery and every archived body"
        }
        Backend::Sqlite => "the ids and body of every archived delivery",
    };
    let expected = format!(
        "No event id or object id equal to, starting with or ending with \"10231\", and no delivery body holding \"#10231\" or \"10231\" (searched {searched})."
    );
    assert!(text.contains(&expected), "{backend:?}: {text}");
    assert!(text.contains("data-testid=\"search-empty\""));
    assert!(!text.contains("hookbox send"), "{text}");

    // Nothing typed: the page says what to type, and nothing is searched.
    assert_eq!(find(&app, &cookie, "  # ").await.unwrap(), Json::Null);
    let (status, html) = page(&app, &cookie, "/search?q=").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("data-testid=\"search-prompt\""), "{html}");
}
