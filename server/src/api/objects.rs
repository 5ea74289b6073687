//! `GET /api/v1/sources/{source}/objects/{object_id}`: an object's current revision; and
//! `…/revisions`: every accepted revision, greatest first, cursor-paged.

use super::{answer, caller, params};
use crate::AppState;
use crate::api::problem::ApiError;
use crate::request_id::RequestId;
use app::model::Role;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

/// The projection's row: revision, snapshot (as stored, embedded as JSON), when it was updated
/// and the event that carried it.
pub(super) async fn object(
    State(state): State<AppState>,
    Path((source, object_id)): Path<(String, String)>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        params(query.as_deref(), &[])?;
        let caller = caller(&state, &headers, Role::Viewer).await?;
        let not_found = || {
            ApiError::NotFound(format!(
                "the source {source:?} holds no revision of the object {object_id:?}"
            ))
        };
        if !caller.sees(&source) {
            return Err(not_found());
        }
        let current = app::db::objects::current_object(&state.db, &source, &object_id)
            .await?
            .ok_or_else(not_found)?;
        let head = serde_json::json!({
            "source": source,
            "object_id": object_id,
            "revision": current.revision,
            "updated_at": current.updated_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "event_id": current.event_id,
        })
        .to_string();
        // The snapshot's JSON text, embedded as it is.
        Ok(format!(
            "{},\"snapshot\":{}}}",
            &head[..head.len() - 1],
            current.snapshot
        ))
    }
    .await;
    answer(result, &request_id)
}

/// Revisions of a page when `limit` is not given, and at most.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 500;

pub(super) async fn revisions(
    State(state): State<AppState>,
    Path((source, object_id)): Path<(String, String)>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        let given = params(query.as_deref(), &["cursor", "limit"])?;
        let caller = caller(&state, &headers, Role::Viewer).await?;
        let limit = given.limit(DEFAULT_LIMIT, MAX_LIMIT)?;
        let before = given
            .get("cursor")
            .map(|c| {
                c.parse::<i64>().map_err(|_| {
                    ApiError::BadRequest("cursor: not a cursor from a previous page".into())
                })
            })
            .transpose()?;
        if !caller.sees(&source) {
            return Err(ApiError::NotFound(format!(
                "the source {source:?} holds no revision of the object {object_id:?}"
            )));
        }
        let (page, more) =
            app::db::objects::revisions_page(&state.db, &source, &object_id, before, limit).await?;
        let next = more.then(|| page.last().map(|r| r.revision.to_string())).flatten();
        let data: Vec<serde_json::Value> = page
            .iter()
            .map(|r| {
                serde_json::json!({
                    "revision": r.revision,
                    "event_id": r.event_id,
                    "received_at": r.received_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                })
            })
            .collect();
        Ok(serde_json::json!({ "data": data, "next_cursor": next }).to_string())
    }
    .await;
    answer(result, &request_id)
}
