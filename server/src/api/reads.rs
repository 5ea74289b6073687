//! `GET /api/v1/sources` and `GET /api/v1/events/{id}`.

use super::doc::page;
use super::extract::{ApiPath, NoParams, PageQuery, Query, Viewer, page_by_name};
use super::{ApiError, Event};
use crate::AppState;
use axum::Json;
use axum::extract::State;
use base64::Engine;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// A configured source, as the sources page shows it.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Source {
    pub name: String,
    /// The endpoint's path (`/hooks/stripe`).
    pub path: String,
    /// The provider preset it was declared with, if any.
    pub preset: Option<String>,
    /// The scheme's name (`hmac-sha256`).
    pub scheme: String,
    /// What the scheme checks, in words.
    pub checks: String,
    /// `snapshot` or `dedup`.
    pub mode: String,
    /// The destinations its accepted deliveries are forwarded to.
    pub forward: Vec<String>,
    pub rate_limit_per_sec: Option<u32>,
    /// The newest delivery the sender made, if the archive still has one.
    #[schema(format = DateTime)]
    pub last_received_at: Option<String>,
    /// Deliveries the sender made in the last 24 hours.
    pub received_24h: u64,
    /// Whether the source has gone quiet for longer than it usually does.
    pub silent: bool,
}

page!(
    /// The configured sources the token sees, in the configuration's order.
    SourcePage of Source
);

/// The configured sources the token sees, as the sources page lists them.
#[utoipa::path(
    get,
    path = "/api/v1/sources",
    operation_id = "list_sources",
    tag = "sources",
    params(PageQuery),
    responses((status = 200, description = "The sources the token sees", body = SourcePage))
)]
pub(super) async fn sources(
    State(state): State<AppState>,
    Query(query): Query<PageQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<SourcePage>, ApiError> {
    let summaries =
        app::db::sources::summaries(&state.db, &state.config, chrono::Utc::now(), chrono_tz::UTC)
            .await?;
    let data = summaries
        .into_iter()
        .filter(|s| caller.sees(&s.name))
        .map(|s| Source {
            name: s.name,
            path: s.path,
            preset: s.preset,
            scheme: s.scheme,
            checks: s.scheme_words,
            mode: s.mode,
            forward: s.forward,
            rate_limit_per_sec: s.rate_limit_per_sec,
            last_received_at: s.last_received,
            received_24h: s.received_24h,
            silent: s.silence.silent,
        })
        .collect();
    let (data, next_cursor) = page_by_name(data, |s: &Source| &s.name, &query)?;
    Ok(Json(SourcePage { data, next_cursor }))
}

/// A forward delivery an archive row produced.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct ForwardSummary {
    /// Its id under `GET /api/v1/destinations/{name}/deliveries`.
    pub id: i64,
    pub destination: String,
    pub status: app::model::ForwardStatus,
    pub attempts: i32,
    #[schema(format = DateTime)]
    pub next_attempt_at: String,
    pub last_status_code: Option<i32>,
    #[schema(format = DateTime)]
    pub delivered_at: Option<String>,
}

/// One archived delivery, whole.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct EventDetail {
    #[serde(flatten)]
    pub event: Event,
    /// The request's headers the token's role may see (credentials and signatures redacted);
    /// null once they expired.
    pub headers: Option<BTreeMap<String, String>>,
    /// The body exactly as sent, when it is JSON (numbers keep every digit).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>, required = false)]
    pub body: Option<Box<RawValue>>,
    /// The body's bytes in base64, when it is not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub body_base64: Option<String>,
    /// When the body and headers expired (the source's `body_retention_days`): then there is no
    /// body, and its SHA-256 and size are given instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, required = false)]
    pub body_expired_at: Option<String>,
    /// The SHA-256 (hex) of the body as received, once it expired.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub body_sha256: Option<String>,
    /// The size in bytes of the body as received, once it expired.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub body_bytes: Option<i64>,
    /// The deliveries to destinations it produced.
    pub forward_deliveries: Vec<ForwardSummary>,
}

/// One archived delivery: its row, the headers the token's role may see, the body (as JSON
/// when it is JSON, else base64) and its forward deliveries.
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}",
    operation_id = "get_event",
    tag = "events",
    params(("id" = i64, Path, description = "The archive row's id")),
    responses((status = 200, description = "The delivery", body = EventDetail))
)]
pub(super) async fn event(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Viewer(caller): Viewer,
) -> Result<Json<EventDetail>, ApiError> {
    let not_found = || ApiError::NotFound(format!("there is no delivery {id}"));
    let archive_id: i64 = id.parse().map_err(|_| not_found())?;
    let stored = app::db::events::stored_delivery(&state.db, archive_id)
        .await?
        .filter(|stored| caller.sees(&stored.row.source))
        .ok_or_else(not_found)?;
    let headers = stored.expired.is_none().then(|| {
        app::headers::shown_headers(
            &stored.headers_json,
            state.config.source(&stored.row.source),
            caller.role,
        )
        .into_iter()
        .map(|(name, value, _)| (name, value))
        .collect()
    });
    let forward_deliveries = app::db::destinations::produced_by(&state.db, &[archive_id])
        .await?
        .into_iter()
        .map(|f| ForwardSummary {
            id: f.id,
            destination: f.destination,
            status: f.status,
            attempts: f.attempts,
            next_attempt_at: f.next_attempt_at,
            last_status_code: f.last_status_code,
            delivered_at: f.delivered_at,
        })
        .collect();
    // The body exactly as sent: JSON text embedded as it is, anything else as base64.
    let body = std::str::from_utf8(&stored.body)
        .ok()
        .filter(|text| app::json::parse(text).is_ok())
        .and_then(|text| RawValue::from_string(text.trim().to_string()).ok());
    let body_base64 = (body.is_none() && stored.expired.is_none())
        .then(|| base64::engine::general_purpose::STANDARD.encode(&stored.body));
    let expired = stored.expired;
    Ok(Json(EventDetail {
        event: Event::from(&stored.row),
        headers,
        body,
        body_base64,
        body_expired_at: expired
            .as_ref()
            .map(|x| x.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        body_sha256: expired.as_ref().map(|x| x.sha256.clone()),
        body_bytes: expired.map(|x| x.bytes),
        forward_deliveries,
    }))
}
