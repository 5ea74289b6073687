//! The destinations, as their pages show them and do: `GET /api/v1/destinations`,
//! `GET …/{name}/deliveries`, `POST …/{name}/deliveries/{id}/retry`, `POST …/{name}/retry`
//! (every dead delivery of a filter, guarded by `expected_count`), `POST …/{name}/pause` and
//! `…/resume`. Each calls the pages' own function in `app::db::destinations`, audited with the
//! token's name. A destination carries the deliveries of every source, so these are for tokens
//! of every source: a token limited to some gets 404.

use super::ApiError;
use super::doc::page;
use super::extract::{
    ApiPath, Body, NoParams, Operator, PageQuery, Query, Viewer, limit, page_by_name,
};
use crate::AppState;
use app::auth::tokens::Caller;
use app::db::destinations::{self, Actor, RetryError};
use app::model::{DestinationSummary, ForwardFilter, ForwardRow};
use axum::Json;
use axum::extract::State;

/// Who acts, for the audit log: the token, from the API.
fn actor(caller: &Caller) -> Actor<'_> {
    Actor {
        name: &caller.actor,
        address: "api",
    }
}

/// A destination carries every source's deliveries: it does not exist for a token limited to
/// some.
fn of_every_source(caller: &Caller) -> Result<(), ApiError> {
    if caller.sources.is_some() {
        return Err(ApiError::NotFound(
            "destinations carry every source's deliveries: they are for tokens of every source"
                .into(),
        ));
    }
    Ok(())
}

/// The configured destinations, as `(name, URL with credentials redacted)`.
fn configured(state: &AppState) -> Vec<(String, String)> {
    state
        .config
        .destinations
        .iter()
        .map(|d| (d.name.clone(), app::config::settings::redact_url(&d.url)))
        .collect()
}

page!(
    /// The destinations, in the configuration's order.
    DestinationPage of DestinationSummary
);

/// The destinations, with their backlogs, as `/destinations` shows them.
#[utoipa::path(
    get,
    path = "/api/v1/destinations",
    operation_id = "list_destinations",
    tag = "destinations",
    params(PageQuery),
    responses((status = 200, description = "The destinations", body = DestinationPage))
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Query(query): Query<PageQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<DestinationPage>, ApiError> {
    of_every_source(&caller)?;
    let data = destinations::summaries(&state.db, &configured(&state)).await?;
    let (data, next_cursor) = page_by_name(data, |d: &DestinationSummary| &d.name, &query)?;
    Ok(Json(DestinationPage { data, next_cursor }))
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// `pending`, `delivered`, `superseded` or `dead`.
    status: Option<String>,
    /// A configured source.
    source: Option<String>,
    /// An event id or object id.
    q: Option<String>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Rows of the page, 1 to 500 (50 when not given).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    limit: Option<String>,
}

page!(
    /// Forward deliveries, newest first, each with its attempts.
    DeliveryPage of ForwardRow
);

/// A destination's deliveries, newest first, as its page lists them.
#[utoipa::path(
    get,
    path = "/api/v1/destinations/{name}/deliveries",
    operation_id = "list_deliveries",
    tag = "destinations",
    params(("name" = String, Path, description = "A destination"), DeliveriesQuery),
    responses((status = 200, description = "A page of deliveries", body = DeliveryPage))
)]
pub(super) async fn deliveries(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(query): Query<DeliveriesQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<DeliveryPage>, ApiError> {
    of_every_source(&caller)?;
    let limit = limit(query.limit.as_deref())?;
    let filter = ForwardFilter {
        status: query.status,
        source: query.source,
        q: query.q,
    };
    let (data, next_cursor) =
        destinations::deliveries(&state.db, &name, &filter, query.cursor.as_deref(), limit).await?;
    Ok(Json(DeliveryPage { data, next_cursor }))
}

/// What a retry did.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Retried {
    /// Deliveries set to be sent again.
    pub retried: u32,
}

/// One dead delivery sent again, as its page's retry does it.
#[utoipa::path(
    post,
    path = "/api/v1/destinations/{name}/deliveries/{id}/retry",
    operation_id = "retry_delivery",
    tag = "destinations",
    params(
        ("name" = String, Path, description = "A destination"),
        ("id" = i64, Path, description = "The forward delivery's id"),
    ),
    responses(
        (status = 200, description = "It is pending again", body = Retried),
        (status = 409, description = "It is not dead: nothing was done", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn retry_one(
    State(state): State<AppState>,
    ApiPath((name, id)): ApiPath<(String, String)>,
    Query(NoParams {}): Query<NoParams>,
    Operator(caller): Operator,
) -> Result<Json<Retried>, ApiError> {
    of_every_source(&caller)?;
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::NotFound(format!("there is no forward delivery {id}")))?;
    destinations::retry_one(&state.db, &name, id, &actor(&caller)).await?;
    state.forward_wake.notify_one();
    Ok(Json(Retried { retried: 1 }))
}

/// The dead deliveries of a filter, and the count a dry run answered.
#[derive(serde::Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "shop", "dry_run": true}))]
pub struct RetryRequest {
    /// A configured source.
    source: Option<String>,
    /// An event id or object id.
    q: Option<String>,
    /// Count what would be retried; retry nothing.
    #[serde(default)]
    dry_run: bool,
    /// Required to retry: the `count` a dry run answered (409 with `actual_count` otherwise).
    #[schema(minimum = 0)]
    expected_count: Option<u64>,
}

/// What the retry of dead deliveries did, or would do.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(example = json!({"count": 31, "dry_run": true, "retried": false,
    "by_answer": [{"class": "failed", "count": 25}, {"class": "refused", "count": 6}]}))]
pub struct RetryAnswer {
    /// Dead deliveries the filter matches: confirm it as `expected_count`.
    pub count: i64,
    pub dry_run: bool,
    /// Whether they were set to be sent again.
    pub retried: bool,
    /// The deliveries counted by their last answer, most first: a refusal (4xx) will most
    /// likely be refused again until the application changes.
    pub by_answer: Vec<AnswerShare>,
}

/// How many of the deliveries ended on one class of answer.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct AnswerShare {
    /// `refused` (a 4xx other than 408, 409, 425, 429), `later` (one of those), `failed` (5xx),
    /// `no_answer`, or `other`.
    pub class: &'static str,
    pub count: i64,
}

/// Every dead delivery of a filter sent again, guarded by their count.
#[utoipa::path(
    post,
    path = "/api/v1/destinations/{name}/retry",
    operation_id = "retry_dead_deliveries",
    tag = "destinations",
    params(("name" = String, Path, description = "A destination")),
    request_body = RetryRequest,
    responses(
        (status = 200, description = "Retried (or, on a dry run, how many would be)", body = RetryAnswer),
        (status = 409, description = "The count changed: nothing was done; `actual_count` says how many match now", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn retry_dead(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Operator(caller): Operator,
    Body(request): Body<RetryRequest>,
) -> Result<Json<RetryAnswer>, ApiError> {
    of_every_source(&caller)?;
    let filter = ForwardFilter {
        status: None,
        source: request.source,
        q: request.q,
    };
    let confirmation = match (request.dry_run, request.expected_count) {
        (true, _) => None,
        (false, Some(n)) => Some(format!("retry {n}")),
        (false, None) => {
            return Err(ApiError::BadRequest(
                "expected_count: required to retry (the count a dry run answered)".into(),
            ));
        }
    };
    let done = destinations::retry_dead(
        &state.db,
        &name,
        &filter,
        confirmation.as_deref(),
        &actor(&caller),
    )
    .await;
    let (count, retried, by_answer) = match done {
        Ok(done) => (done.matched, done.retried, done.by_answer),
        Err(RetryError::Refused(_)) => {
            // The count changed: say what it is now, nothing was done.
            let actual = destinations::retry_dead(&state.db, &name, &filter, None, &actor(&caller))
                .await?
                .matched;
            return Err(ApiError::CountChanged {
                expected: usize::try_from(request.expected_count.unwrap_or(0)).unwrap_or(0),
                actual: usize::try_from(actual).unwrap_or(0),
            });
        }
        Err(RetryError::Query(e)) => return Err(e.into()),
    };
    if retried {
        state.forward_wake.notify_one();
    }
    Ok(Json(RetryAnswer {
        count,
        dry_run: request.dry_run,
        retried,
        by_answer: by_answer
            .into_iter()
            .map(|share| AnswerShare {
                class: share.class.name(),
                count: share.count,
            })
            .collect(),
    }))
}

/// Whether the destination is paused now, and whether this call changed it.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Paused {
    pub paused: bool,
    pub changed: bool,
}

/// `POST …/pause` and `…/resume`.
async fn set_paused(
    state: &AppState,
    name: &str,
    caller: &Caller,
    paused: bool,
) -> Result<Json<Paused>, ApiError> {
    of_every_source(caller)?;
    if !configured(state).iter().any(|(n, _)| n == name) {
        return Err(ApiError::NotFound(format!(
            "no destination named {name:?} is configured"
        )));
    }
    let changed = destinations::set_paused(&state.db, name, paused, &actor(caller)).await?;
    if !paused {
        state.forward_wake.notify_one();
    }
    Ok(Json(Paused { paused, changed }))
}

/// Pauses a destination: nothing is sent to it until it is resumed.
#[utoipa::path(
    post,
    path = "/api/v1/destinations/{name}/pause",
    operation_id = "pause_destination",
    tag = "destinations",
    params(("name" = String, Path, description = "A configured destination")),
    responses((status = 200, description = "It is paused", body = Paused))
)]
pub(super) async fn pause(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Operator(caller): Operator,
) -> Result<Json<Paused>, ApiError> {
    set_paused(&state, &name, &caller, true).await
}

/// Resumes a paused destination.
#[utoipa::path(
    post,
    path = "/api/v1/destinations/{name}/resume",
    operation_id = "resume_destination",
    tag = "destinations",
    params(("name" = String, Path, description = "A configured destination")),
    responses((status = 200, description = "It is sending again", body = Paused))
)]
pub(super) async fn resume(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Operator(caller): Operator,
) -> Result<Json<Paused>, ApiError> {
    set_paused(&state, &name, &caller, false).await
}
