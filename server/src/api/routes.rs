//! Routes for programs (contract section 16): `GET /api/v1/routes` lists the configured routes a
//! token's sources have; `POST /api/v1/routes/preview` counts what a route would match among a
//! source's newest deliveries (`app::db::routes::preview`, as `/sources` shows it), bounded like
//! a payload search: one per caller, a few per process, a deadline.

use super::ApiError;
use super::doc::page;
use super::extract::{Body, NoParams, PageQuery, Query, Viewer, page_by_name};
use crate::AppState;
use app::db::routes::{MAX_PREVIEW, info, preview as run_preview};
use app::db::search_bounds::search_deadline;
use app::model::{RouteInfo, RoutePreview};
use app::routing::Conditions;
use axum::Json;
use axum::extract::State;

page!(
    /// Routes, in the configuration's order.
    RoutePage of RouteInfo
);

/// The configured routes of the sources the token sees.
#[utoipa::path(
    get,
    path = "/api/v1/routes",
    operation_id = "list_routes",
    tag = "destinations",
    params(PageQuery),
    responses((status = 200, description = "The routes the token sees", body = RoutePage))
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Query(query): Query<PageQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<RoutePage>, ApiError> {
    let routes: Vec<RouteInfo> = state
        .config
        .routes
        .iter()
        .filter(|r| caller.sees(&r.source))
        .map(info)
        .collect();
    let (data, next_cursor) = page_by_name(routes, |r: &RouteInfo| &r.name, &query)?;
    Ok(Json(RoutePage { data, next_cursor }))
}

/// A route to try: the source, and the conditions a route would have.
#[derive(serde::Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "shop", "event_types": ["invoice.*"], "match": {"snapshot": {"status": "paid"}}, "limit": 1000}))]
pub struct PreviewRequest {
    /// A configured source: required.
    source: Option<String>,
    /// Globs of the whole event type (`*` is any run of characters); absent: every event type.
    event_types: Option<Vec<String>>,
    /// A JSON object the delivery's JSON contains, as `/events`' `match`; absent: every delivery.
    #[serde(rename = "match")]
    #[schema(value_type = Option<Object>)]
    matches: Option<serde_json::Value>,
    /// How many of the newest deliveries to consider, 1 to 10,000 (1,000 when not given).
    limit: Option<u32>,
}

/// How many of a source's newest deliveries that applied or were accepted a route would match.
#[utoipa::path(
    post,
    path = "/api/v1/routes/preview",
    operation_id = "preview_route",
    tag = "destinations",
    request_body = PreviewRequest,
    responses((status = 200, description = "What the route would match", body = RoutePreview))
)]
pub(super) async fn preview(
    State(state): State<AppState>,
    Query(NoParams {}): Query<NoParams>,
    Viewer(caller): Viewer,
    Body(request): Body<PreviewRequest>,
) -> Result<Json<RoutePreview>, ApiError> {
    let Some(source) = request.source else {
        return Err(ApiError::BadRequest("source: required".into()));
    };
    if state.config.source(&source).is_none() || !caller.sees(&source) {
        return Err(ApiError::NotFound(format!("there is no source {source:?}")));
    }
    let limit = request.limit.unwrap_or(1_000);
    if !(1..=MAX_PREVIEW).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit: {limit} is not between 1 and {MAX_PREVIEW}"
        )));
    }
    let conditions = conditions(request.event_types, request.matches)?;
    let deadline = search_deadline(std::time::Duration::from_secs(
        state.config.server.request_timeout_secs,
    ));
    let mut answers = run_preview(
        &state.db,
        &caller.actor,
        &[(&source, &conditions)],
        limit,
        deadline,
    )
    .await?;
    Ok(Json(answers.remove(0)))
}

/// A request's conditions, checked as a route's are in the file.
fn conditions(
    event_types: Option<Vec<String>>,
    matches: Option<serde_json::Value>,
) -> Result<Conditions, ApiError> {
    let event_types = event_types
        .map(|texts| app::routing::parse_event_types(&texts))
        .transpose()
        .map_err(|why| ApiError::BadRequest(format!("event_types: {why}")))?;
    let matches = match matches {
        None => None,
        Some(value) => Some(
            app::routing::parse_match(&value.to_string())
                .map_err(|why| ApiError::BadRequest(format!("match: {why}")))?,
        ),
    };
    Ok(Conditions {
        event_types,
        matches,
    })
}
