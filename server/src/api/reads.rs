//! `GET /api/v1/sources` and `GET /api/v1/events/{id}`.

use super::{answer, caller, params};
use crate::AppState;
use crate::api::problem::ApiError;
use crate::request_id::RequestId;
use app::model::Role;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use base64::Engine;

/// The configured sources the token sees, as the sources page lists them.
pub(super) async fn sources(
    State(state): State<AppState>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        params(query.as_deref(), &[])?;
        let caller = caller(&state, &headers, Role::Viewer).await?;
        let now = chrono::Utc::now();
        let summaries =
            app::db::sources::summaries(&state.db, &state.config, now, chrono_tz::UTC).await?;
        let data: Vec<serde_json::Value> = summaries
            .into_iter()
            .filter(|s| caller.sees(&s.name))
            .map(|s| {
                serde_json::json!({
                    "name": s.name,
                    "path": s.path,
                    "preset": s.preset,
                    "scheme": s.scheme,
                    "checks": s.scheme_words,
                    "mode": s.mode,
                    "forward": s.forward,
                    "rate_limit_per_sec": s.rate_limit_per_sec,
                    "last_received_at": s.last_received,
                    "received_24h": s.received_24h,
                    "silent": s.silence.silent,
                })
            })
            .collect();
        Ok(serde_json::json!({ "data": data, "next_cursor": null }).to_string())
    }
    .await;
    answer(result, &request_id)
}

/// One archived delivery: its row, the headers the token's role may see, the body (as JSON
/// when it is JSON, else base64) and its forward deliveries.
pub(super) async fn event(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        params(query.as_deref(), &[])?;
        let caller = caller(&state, &headers, Role::Viewer).await?;
        let not_found = || ApiError::NotFound(format!("there is no delivery {id}"));
        let id: i64 = id.parse().map_err(|_| not_found())?;
        let stored = app::db::events::stored_delivery(&state.db, id)
            .await?
            .filter(|stored| caller.sees(&stored.row.source))
            .ok_or_else(not_found)?;
        let shown = app::headers::shown_headers(
            &stored.headers_json,
            state.config.source(&stored.row.source),
            caller.role,
        );
        let headers: serde_json::Map<String, serde_json::Value> = shown
            .into_iter()
            .map(|(name, value, _)| (name, value.into()))
            .collect();
        let forwarded = app::db::destinations::produced_by(&state.db, id).await?;
        let mut event = super::event_json(&stored.row);
        event["headers"] = headers.into();
        event["forward_deliveries"] = forwarded
            .iter()
            .map(|f| {
                serde_json::json!({
                    "id": f.id,
                    "destination": f.destination,
                    "status": f.status.as_str(),
                    "attempts": f.attempts,
                    "next_attempt_at": f.next_attempt_at,
                    "last_status_code": f.last_status_code,
                    "delivered_at": f.delivered_at,
                })
            })
            .collect::<Vec<_>>()
            .into();
        // The body exactly as sent: JSON text embedded as it is, anything else as base64.
        let text = std::str::from_utf8(&stored.body)
            .ok()
            .filter(|text| app::json::parse(text).is_ok());
        let mut json = match text {
            Some(_) => {
                event["body"] = serde_json::Value::Null;
                event.to_string()
            }
            None => {
                event["body_base64"] = base64::engine::general_purpose::STANDARD
                    .encode(&stored.body)
                    .into();
                event.to_string()
            }
        };
        if let Some(text) = text {
            // Replace the placeholder with the raw text, so numbers keep every digit.
            let at = json.rfind("\"body\":null").unwrap_or(json.len());
            json.replace_range(at..at + "\"body\":null".len(), &format!("\"body\":{text}"));
        }
        Ok(json)
    }
    .await;
    answer(result, &request_id)
}
