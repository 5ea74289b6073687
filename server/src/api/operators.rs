//! Operators' reads: `GET /api/v1/rejected` (what the endpoint refused, newest first, by the
//! `/rejected` page's own query) and `GET /api/v1/audit` (who did what, newest first, as the
//! `/audit` page reads it). Both for tokens of every source: the refused requests name any
//! source, the audit log every one.

use super::{answer, caller, params};
use crate::AppState;
use crate::api::problem::ApiError;
use crate::request_id::RequestId;
use app::db::conditions::QueryError;
use app::model::{RejectedFilter, Role};
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

async fn operator_of_every_source(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let caller = caller(state, headers, Role::Operator).await?;
    if caller.sources.is_some() {
        return Err(ApiError::Forbidden(
            "this read names every source: it is for tokens of every source".into(),
        ));
    }
    Ok(())
}

pub(super) async fn rejected(
    State(state): State<AppState>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        let given = params(query.as_deref(), &["source", "reason", "cursor"])?;
        operator_of_every_source(&state, &headers).await?;
        let filter = RejectedFilter {
            source: given.get("source"),
            reason: given.get("reason"),
            before: given.get("cursor"),
        };
        let page = app::db::rejected::list(&state.db, &filter)
            .await
            .map_err(|e| match e {
                QueryError::BadFilter(why) => ApiError::BadRequest(why),
                QueryError::Db(e) => ApiError::from(e),
            })?;
        let data = serde_json::to_value(page.rows).map_err(|_| ApiError::Unavailable)?;
        Ok(serde_json::json!({
            "data": data,
            "next_cursor": page.next_before.map(|n| n.to_string()),
        })
        .to_string())
    }
    .await;
    answer(result, &request_id)
}

pub(super) async fn audit(
    State(state): State<AppState>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        let given = params(query.as_deref(), &["action", "actor"])?;
        operator_of_every_source(&state, &headers).await?;
        let rows = app::db::audit::audit_entries(
            &state.db,
            given.get("action").as_deref(),
            given.get("actor").as_deref(),
        )
        .await?;
        let data = serde_json::to_value(rows).map_err(|_| ApiError::Unavailable)?;
        Ok(serde_json::json!({ "data": data, "next_cursor": null }).to_string())
    }
    .await;
    answer(result, &request_id)
}
