//! Problems for programs (contract section 14): `GET /api/v1/problems` lists the causes
//! `/problems` shows, each with a stable id; `POST /api/v1/problems/{id}/state` gives a cause a
//! state as the page does, audited with the token's name. Both call the page's own functions
//! (`app::db::problems`). A token limited to some sources sees those sources' causes alone
//! (a destination's are for tokens of every source).

use super::ApiError;
use super::doc::page;
use super::extract::{ApiPath, Body, NoParams, Operator, Query, Viewer, limit};
use crate::AppState;
use app::db::problems::{StateError, covered, listed, set_state};
use app::model::{Cause, ProblemFilter, ProblemInfo, Stage, StateChoice};
use axum::Json;
use axum::extract::State;

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ProblemsQuery {
    /// `open` (the default; acknowledged ones too), `acknowledged`, `resolved`, `ignored` or
    /// `all`.
    state: Option<String>,
    /// A configured source (or a destination, for forwarding's problems).
    source: Option<String>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Problems of the page, 1 to 500 (100 when not given).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    limit: Option<String>,
}

page!(
    /// Problems, the most recently failing first.
    ProblemPage of ProblemInfo
);

/// The problems of a state, as `/problems` lists them.
#[utoipa::path(
    get,
    path = "/api/v1/problems",
    operation_id = "list_problems",
    tag = "problems",
    params(ProblemsQuery),
    responses((status = 200, description = "A page of problems", body = ProblemPage))
)]
pub(super) async fn list(
    State(state): State<AppState>,
    Query(query): Query<ProblemsQuery>,
    Viewer(caller): Viewer,
) -> Result<Json<ProblemPage>, ApiError> {
    let filter = match query.state.as_deref() {
        None => ProblemFilter::Open,
        Some(text) => ProblemFilter::parse(text).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "state: {text:?} is not one of {}",
                ProblemFilter::spellings()
            ))
        })?,
    };
    let limit = limit(query.limit.as_deref())?;
    let all = listed::listed(
        &state.db,
        filter,
        query.source.as_deref(),
        caller.sources.as_deref(),
    )
    .await?;
    let start = match query.cursor.as_deref() {
        None => 0,
        Some(after) => {
            all.iter()
                .position(|p| p.id.to_string() == after)
                .ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "cursor: {after:?} is not a cursor from a previous page"
                    ))
                })?
                + 1
        }
    };
    let more = all.len() > start + limit;
    let data: Vec<ProblemInfo> = all.into_iter().skip(start).take(limit).collect();
    let next_cursor = more
        .then(|| data.last().map(|p| p.id.to_string()))
        .flatten();
    Ok(Json(ProblemPage { data, next_cursor }))
}

/// `{"state": "resolved"}`; `reason` is required to ignore; `expected_count` guards resolving
/// and ignoring (the `open_failures` the caller saw): another count now is a 409 that says it,
/// and nothing changes.
#[derive(serde::Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"state": "resolved", "reason": "the mapping is fixed", "expected_count": 34}))]
pub struct StateRequest {
    /// `acknowledged`, `resolved`, `ignored` or `open`: required.
    state: Option<String>,
    reason: Option<String>,
    expected_count: Option<i64>,
}

/// What setting the state did.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct StateAnswer {
    pub id: i64,
    pub state: String,
    /// The failures it covers, and in words.
    pub covers: i64,
    pub covers_words: String,
    /// Whether it changed anything (setting the state a cause has changes nothing).
    pub changed: bool,
}

/// Gives a problem a state, as its page does.
#[utoipa::path(
    post,
    path = "/api/v1/problems/{id}/state",
    operation_id = "set_problem_state",
    tag = "problems",
    params(("id" = i64, Path, description = "The problem's id")),
    request_body = StateRequest,
    responses(
        (status = 200, description = "Its state now", body = StateAnswer),
        (status = 409, description = "Its count is not `expected_count`, or it has no failure left to set a state on: nothing changed", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn set(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    Query(NoParams {}): Query<NoParams>,
    Operator(caller): Operator,
    Body(request): Body<StateRequest>,
) -> Result<Json<StateAnswer>, ApiError> {
    let not_found = || ApiError::NotFound(format!("there is no problem {id}"));
    let id: i64 = id.parse().map_err(|_| not_found())?;
    let cause: Cause = listed::cause_by_id(&state.db, id)
        .await?
        .filter(|cause| match &caller.sources {
            None => true,
            Some(sources) => cause.outcome != Stage::Forward && sources.contains(&cause.source),
        })
        .ok_or_else(not_found)?;
    let Some(text) = request.state.as_deref() else {
        return Err(ApiError::BadRequest(format!(
            "state: required, one of {}",
            StateChoice::spellings()
        )));
    };
    let choice = StateChoice::parse(text).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "state: {text:?} is not one of {}",
            StateChoice::spellings()
        ))
    })?;
    // A program confirms the count it saw, or the count there is now.
    let confirmed = match request.expected_count {
        Some(n) => n,
        None => covered(&state.db.dashboard, &cause).await?,
    };
    let change = set_state(
        &state.db,
        &cause,
        choice.state(),
        request.reason.as_deref(),
        Some(confirmed),
        &caller.actor,
    )
    .await
    .map_err(|e| match e {
        StateError::NoSuchCause(_) => ApiError::Conflict(format!(
            "problem {id} has no failure left to set a state on: nothing changed"
        )),
        StateError::CountChanged { covers, .. } => ApiError::CountChanged {
            expected: usize::try_from(confirmed).unwrap_or(0),
            actual: usize::try_from(covers).unwrap_or(0),
        },
        StateError::Db(e) => ApiError::from(e),
        other => ApiError::BadRequest(other.to_string()),
    })?;
    if change.changed {
        tracing::info!(token = %caller.name, problem = id, state = choice.as_str(), "problem state set through the API");
    }
    Ok(Json(StateAnswer {
        id,
        state: choice.as_str().into(),
        covers: change.covers,
        covers_words: change.covers_words,
        changed: change.changed,
    }))
}
