//! `POST /api/v1/events/replay`: the failed deliveries of a filter replayed, through the page's
//! own function ([`app::ingest::replay::replay_filter`]), guarded by the count: a replay that
//! would replay another number than `expected_count` writes nothing and is a 409 with the count.

use super::ApiError;
use super::extract::{Body, NoParams, Operator, Query};
use crate::AppState;
use app::ingest::replay::{Bulk, FilterReplayError, ReplayError, replay_filter};
use app::model::EventFilter;
use axum::Json;
use axum::extract::State;
use std::collections::BTreeMap;

/// The filter of `GET /api/v1/events` (its status aside: failed deliveries are replayed), with
/// the count a dry run answered.
#[derive(serde::Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "shop", "from": "2026-12-03T09:00:00Z", "expected_count": 12}))]
pub struct BulkRequest {
    source: Option<String>,
    outcome: Option<String>,
    #[serde(rename = "type")]
    event_type: Option<String>,
    object_id: Option<String>,
    event_id: Option<String>,
    from: Option<String>,
    to: Option<String>,
    /// A JSON object the delivery's body contains, as `GET /api/v1/events` takes it.
    #[serde(rename = "match")]
    #[schema(value_type = Option<Object>, example = json!({"customer": "cus_123"}))]
    matching: Option<serde_json::Value>,
    /// Only `failed`: a bulk replay replays failed deliveries (any other status is refused).
    #[schema(value_type = Option<String>, example = "failed")]
    status: Option<String>,
    /// Count what would be replayed; replay nothing.
    #[serde(default)]
    dry_run: bool,
    /// Required to replay: the `count` a dry run answered. When the filter matches another
    /// number now, nothing is replayed and the answer is 409 with `actual_count`.
    #[schema(minimum = 0)]
    expected_count: Option<usize>,
}

/// What a bulk replay skipped, by reason.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct BulkSkipped {
    /// Rows that are replays themselves.
    pub replays: usize,
    /// Failures a replay already resolved.
    pub resolved: usize,
    /// Rows that would fail as they did.
    pub same_failure: usize,
    /// Rows of a source no longer configured.
    pub unknown_source: usize,
    /// Rows whose body expired (`body_retention_days`).
    pub body_expired: usize,
}

/// What the bulk replay did, or would do.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "matched": 14, "count": 12, "dry_run": true,
    "outcomes": {"applied": 11, "stale": 1},
    "skipped": {"replays": 0, "resolved": 2, "same_failure": 0, "unknown_source": 0, "body_expired": 0}
}))]
pub struct BulkAnswer {
    /// Failed deliveries the filter matched.
    pub matched: usize,
    /// Those replayed (or, on a dry run, that would be): confirm it as `expected_count`.
    pub count: usize,
    pub dry_run: bool,
    /// The replays' outcomes, by outcome.
    pub outcomes: BTreeMap<String, usize>,
    pub skipped: BulkSkipped,
}

/// The failed deliveries of a filter replayed, guarded by their count.
#[utoipa::path(
    post,
    path = "/api/v1/events/replay",
    operation_id = "replay_events",
    tag = "events",
    request_body = BulkRequest,
    responses(
        (status = 200, description = "Replayed (or, on a dry run, what would be)", body = BulkAnswer),
        (status = 409, description = "The count changed: nothing was replayed; `actual_count` says how many match now", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn replay(
    State(state): State<AppState>,
    Query(NoParams {}): Query<NoParams>,
    Operator(caller): Operator,
    Body(request): Body<BulkRequest>,
) -> Result<Json<BulkAnswer>, ApiError> {
    let mode = match (request.dry_run, request.expected_count) {
        (true, _) => Bulk::DryRun,
        (false, Some(expected)) => Bulk::Confirmed { expected },
        (false, None) => {
            return Err(ApiError::BadRequest(
                "expected_count: required to replay (the count a dry run answered)".into(),
            ));
        }
    };
    if let Some(status) = request.status.as_deref()
        && status != "failed"
    {
        return Err(ApiError::BadRequest(format!(
            "status: {:?} cannot be replayed; a bulk replay takes failed deliveries only (status \"failed\", or leave it out)",
            app::headers::cut(status, 40)
        )));
    }
    // A program sends `match` as the JSON object it is; its text is read as the events list reads it.
    let matching = match request.matching {
        None => None,
        Some(serde_json::Value::Object(object)) => {
            Some(serde_json::Value::Object(object).to_string())
        }
        Some(serde_json::Value::String(text)) => Some(text),
        Some(_) => {
            return Err(ApiError::BadRequest(
                "match: must be a JSON object the body contains, like {\"customer\": \"cus_123\"}"
                    .into(),
            ));
        }
    };
    let filter = EventFilter {
        source: request.source,
        outcome: request.outcome,
        event_type: request.event_type,
        object_id: request.object_id,
        event_id: request.event_id,
        from: request.from,
        to: request.to,
        r#match: matching,
        tz: Some("UTC".into()),
        visible_sources: caller.sources.clone(),
        ..EventFilter::default()
    };
    let (matched, done) = replay_filter(&state.db, &state.config, &filter, &caller.actor, mode)
        .await
        .map_err(|e| match e {
            FilterReplayError::Query(e) => ApiError::from(e),
            FilterReplayError::TooMany => ApiError::BadRequest(format!(
                "more than {} failed deliveries match; narrow the filter",
                app::model::BULK_REPLAY_LIMIT
            )),
            FilterReplayError::Replay(ReplayError::CountChanged { expected, now }) => {
                ApiError::CountChanged {
                    expected,
                    actual: now,
                }
            }
            FilterReplayError::Replay(ReplayError::Db(e)) => ApiError::from(e),
            FilterReplayError::Replay(other) => ApiError::BadRequest(other.to_string()),
        })?;
    if !request.dry_run {
        state.forward_wake.notify_one();
        state.feed.committed();
    }
    Ok(Json(BulkAnswer {
        matched,
        count: done.outcomes.len(),
        dry_run: request.dry_run,
        outcomes: done
            .breakdown()
            .into_iter()
            .map(|(name, n)| (name.to_string(), n))
            .collect(),
        skipped: BulkSkipped {
            replays: done.skipped.replays,
            resolved: done.skipped.resolved,
            same_failure: done.skipped.same_failure,
            unknown_source: done.skipped.unknown_source,
            body_expired: done.skipped.body_expired,
        },
    }))
}
