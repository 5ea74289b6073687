//! `POST /api/v1/events/{id}/replay`: an operator's replay of one delivery, through the page's
//! own function ([`app::ingest::replay::replay_checked`]), audited with the token's name.

use super::extract::{ApiPath, Body, NoParams, Operator, Query};
use super::{ApiError, Event};
use crate::AppState;
use app::ingest::replay::{Repeat, ReplayError, replay_checked};
use axum::Json;
use axum::extract::State;

/// `{"dry_run": true}` tells what a replay would do and writes nothing; `"anyway": true`
/// replays a delivery that would fail again as the original did. An empty body is `{}`.
#[derive(serde::Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"dry_run": true}))]
pub struct ReplayRequest {
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    anyway: bool,
}

/// What the replay did, or would do.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "outcome": "applied",
    "status": "processed",
    "message": null,
    "dry_run": false,
    "event": {"id": 4813, "source": "stripe", "event_id": "evt_1QbC2d", "object_id": "pi_3QbC2d",
              "revision": 1733300000, "type": "payment_intent.succeeded", "status": "processed",
              "outcome": "applied", "error": null, "received_at": "2026-12-04T07:02:40.112+00:00",
              "replay_of": 4812, "replayed_by": "retry-script", "resolved_by": null}
}))]
pub struct ReplayAnswer {
    pub outcome: app::model::OutcomeKind,
    pub status: app::model::Status,
    /// Why it failed or was skipped, in words.
    pub message: Option<String>,
    pub dry_run: bool,
    /// The new archive row (none on a dry run).
    pub event: Option<Event>,
}

/// An operator's replay of one delivery, as the event page's replay does it.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/replay",
    operation_id = "replay_event",
    tag = "events",
    params(("id" = i64, Path, description = "The archive row's id")),
    request_body(content = ReplayRequest, description = "Optional: `{}` when empty"),
    responses(
        (status = 200, description = "Replayed (or, on a dry run, what it would do)", body = ReplayAnswer),
        (status = 409, description = "It would fail as the original did: nothing was replayed", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "The database refuses it for good: nothing was replayed", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn replay(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Operator(caller): Operator,
    Body(request): Body<ReplayRequest>,
) -> Result<Json<ReplayAnswer>, ApiError> {
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
        &caller.actor,
        request.dry_run,
        repeat,
    )
    .await
    .map_err(|e| match e {
        ReplayError::Db(e) => ApiError::from(e),
        ReplayError::SameFailure { class } => ApiError::Conflict(format!(
            "nothing was replayed: the replay would fail as the original did ({class}); fix the cause first, or send \"anyway\": true"
        )),
        ReplayError::Refused(why) => ApiError::Unprocessable(format!("nothing was replayed: {why}")),
        expired @ ReplayError::BodyExpired(_) => {
            ApiError::Conflict(format!("nothing was replayed: {expired}"))
        }
        other => ApiError::BadRequest(other.to_string()),
    })?;
    let mut event = None;
    if !request.dry_run {
        state.forward_wake.notify_one();
        state.feed.committed();
        tracing::info!(token = %caller.name, replay_of = id, outcome = recorded.outcome.name(), "replayed through the API");
        event = app::db::events::stored_delivery(&state.db, recorded.archive_id)
            .await?
            .map(|new| Event::from(&new.row));
    }
    Ok(Json(ReplayAnswer {
        outcome: recorded.outcome.kind(),
        status: recorded.outcome.status(),
        message: recorded.outcome.error_message(),
        dry_run: request.dry_run,
        event,
    }))
}
