//! `GET /api/v1/events`: the archive by the `/events` page's filters, cursor-paged, through the
//! page's own function ([`app::db::events::find_events`]), limited to the token's sources.

use super::{answer, caller, params};
use crate::AppState;
use crate::api::problem::ApiError;
use crate::request_id::RequestId;
use app::db::search::SearchError;
use app::model::{EventFilter, Role};
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

/// The filters and paging `GET /api/v1/events` takes.
const KNOWN: &[&str] = &[
    "source",
    "status",
    "outcome",
    "type",
    "object_id",
    "event_id",
    "from",
    "to",
    "match",
    "cursor",
    "limit",
];

/// Rows of a page when `limit` is not given.
const DEFAULT_LIMIT: usize = 100;

pub(super) async fn list(
    State(state): State<AppState>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        let given = params(query.as_deref(), KNOWN)?;
        let caller = caller(&state, &headers, Role::Viewer).await?;
        let limit = given.limit(DEFAULT_LIMIT, app::db::events::MAX_PAGE_SIZE)?;
        let filter = EventFilter {
            source: given.get("source"),
            status: given.get("status"),
            outcome: given.get("outcome"),
            event_type: given.get("type"),
            object_id: given.get("object_id"),
            event_id: given.get("event_id"),
            from: given.get("from"),
            to: given.get("to"),
            r#match: given.get("match"),
            tz: Some("UTC".into()),
            visible_sources: caller.sources.clone(),
            ..EventFilter::default()
        };
        let page = app::db::events::find_events(
            &state.db,
            &filter,
            given.get("cursor").as_deref(),
            limit,
            &format!("token {}", caller.name),
            std::time::Duration::from_secs(state.config.server.request_timeout_secs),
        )
        .await
        .map_err(|e| match e {
            SearchError::Query(app::db::conditions::QueryError::BadFilter(why)) => {
                ApiError::BadRequest(why)
            }
            SearchError::Query(app::db::conditions::QueryError::Db(e)) => ApiError::from(e),
            SearchError::Busy(why) => ApiError::Busy(why),
            timed_out @ SearchError::TimedOut(_) => ApiError::TimedOut(timed_out.to_string()),
        })?;
        let data: Vec<serde_json::Value> = page.rows.iter().map(super::event_json).collect();
        Ok(serde_json::json!({ "data": data, "next_cursor": page.next_cursor }).to_string())
    }
    .await;
    answer(result, &request_id)
}
