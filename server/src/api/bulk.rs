//! `POST /api/v1/events/replay`: the failed deliveries of a filter replayed, through the page's
//! own function ([`app::ingest::replay::replay_filter`]), guarded by the count: a replay that
//! would replay another number than `expected_count` writes nothing and is a 409 with the count.

use super::{answer, caller, params};
use crate::AppState;
use crate::api::problem::ApiError;
use crate::request_id::RequestId;
use app::ingest::replay::{Bulk, FilterReplayError, ReplayError, replay_filter};
use app::model::{EventFilter, Role};
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

/// The request: the filter of `GET /api/v1/events` (its status aside: failed deliveries are
/// replayed), with the count a dry run answered.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BulkRequest {
    source: Option<String>,
    outcome: Option<String>,
    #[serde(rename = "type")]
    event_type: Option<String>,
    object_id: Option<String>,
    event_id: Option<String>,
    from: Option<String>,
    to: Option<String>,
    #[serde(rename = "match")]
    matching: Option<String>,
    #[serde(default)]
    dry_run: bool,
    expected_count: Option<usize>,
}

pub(super) async fn replay(
    State(state): State<AppState>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = async {
        params(query.as_deref(), &[])?;
        let caller = caller(&state, &headers, Role::Operator).await?;
        let request: BulkRequest = serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest(format!("the body: {e}")))?;
        let mode = match (request.dry_run, request.expected_count) {
            (true, _) => Bulk::DryRun,
            (false, Some(expected)) => Bulk::Confirmed { expected },
            (false, None) => {
                return Err(ApiError::BadRequest(
                    "expected_count: required to replay (the count a dry run answered)".into(),
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
            r#match: request.matching,
            tz: Some("UTC".into()),
            visible_sources: caller.sources.clone(),
            ..EventFilter::default()
        };
        let (matched, done) = replay_filter(&state.db, &state.config, &filter, &caller.name, mode)
            .await
            .map_err(|e| match e {
                FilterReplayError::Query(app::db::conditions::QueryError::BadFilter(why)) => {
                    ApiError::BadRequest(why)
                }
                FilterReplayError::Query(app::db::conditions::QueryError::Db(e)) => {
                    ApiError::from(e)
                }
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
        }
        let outcomes: serde_json::Map<String, serde_json::Value> = done
            .breakdown()
            .into_iter()
            .map(|(name, n)| (name.to_string(), n.into()))
            .collect();
        Ok(serde_json::json!({
            "matched": matched,
            "count": done.outcomes.len(),
            "dry_run": request.dry_run,
            "outcomes": outcomes,
            "skipped": {
                "replays": done.skipped.replays,
                "resolved": done.skipped.resolved,
                "same_failure": done.skipped.same_failure,
                "unknown_source": done.skipped.unknown_source,
            },
        })
        .to_string())
    }
    .await;
    answer(result, &request_id)
}
