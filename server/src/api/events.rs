//! `GET /api/v1/events`: the archive by the `/events` page's filters, cursor-paged, through the
//! page's own function ([`app::db::events::find_events`]), limited to the token's sources.

use super::doc::page;
use super::extract::{Query, Viewer, limit};
use super::{ApiError, Event};
use crate::AppState;
use app::model::EventFilter;
use axum::Json;
use axum::extract::State;

/// The filters and paging `GET /api/v1/events` takes: the `/events` page's own.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// A configured source.
    source: Option<String>,
    /// `processed`, `skipped` or `failed`.
    status: Option<String>,
    /// An outcome (`applied`, `stale`, `duplicate`, `reused_event_id`, …).
    outcome: Option<String>,
    /// The event's type, exactly.
    #[serde(rename = "type")]
    event_type: Option<String>,
    /// The object's id, exactly.
    object_id: Option<String>,
    /// The sender's event id, exactly.
    event_id: Option<String>,
    /// From this date (`2026-12-01`) or RFC 3339 time, inclusive.
    from: Option<String>,
    /// To this date (the whole day counts) or RFC 3339 time, exclusive.
    to: Option<String>,
    /// Text the body holds (a bounded search: 429 when one runs for the token already).
    #[serde(rename = "match")]
    matching: Option<String>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Rows of the page, 1 to 500 (100 when not given).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    limit: Option<String>,
}

page!(
    /// Archived deliveries, newest first.
    EventPage of Event
);

/// The archive by the `/events` page's filters, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/events",
    operation_id = "list_events",
    tag = "events",
    params(EventsQuery),
    responses((status = 200, description = "A page of deliveries", body = EventPage))
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Query(query): Query<EventsQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<EventPage>, ApiError> {
    let limit = limit(query.limit.as_deref())?;
    let filter = EventFilter {
        source: query.source,
        status: query.status,
        outcome: query.outcome,
        event_type: query.event_type,
        object_id: query.object_id,
        event_id: query.event_id,
        from: query.from,
        to: query.to,
        r#match: query.matching,
        tz: Some("UTC".into()),
        visible_sources: caller.sources.clone(),
        ..EventFilter::default()
    };
    let page = app::db::events::find_events(
        &state.db,
        &filter,
        query.cursor.as_deref(),
        limit,
        &caller.actor,
        std::time::Duration::from_secs(state.config.server.request_timeout_secs),
    )
    .await?;
    Ok(Json(EventPage {
        data: page.rows.iter().map(Event::from).collect(),
        next_cursor: page.next_cursor,
    }))
}
