//! The JSON answers to an ingested delivery, one per outcome (`docs/webhooks.md`, section 4),
//! and the JSON answer every other answer of the endpoint is written with.

use app::ingest::Outcome;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// The body of an ingested delivery's answer. Fields in name order, as a JSON object of them
/// prints; the outer `Option` leaves a field out, an inner `None` is `null`.
#[derive(serde::Serialize, Default)]
struct Answer<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    current_revision: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delivered_as: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_id: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    existing_event_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    idempotent: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<i64>,
    status: &'static str,
}

/// The answer to an ingested delivery (`docs/webhooks.md`, section 4). `invalid_status` is the
/// 400 or 422 the envelope chose.
pub(super) fn outcome_answer(
    outcome: &Outcome,
    event_id: Option<&str>,
    invalid_status: Option<StatusCode>,
) -> Response {
    let event = Some(event_id);
    let (status, body) = match outcome {
        Outcome::Applied { revision } => (
            StatusCode::OK,
            Answer {
                status: "applied",
                event_id: event,
                revision: Some(*revision),
                ..Answer::default()
            },
        ),
        Outcome::Stale {
            revision,
            current_revision,
        } => (
            StatusCode::OK,
            Answer {
                status: "stale",
                event_id: event,
                revision: Some(*revision),
                current_revision: Some(*current_revision),
                ..Answer::default()
            },
        ),
        Outcome::Accepted => (
            StatusCode::OK,
            Answer {
                status: "accepted",
                event_id: event,
                ..Answer::default()
            },
        ),
        Outcome::Duplicate => (
            StatusCode::OK,
            Answer {
                status: "duplicate",
                event_id: event,
                idempotent: Some(true),
                ..Answer::default()
            },
        ),
        Outcome::ReplayedBody { original_event_id } => (
            StatusCode::OK,
            Answer {
                status: "duplicate",
                event_id: Some(Some(original_event_id)),
                idempotent: Some(true),
                delivered_as: event,
                ..Answer::default()
            },
        ),
        Outcome::ReusedEventId | Outcome::ReusedRevision { .. } => (
            StatusCode::CONFLICT,
            Answer {
                status: "conflict",
                reason: Some(outcome.name()),
                event_id: event,
                message: Some(outcome.error_message()),
                existing_event_id: match outcome {
                    Outcome::ReusedRevision {
                        existing_event_id: Some(holder),
                    } => Some(holder),
                    _ => None,
                },
                ..Answer::default()
            },
        ),
        Outcome::Invalid { reason } => (
            invalid_status.unwrap_or(StatusCode::UNPROCESSABLE_ENTITY),
            Answer {
                status: "invalid",
                reason: Some(reason),
                ..Answer::default()
            },
        ),
    };
    (status, axum::Json(body)).into_response()
}

/// `body` as the JSON answer with `status`.
pub(super) fn json(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}
