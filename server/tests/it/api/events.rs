//! `GET /api/v1/events`: the `/events` filters, cursor paging that returns every row once while
//! deliveries keep arriving, `limit` bounds, and the token's sources.

use super::*;

/// Every event id of the pages `GET /api/v1/events?{query}` walks, with `limit` rows a page;
/// while `during` is given, one more delivery arrives after each page.
async fn walk(app: &TestApp, token: &str, query: &str, arriving: bool) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        let path = match &cursor {
            None => format!("/api/v1/events?{query}"),
            Some(c) => format!(
                "/api/v1/events?{query}&cursor={}",
                form_urlencoded::byte_serialize(c.as_bytes()).collect::<String>()
            ),
        };
        let (status, _, body) = get(app, Some(token), &path).await;
        assert_eq!(status, 200, "{body}");
        for row in body["data"].as_array().unwrap() {
            seen.push(row["event_id"].as_str().unwrap_or("-").to_string());
        }
        if arriving {
            let late = format!("late-{page}");
            app.send("shop", &event(&late, &late, 1, "{}")).await;
        }
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    seen
}

both_backends!(cursor_paging_returns_every_row_once_while_deliveries_arrive);
async fn cursor_paging_returns_every_row_once_while_deliveries_arrive(backend: Backend) {
    let app = spawn_app(backend).await;
    for i in 0..23 {
        let id = format!("evt-{i:02}");
        assert_eq!(
            app.send("shop", &event(&id, &format!("order-{i}"), 1, "{}"))
                .await
                .outcome(),
            "applied"
        );
    }
    app.send_bytes(
        "gh",
        br#"{"repository":{"id":"r1"}}"#,
        &[("X-Delivery-Id", "d-1")],
    )
    .await;
    let reader = token(&app, "reader", Role::Viewer, &["shop"]).await;
    let seen = walk(&app, &reader, "limit=5", true).await;
    let expected: Vec<String> = (0..23).rev().map(|i| format!("evt-{i:02}")).collect();
    assert_eq!(
        seen, expected,
        "newest first, each once, none of the later arrivals"
    );
    // The filters of /events: source, status, type, object_id, event_id, match.
    let all = token(&app, "all", Role::Viewer, &[]).await;
    assert_eq!(walk(&app, &all, "source=gh", false).await, ["d-1"]);
    assert_eq!(
        walk(&app, &all, "object_id=order-7", false).await,
        ["evt-07"]
    );
    assert_eq!(
        walk(&app, &all, "event_id=evt-03&status=processed", false).await,
        ["evt-03"]
    );
    assert_eq!(
        walk(
            &app,
            &all,
            "match=%7B%22repository%22%3A%7B%22id%22%3A%22r1%22%7D%7D",
            false
        )
        .await,
        ["d-1"]
    );
    // The limited token sees nothing of gh, even when it asks for it.
    assert!(walk(&app, &reader, "source=gh", false).await.is_empty());
    for (query, detail) in [
        ("limit=0", "limit: \"0\" is not a number from 1 to 500"),
        ("limit=501", "limit: \"501\" is not a number from 1 to 500"),
        ("status=lost", "status: \"lost\" is not one of"),
        (
            "cursor=nonsense",
            "cursor: not a cursor from a previous page",
        ),
        ("q=evt-01", "unknown query parameter \"q\""),
    ] {
        let (status, content_type, problem) =
            get(&app, Some(&all), &format!("/api/v1/events?{query}")).await;
        assert_eq!(
            (status, content_type.as_str()),
            (400, "application/problem+json"),
            "{query}"
        );
        assert!(
            problem["detail"].as_str().unwrap().starts_with(detail),
            "{query}: {problem}"
        );
    }
}
