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
        let value = |name: &str| {
            given
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let limit = match value("limit") {
            None => DEFAULT_LIMIT,
            Some(text) => text
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=app::db::events::MAX_PAGE_SIZE).contains(n))
                .ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "limit: {text:?} is not a number from 1 to {}",
                        app::db::events::MAX_PAGE_SIZE
                    ))
                })?,
        };
        let filter = EventFilter {
            source: value("source"),
            status: value("status"),
            outcome: value("outcome"),
            event_type: value("type"),
            object_id: value("object_id"),
            event_id: value("event_id"),
            from: value("from"),
            to: value("to"),
            r#match: value("match"),
            tz: Some("UTC".into()),
            visible_sources: caller.sources.clone(),
            ..EventFilter::default()
        };
        let page = app::db::events::find_events(
            &state.db,
            &filter,
            value("cursor").as_deref(),
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
        let data: Vec<serde_json::Value> = page
            .rows
            .iter()
            .map(|row| {
                serde_json::json!({
                    "id": row.id,
                    "source": row.source,
                    "event_id": row.event_id,
                    "object_id": row.object_id,
                    "revision": row.revision,
                    "type": row.event_type,
                    "status": row.status.as_str(),
                    "outcome": row.outcome.as_str(),
                    "error": row.error_message,
                    "received_at": row.received_at,
                    "replay_of": row.replay_of,
                    "replayed_by": row.replayed_by,
                    "resolved_by": row.resolved_by,
                })
            })
            .collect();
        Ok(serde_json::json!({ "data": data, "next_cursor": page.next_cursor }).to_string())
    }
    .await;
    answer(result, &request_id)
}
