//! `/api/v1/feed`: the pull feed ([`app::feed`]), for the token's sources; its long polls, which
//! the consumers' reads (`super::consumers`) share.
//!
//! - `wait` (0 to 30 s, never past the request deadline) holds an empty answer until an item
//!   it takes is served ([`crate::feed`]'s watcher wakes it) or the wait ends; at most
//!   [`crate::feed::MAX_WAITERS`] wait at once per process, at most
//!   [`crate::feed::MAX_WAITERS_PER_TOKEN`] of one token (429 beyond).
//! - A token limited to some sources reads only theirs.

use super::ApiError;
use super::extract::{Query, Viewer};
use crate::AppState;
use crate::feed::Reader;
use app::auth::tokens::Caller;
use app::feed::{Content, Cursor, FeedError, Item, Page, Selection};
use axum::Json;
use axum::extract::State;
use serde_json::value::RawValue;
use std::time::Duration;

/// The longest `wait`, in seconds.
pub const MAX_WAIT_SECS: u64 = 30;

/// One item of the feed.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "cursor": "48213.9120",
    "source": "shop",
    "event_id": "evt_1001",
    "type": "order.updated",
    "object_id": "order_17",
    "revision": 4,
    "outcome": "applied",
    "snapshot": {"id": "order_17", "status": "paid", "total": 129.5},
    "received_at": "2026-12-04T06:25:12.481Z"
}))]
pub struct FeedItem {
    /// This item's place: a cursor to read after it, or to commit.
    pub cursor: String,
    pub source: String,
    pub event_id: String,
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    pub object_id: Option<String>,
    pub revision: Option<i64>,
    /// `applied` or `accepted` (and `stale`, `duplicate` when included).
    pub outcome: app::model::OutcomeKind,
    /// A snapshot source's snapshot, as the inbox holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Value, required = false)]
    pub snapshot: Option<Box<RawValue>>,
    /// A dedup source's delivery: the body as received (a form's fields as an object).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Value, required = false)]
    pub payload: Option<Box<RawValue>>,
    #[schema(format = DateTime)]
    pub received_at: String,
}

impl From<Item> for FeedItem {
    fn from(item: Item) -> FeedItem {
        // The stored text as it is (no number changes); a text that is not JSON as a string.
        let raw = |text: String| {
            RawValue::from_string(text.clone()).unwrap_or_else(|_| {
                RawValue::from_string(serde_json::Value::String(text).to_string())
                    .expect("a JSON string is JSON")
            })
        };
        let (snapshot, payload) = match item.content {
            Content::Snapshot(text) => (Some(raw(text)), None),
            Content::Payload(text) => (None, Some(raw(text))),
        };
        FeedItem {
            cursor: item.cursor.to_string(),
            source: item.source,
            event_id: item.event_id,
            event_type: item.event_type,
            object_id: item.object_id,
            revision: item.revision,
            outcome: item.outcome,
            snapshot,
            payload,
            received_at: item
                .received_at
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        }
    }
}

/// A page of the feed.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct FeedPage {
    pub data: Vec<FeedItem>,
    /// Pass it as `after` for the next page (the same cursor when the page is empty).
    pub next_cursor: String,
}

impl From<Page> for FeedPage {
    fn from(page: Page) -> FeedPage {
        FeedPage {
            next_cursor: page.next.to_string(),
            data: page.items.into_iter().map(FeedItem::from).collect(),
        }
    }
}

/// What `GET /api/v1/feed` takes.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FeedQuery {
    /// The `next_cursor` (or an item's `cursor`) of an earlier answer; none: from the oldest kept.
    after: Option<String>,
    /// Items of the page, 1 to 500 (100 when not given); a page also ends past 1 MiB of bodies.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    limit: Option<String>,
    /// Sources, comma-separated.
    source: Option<String>,
    /// Event types, comma-separated.
    #[serde(rename = "type")]
    event_type: Option<String>,
    /// Outcomes served beyond applied and accepted: `stale`, `duplicate`, comma-separated.
    include: Option<String>,
    /// Seconds, 0 to 30, to hold an empty answer until an item commits.
    #[param(value_type = Option<u32>, minimum = 0, maximum = 30)]
    wait: Option<String>,
}

/// Applied and accepted deliveries in commit order, after a cursor.
#[utoipa::path(
    get,
    path = "/api/v1/feed",
    operation_id = "read_feed",
    tag = "feed",
    params(FeedQuery),
    responses(
        (status = 200, description = "The items after the cursor (none yet: an empty page with the same cursor)", body = FeedPage),
        (status = 410, description = "The cursor is past the archive's retention; `oldest_cursor` is the earliest served", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn read(
    State(state): State<AppState>,
    Query(query): Query<FeedQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<FeedPage>, ApiError> {
    let limit = super::extract::limit(query.limit.as_deref())?;
    let after = query.after.as_deref().map(cursor).transpose()?;
    let mut selection = Selection::default();
    if let Some(include) = &query.include {
        for outcome in include.split(',') {
            match outcome {
                "stale" => selection.include_stale = true,
                "duplicate" => selection.include_duplicate = true,
                other => {
                    return Err(ApiError::BadRequest(format!(
                        "include: {other:?} is not an outcome the feed adds; it takes stale and duplicate"
                    )));
                }
            }
        }
    }
    selection.sources = names("source", query.source.as_deref())?;
    if let Some(sources) = &selection.sources
        && let Some(unseen) = sources.iter().find(|s| !caller.sees(s))
    {
        return Err(ApiError::NotFound(format!(
            "there is no source {unseen:?} this token may read"
        )));
    }
    selection.types = names("type", query.event_type.as_deref())?;
    let selection = selection.within(caller.sources.as_deref());
    let wait = wait(&state, query.wait.as_deref())?;
    let page = long_poll(&state, &caller, wait, &selection, |reader| {
        let (state, selection) = (&state, &selection);
        async move {
            let _turn = state.feed.reading(reader).await?;
            app::feed::read(&state.db, after, selection, limit)
                .await
                .map_err(feed_error)
        }
    })
    .await?;
    state.limits.catching_up.set(&caller.name, page.full);
    Ok(Json(page.into()))
}

/// Reads until a page has items, the wait ends, or the server stops; waits without a database
/// connection, woken only when an item `selection` takes may have been served. `read` is told
/// who reads: a [`Reader::Waiter`] when the poll holds a place among the waiters.
pub(super) async fn long_poll<F, Fut>(
    state: &AppState,
    caller: &Caller,
    wait: Duration,
    selection: &Selection,
    mut read: F,
) -> Result<Page, ApiError>
where
    F: FnMut(Reader) -> Fut,
    Fut: Future<Output = Result<Page, ApiError>>,
{
    // Among the waiters before the first read: nothing served after it goes unnoticed.
    if wait.is_zero() {
        return read(Reader::Request).await;
    }
    let waiter = state.feed.wait_for(selection, caller.id)?;
    let mut page = read(Reader::Waiter).await?;
    let deadline = tokio::time::Instant::now() + wait;
    while page.items.is_empty() {
        tokio::select! {
            () = state.feed.stopping().cancelled() => break,
            () = waiter.woken() => {}
            () = tokio::time::sleep_until(deadline) => break,
        }
        page = read(Reader::Waiter).await?;
    }
    Ok(page)
}

/// `wait` in seconds: 0 to [`MAX_WAIT_SECS`], and a second short of the request deadline.
pub(super) fn wait(state: &AppState, given: Option<&str>) -> Result<Duration, ApiError> {
    let Some(text) = given else {
        return Ok(Duration::ZERO);
    };
    let secs = text
        .parse::<u64>()
        .ok()
        .filter(|s| *s <= MAX_WAIT_SECS)
        .ok_or_else(|| {
            ApiError::BadRequest(format!(
                "wait: {text:?} is not a number of seconds from 0 to {MAX_WAIT_SECS}"
            ))
        })?;
    let most = state.config.server.request_timeout_secs.saturating_sub(1);
    Ok(Duration::from_secs(secs.min(most)))
}

pub(super) fn cursor(text: &str) -> Result<Cursor, ApiError> {
    Cursor::parse(text).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "cursor {text:?} is not one hookbox gave out (an item's cursor or a page's next_cursor)"
        ))
    })
}

/// A comma-separated list of names, bounded.
fn names(what: &str, given: Option<&str>) -> Result<Option<Vec<String>>, ApiError> {
    let Some(text) = given else {
        return Ok(None);
    };
    let names: Vec<String> = text.split(',').map(str::to_string).collect();
    app::feed::check_names(what, &names).map_err(ApiError::BadRequest)?;
    Ok(Some(names))
}

pub(super) fn feed_error(e: FeedError) -> ApiError {
    match e {
        FeedError::Gone { oldest } => ApiError::Gone {
            why: FeedError::Gone { oldest }.to_string(),
            oldest_cursor: oldest.to_string(),
        },
        FeedError::Db(e) => ApiError::from(e),
    }
}
