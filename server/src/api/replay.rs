//! `POST /api/v1/events/{id}/replay`: an operator's replay of one delivery, through the page's
//! own function ([`app::ingest::replay::replay_checked`]), audited with the token's name.

use super::{answer, caller, params};
use crate::AppState;
use crate::api::problem::ApiError;
use crate::request_id::RequestId;
use app::ingest::replay::{Repeat, ReplayError, replay_checked};
use app::model::Role;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

/// The request's body: `{"dry_run": true}` tells what a replay would do and writes nothing;
/// `"anyway": true` replays a delivery that would fail again as the original did.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ReplayRequest {
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    anyway: bool,
}

pub(super) async fn replay(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = async {
        params(query.as_deref(), &[])?;
        let caller = caller(&state, &headers, Role::Operator).await?;
        let request: ReplayRequest = if body.iter().all(u8::is_ascii_whitespace) {
            ReplayRequest::default()
        } else {
            serde_json::from_slice(&body)
                .map_err(|e| ApiError::BadRequest(format!("the body: {e}")))?
        };
        let not_found = || ApiError::NotFound(format!("there is no delivery {id}"));
        let id: i64 = id.parse().map_err(|_| not_found())?;
        let stored = app::db::events::stored_delivery(&state.db, id)
            .await?
            .filter(|stored| caller.sees(&stored.row.source))
            .ok_or_else(not_found)?;
        let repeat = if request.anyway {
            Repeat::Allowed
        } else {
            Repeat::Refused
        };
        let recorded = replay_checked(
            &state.db,
            &state.config,
            &stored,
            &caller.name,
            request.dry_run,
            repeat,
        )
        .await
        .map_err(|e| match e {
            ReplayError::Db(e) => ApiError::from(e),
            ReplayError::SameFailure { class } => ApiError::Conflict(format!(
                "nothing was replayed: the replay would fail as the original did ({class}); fix the cause first, or send \"anyway\": true"
            )),
            ReplayError::Refused(why) => {
                ApiError::Unprocessable(format!("nothing was replayed: {why}"))
            }
            other => ApiError::BadRequest(other.to_string()),
        })?;
        if !request.dry_run {
            state.forward_wake.notify_one();
            tracing::info!(token = %caller.name, replay_of = id, outcome = recorded.outcome.name(), "replayed through the API");
        }
        let event = if request.dry_run {
            serde_json::Value::Null
        } else {
            match app::db::events::stored_delivery(&state.db, recorded.archive_id).await? {
                Some(new) => super::event_json(&new.row),
                None => serde_json::Value::Null,
            }
        };
        Ok(serde_json::json!({
            "outcome": recorded.outcome.kind().as_str(),
            "status": recorded.outcome.status().as_str(),
            "message": recorded.outcome.error_message(),
            "dry_run": request.dry_run,
            "event": event,
        })
        .to_string())
    }
    .await;
    answer(result, &request_id)
}
