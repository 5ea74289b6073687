//! Ids: exact, by prefix and by suffix, case and a leading `#` aside (kept in `q`); wildcards are
//! literal.

use super::*;

both_backends!(object_and_event_ids_are_found_exactly_by_prefix_and_by_suffix_in_any_case);
async fn object_and_event_ids_are_found_exactly_by_prefix_and_by_suffix_in_any_case(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    applied(&app, "shop", "x1", "ord_10231", 1, r#"{"status":"new"}"#).await;
    applied(&app, "shop", "x2", "ord_10231", 2, r#"{"status":"paid"}"#).await;
    applied(&app, "shop", "x3", "ord_10230", 1, r#"{"status":"new"}"#).await;
    applied(
        &app,
        "shop",
        "EVT_aaa111",
        "order-99",
        1,
        r#"{"status":"new"}"#,
    )
    .await;
    applied(&app, "sw", "y1", "ORD_10231", 1, r#"{"status":"new"}"#).await;
    assert_eq!(
        gh(&app, "hook-5551", "push", None).await.outcome(),
        "accepted"
    );

    // A suffix: both spellings of the order, each source's object once, not its neighbour.
    let found = find(&app, &cookie, "10231").await.unwrap();
    assert_eq!(
        objects(&found),
        ["shop/ord_10231", "sw/ORD_10231"],
        "{backend:?}: {found}"
    );
    for key in ["shop/ord_10231", "sw/ORD_10231"] {
        assert_eq!(matched(object(&found, key)), ["ObjectId Suffix"], "{key}");
    }
    assert_eq!(found["events"], serde_json::json!([]));

    // A prefix.
    let found = find(&app, &cookie, "ord_1023").await.unwrap();
    assert_eq!(
        objects(&found),
        ["shop/ord_10230", "shop/ord_10231", "sw/ORD_10231"],
        "{backend:?}: {found}"
    );
    assert!(matched(object(&found, "shop/ord_10230")).contains(&"ObjectId Prefix".to_string()));

    // Whole, with a `#` and in the other case: exact for both, and first.
    for typed in ["#ORD_10231", "  ord_10231 ", "Ord_10231"] {
        let found = find(&app, &cookie, typed).await.unwrap();
        // What was typed, its `#` kept (a body value may hold it); ids are searched without it.
        assert_eq!(found["q"], typed.trim());
        assert_eq!(
            objects(&found),
            ["shop/ord_10231", "sw/ORD_10231"],
            "{typed}"
        );
        for key in ["shop/ord_10231", "sw/ORD_10231"] {
            assert_eq!(
                matched(object(&found, key))[0],
                "ObjectId Exact",
                "{typed} {key}"
            );
        }
    }

    // Event ids find their object, whatever the case.
    for (typed, how) in [
        ("evt_aaa111", "EventId Exact"),
        ("EVT_AAA", "EventId Prefix"),
        ("AAA111", "EventId Suffix"),
    ] {
        let found = find(&app, &cookie, typed).await.unwrap();
        assert_eq!(
            objects(&found),
            ["shop/order-99"],
            "{backend:?} {typed}: {found}"
        );
        assert_eq!(matched(object(&found, "shop/order-99")), [how], "{typed}");
    }

    // An event without an object is listed as an event, linked to its delivery.
    let found = find(&app, &cookie, "5551").await.unwrap();
    assert!(objects(&found).is_empty(), "{found}");
    let events = found["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{found}");
    assert_eq!(events[0]["source"], "gh");
    assert_eq!(events[0]["event_id"], "hook-5551");
    assert_eq!(matched(&events[0]), ["EventId Suffix"]);
    let delivery = scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = 'hook-5551'",
        vec![],
    )
    .await
    .unwrap();
    assert_eq!(events[0]["newest"]["id"], delivery);
    assert_eq!(events[0]["newest"]["event_type"], "push");
}

both_backends!(like_wildcards_in_what_was_typed_are_literal);
async fn like_wildcards_in_what_was_typed_are_literal(backend: Backend) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    for (i, object_id) in ["ord_1", "ordx1", "50%off", "500off", r"a\\b", "axb"]
        .iter()
        .enumerate()
    {
        applied(&app, "shop", &format!("w{i}"), object_id, 1, "{}").await;
    }
    for (typed, expected) in [
        ("d_1", &["shop/ord_1"][..]),
        ("%", &[][..]),
        ("_", &[][..]),
        ("50%", &["shop/50%off"][..]),
        (r"a\", &[r"shop/a\b"][..]),
        (r"\b", &[r"shop/a\b"][..]),
    ] {
        let found = find(&app, &cookie, typed).await.unwrap();
        assert_eq!(objects(&found), expected, "{backend:?} {typed:?}: {found}");
    }
}
