//! A reader catching up on a backlog: while its pages come back full, the feed's pages come from
//! a budget of their own beside the token's requests; a reader keeping up reads at the token's
//! request rate. Each bounded.

use super::*;
use server::api::{FEED_PAGES_PER_SEC, TOKEN_REQUESTS_PER_SEC};

/// `n` requests of `GET path`, 16 at a time (fewer than the process lets wait for a turn to
/// read, so what answers them is the budget): their statuses.
async fn burst(app: &TestApp, token: &str, path: &str, n: u32) -> Vec<u16> {
    use futures::StreamExt;
    const AT_ONCE: usize = 16;
    const _: () = assert!(AT_ONCE < server::feed::READS_WAITING);
    futures::stream::iter(0..n)
        .map(|_| app.client.get(app.url(path)).bearer_auth(token).send())
        .buffer_unordered(AT_ONCE)
        .map(|answer| answer.unwrap().status().as_u16())
        .collect()
        .await
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

/// Every status is one of `allowed`.
fn only(statuses: &[u16], allowed: &[u16]) {
    assert!(statuses.iter().all(|s| allowed.contains(s)), "{statuses:?}");
}

/// A backlog of three deliveries: a page of one item is full.
async fn backlog(app: &TestApp) {
    for i in 1..=3 {
        let answer = app
            .send(
                "shop",
                &event(&format!("e{i}"), &format!("order-{i}"), 1, "{}"),
            )
            .await;
        assert_eq!(answer.outcome(), "applied");
    }
}

#[tokio::test]
async fn a_reader_catching_up_reads_pages_past_the_tokens_requests_and_spends_none_of_them() {
    let app = spawn_app(Backend::Sqlite).await;
    backlog(&app).await;
    let reader = token(&app, "reader", Role::Viewer, &[]).await;
    let loader = token(&app, "loader", Role::Viewer, &[]).await;
    let (status, _) = put(&app, &loader, "/api/v1/feed/consumers/warehouse", "").await;
    assert_eq!(status, 201);

    // A consumer catching up (its page of one is full) reads and commits past the token's
    // requests a second: its items and commits are pages.
    let items = "/api/v1/feed/consumers/warehouse/items?limit=1";
    let (status, _, page) = get(&app, Some(&loader), items).await;
    assert_eq!((status, page["data"].as_array().unwrap().len()), (200, 1));
    let items = burst(&app, &loader, items, 2 * TOKEN_REQUESTS_PER_SEC).await;
    assert_eq!(count(&items, 200), items.len(), "{items:?}");

    // A reader catching up: well past the token's requests a second, held to the feed's pages
    // (and what the address has left of them).
    let (status, _, _) = get(&app, Some(&reader), "/api/v1/feed?limit=1").await;
    assert_eq!(status, 200);
    let pages = burst(
        &app,
        &reader,
        "/api/v1/feed?limit=1",
        FEED_PAGES_PER_SEC * 2 + 50,
    )
    .await;
    only(&pages, &[200, 429]);
    assert!(
        count(&pages, 200) > TOKEN_REQUESTS_PER_SEC as usize,
        "{pages:?}"
    );
    assert!(count(&pages, 429) > 0, "{pages:?}");

    // The token's other requests kept their whole second: none was spent on pages.
    let others = burst(&app, &reader, "/api/v1/sources", TOKEN_REQUESTS_PER_SEC).await;
    assert_eq!(count(&others, 200), others.len(), "{others:?}");
}

#[tokio::test]
async fn a_reader_keeping_up_reads_at_the_tokens_request_rate() {
    let app = spawn_app(Backend::Sqlite).await;
    backlog(&app).await;
    let reader = token(&app, "reader", Role::Viewer, &[]).await;
    // Its pages hold all there is (three of up to 500): not full, so not catching up.
    let pages = burst(
        &app,
        &reader,
        "/api/v1/feed?limit=500",
        2 * TOKEN_REQUESTS_PER_SEC,
    )
    .await;
    only(&pages, &[200, 429]);
    assert!(
        count(&pages, 200) <= TOKEN_REQUESTS_PER_SEC as usize + 2,
        "{pages:?}"
    );
    assert!(count(&pages, 429) > 0, "{pages:?}");
}

#[tokio::test]
async fn made_up_tokens_on_the_feed_are_held_to_the_addresss_pages_before_any_is_looked_up() {
    let app = spawn_app(Backend::Sqlite).await;
    let made_up = format!("hbt_{}", "x".repeat(43));
    let answers = burst(&app, &made_up, "/api/v1/feed", FEED_PAGES_PER_SEC * 2 + 50).await;
    only(&answers, &[401, 429]);
    assert!(count(&answers, 429) > 0, "{answers:?}");
    // Looked up (401) at most a second's worth and what refilled while the burst arrived.
    assert!(
        count(&answers, 401) < 2 * FEED_PAGES_PER_SEC as usize,
        "{answers:?}"
    );
}
