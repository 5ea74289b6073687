//! The top bar's search box: on `/search` it keeps what was searched (escaped), elsewhere it is
//! empty.
#![allow(clippy::unwrap_used)]

use super::*;

#[tokio::test]
async fn the_top_bar_keeps_the_query_on_the_search_page_only() {
    let app = spawn_app(Backend::Sqlite).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    let box_of = |html: &str| {
        tag_with(html, "input", &[r#"id="top-search-q""#])
            .unwrap()
            .to_string()
    };

    let (status, html) = page(&app, Some(&cookie), "/search?q=ord_10231").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        box_of(&html).contains(r#"value="ord_10231""#),
        "{}",
        box_of(&html)
    );
    // Written as an attribute's text, never as markup.
    let (status, html) = page(
        &app,
        Some(&cookie),
        "/search?q=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        box_of(&html).contains(r#"value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;""#),
        "{}",
        box_of(&html)
    );
    assert!(!html.contains("<script>alert(1)"));
    // Elsewhere, a q of another page's own filter is not the search box's.
    let (_, html) = page(&app, Some(&cookie), "/events?q=ord_10231").await;
    assert!(!box_of(&html).contains("value="), "{}", box_of(&html));
}
