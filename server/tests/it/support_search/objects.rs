//! The object page tells the truth for every mode: a dedup source's object lists its accepted
//! deliveries; "never applied" only for a snapshot source's object with no applied revision.

use super::*;

both_backends!(a_dedup_objects_page_lists_its_accepted_deliveries_and_never_says_never_applied);
async fn a_dedup_objects_page_lists_its_accepted_deliveries_and_never_says_never_applied(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    for (delivery, kind) in [("d-1", "issues"), ("d-2", "push"), ("d-3", "pull_request")] {
        assert_eq!(
            gh(&app, delivery, kind, Some("r-42")).await.outcome(),
            "accepted"
        );
    }
    // A retry: a duplicate, not an accepted delivery.
    assert_eq!(
        gh(&app, "d-2", "push", Some("r-42")).await.outcome(),
        "duplicate"
    );

    let (status, body) = call(
        &app,
        &cookie,
        "object_deliveries",
        &[("source", "gh"), ("object_id", "r-42")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let deliveries: Json = serde_json::from_str(&body).unwrap();
    assert_eq!(deliveries["dedup"], true);
    assert_eq!(deliveries["accepted"], 3);
    let rows: Vec<(String, String, String)> = deliveries["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["event_id"].as_str().unwrap().to_string(),
                r["event_type"].as_str().unwrap().to_string(),
                r["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> =
        [("d-3", "pull_request"), ("d-2", "push"), ("d-1", "issues")]
            .iter()
            .map(|(e, t)| (e.to_string(), t.to_string(), "accepted".to_string()))
            .collect();
    assert_eq!(rows, expected, "{backend:?}: newest first");

    let (status, html) = page(&app, &cookie, "/objects/gh/r-42").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert_eq!(
        html.matches("data-testid=\"accepted-row\"").count(),
        3,
        "{html}"
    );
    for kind in ["issues", "push", "pull_request"] {
        assert!(html.contains(kind), "{kind}");
    }
    assert!(html.contains("data-testid=\"dedup-note\""), "{html}");
    assert!(html.contains("It has 3 accepted deliveries."), "{html}");
    assert!(!html.contains("never applied"), "{html}");

    // The search shows the count where there is no revision.
    let found = find(&app, &cookie, "R-42").await.unwrap();
    let object = object(&found, "gh/r-42");
    assert_eq!(object["current_revision"], Json::Null);
    assert_eq!(object["accepted"], 3);
    assert_eq!(object["newest"]["event_id"], "d-2");
    assert_eq!(object["newest"]["outcome"], "duplicate");
}

both_backends!(never_applied_is_said_only_of_a_snapshot_object_without_a_revision);
async fn never_applied_is_said_only_of_a_snapshot_object_without_a_revision(backend: Backend) {
    let app = spawn_app(backend).await;
    let cookie = signed_in(&app, "sam", Role::Viewer).await;
    let failed = app
        .send(
            "shop",
            r#"{"event_id":"n1","object_id":"ord_900","snapshot":{}}"#,
        )
        .await;
    assert_eq!(failed.status, 422, "{failed:?}");
    applied(&app, "shop", "n2", "ord_901", 1, "{}").await;

    let (status, html) = page(&app, &cookie, "/objects/shop/ord_900").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(
        html.contains("data-testid=\"never-applied\""),
        "{backend:?}: {html}"
    );
    let (_, body) = call(
        &app,
        &cookie,
        "object_deliveries",
        &[("source", "shop"), ("object_id", "ord_900")],
    )
    .await;
    assert_eq!(serde_json::from_str::<Json>(&body).unwrap()["dedup"], false);

    let (status, html) = page(&app, &cookie, "/objects/shop/ord_901").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!html.contains("never applied"), "{html}");
    assert!(html.contains("data-testid=\"current-revision\""), "{html}");
}
