//! `/feed`: a viewer sees each consumer of the pull feed, what it reads and how far behind it
//! is (the same lag the API and `/metrics` give); with none, the page says how one is made.
#![allow(clippy::unwrap_used)]

use super::*;

both_backends!(feed_page_shows_each_consumer_and_how_far_behind_it_is);
async fn feed_page_shows_each_consumer_and_how_far_behind_it_is(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let viewer = sign_in(&app, "vera", PASSWORD).await.unwrap();
    let (status, html) = page(&app, Some(&viewer), "/feed").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("No consumer yet"), "{html}");
    assert!(html.contains(r#"href="/feed""#), "the top bar links it");

    for i in 1..=3 {
        app.send("shop", &event(&format!("e{i}"), &format!("o-{i}"), 1, "{}"))
            .await;
    }
    crate::feed::settled(&app.db).await;
    let selection = app::feed::Selection {
        sources: Some(vec!["shop".into()]),
        ..app::feed::Selection::default()
    };
    let by = app::feed::consumers::Putter {
        actor: "token loader",
        owner: None,
        manages_any: false,
    };
    app::feed::consumers::put(&app.db, "warehouse", &selection, by)
        .await
        .unwrap();
    let (status, html) = page(&app, Some(&viewer), "/feed").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("warehouse") && html.contains("token loader"),
        "{html}"
    );
    assert!(html.contains("3 items"), "{html}");
    assert!(html.contains("shop; every type"), "{html}");
    assert!(html.contains("never"), "nothing committed yet: {html}");

    let (status, _) = page(&app, None, "/feed").await;
    assert_ne!(status, StatusCode::OK, "signed out: not the page");
}
