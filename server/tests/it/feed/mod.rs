//! The pull feed (`/api/v1/feed`) and its consumers, over HTTP: what it serves and in which
//! order, paging, filters and scopes, 410 past the retention, consumers' commit, seek and lease,
//! long polls woken by commits (in this process, and from another process on PostgreSQL), a
//! transaction held open that no reader gets past, and three processes ingesting while a reader
//! drains the feed; consumers' owners and each token's share; what bounds a page and lag, and
//! what an empty page tells.
#![allow(clippy::unwrap_used)]

use crate::support::*;
use app::model::Role;
use serde_json::Value;

mod bounds;
mod catch_up;
mod consumers;
mod order;
mod owners;
mod reads;

/// Waits until no committed archive row waits behind the feed's horizon. PostgreSQL's horizon is
/// the oldest transaction running anywhere on the cluster, and other tests run beside this one:
/// a read right after a commit may see nothing yet. SQLite has no horizon.
pub async fn settled(db: &app::db::Db) {
    if db.backend() != sea_orm::DatabaseBackend::Postgres {
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while count(
        db,
        "SELECT count(*) FROM webhook_events
         WHERE feed_tx >= CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS bigint)",
    )
    .await
        > 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the feed's horizon never passed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Every item of the feed after `after` for `token` and `query`, `limit` a page, with the final
/// cursor (once everything committed is past the horizon).
pub async fn drain(
    app: &TestApp,
    token: &str,
    query: &str,
    after: Option<String>,
) -> (Vec<Value>, String) {
    settled(&app.db).await;
    let mut items = Vec::new();
    let mut after = after;
    loop {
        let path = match &after {
            Some(cursor) => format!("/api/v1/feed?{query}&after={cursor}"),
            None => format!("/api/v1/feed?{query}"),
        };
        let (status, _, body) = get(app, Some(token), &path).await;
        if status == 429 {
            // Over the token's rate (its reads before this drain spent it): as a consumer does,
            // retry after the second the answer names.
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            continue;
        }
        assert_eq!(status, 200, "{path}: {body}");
        let page = body["data"].as_array().unwrap().clone();
        let next = body["next_cursor"].as_str().unwrap().to_string();
        if page.is_empty() {
            return (items, next);
        }
        items.extend(page);
        after = Some(next);
    }
}

/// The event ids of `items`.
pub fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| i["event_id"].as_str().unwrap().to_string())
        .collect()
}

/// A `PUT` with a JSON body: status and body.
pub async fn put(app: &TestApp, token: &str, path: &str, body: &str) -> (u16, Value) {
    send_json(app, reqwest::Method::PUT, token, path, body).await
}

/// A `DELETE`: its status.
pub async fn delete(app: &TestApp, token: &str, path: &str) -> u16 {
    send_json(app, reqwest::Method::DELETE, token, path, "")
        .await
        .0
}

/// The answer of a long poll of `path` and when it came, once the poll has been seen waiting
/// (still unanswered 300 ms after it was sent).
pub type Poll = tokio::task::JoinHandle<((u16, String, Value), std::time::Instant)>;

/// Sends a long poll of `path` and returns once it is seen waiting.
pub async fn waiting_poll(app: &TestApp, token: &str, path: String) -> Poll {
    let (app, token) = (app.clone_handle(), token.to_string());
    let poll = tokio::spawn(async move {
        let answer = get(&app, Some(&token), &path).await;
        (answer, std::time::Instant::now())
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!poll.is_finished(), "the poll waits for an item");
    poll
}
