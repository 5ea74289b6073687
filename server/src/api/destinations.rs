//! The destinations, as their pages show them and do: `GET /api/v1/destinations`,
//! `GET …/{name}/deliveries`, `POST …/{name}/deliveries/{id}/retry`, `POST …/{name}/retry`
//! (every dead delivery of a filter, guarded by `expected_count`), `POST …/{name}/pause` and
//! `…/resume`. Each calls the pages' own function in `app::db::destinations`, audited with the
//! token's name. A destination carries the deliveries of every source, so these are for tokens
//! of every source: a token limited to some gets 404.

use super::{answer, caller, params};
use crate::AppState;
use crate::api::problem::ApiError;
use crate::request_id::RequestId;
use app::auth::tokens::Caller;
use app::db::conditions::QueryError;
use app::db::destinations::{self, Actor, RetryError};
use app::model::{ForwardFilter, Role};
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

/// Who acts, for the audit log: the token, from the API.
fn actor(caller: &Caller) -> Actor<'_> {
    Actor {
        name: &caller.name,
        address: "api",
    }
}

/// The caller, when its token covers every source (else the destinations do not exist for it).
async fn unlimited(state: &AppState, headers: &HeaderMap, role: Role) -> Result<Caller, ApiError> {
    let caller = caller(state, headers, role).await?;
    if caller.sources.is_some() {
        return Err(ApiError::NotFound(
            "destinations carry every source's deliveries: they are for tokens of every source"
                .into(),
        ));
    }
    Ok(caller)
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

fn query_error(e: QueryError) -> ApiError {
    match e {
        QueryError::BadFilter(why) => ApiError::BadRequest(why),
        QueryError::Db(e) => ApiError::from(e),
    }
}

pub(super) async fn list(
    State(state): State<AppState>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        params(query.as_deref(), &[])?;
        unlimited(&state, &headers, Role::Viewer).await?;
        let list = destinations::summaries(&state.db, &configured(&state)).await?;
        let data = serde_json::to_value(list).map_err(|_| ApiError::Unavailable)?;
        Ok(serde_json::json!({ "data": data, "next_cursor": null }).to_string())
    }
    .await;
    answer(result, &request_id)
}

pub(super) async fn deliveries(
    State(state): State<AppState>,
    Path(name): Path<String>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        let given = params(query.as_deref(), &["status", "source", "q", "cursor"])?;
        unlimited(&state, &headers, Role::Viewer).await?;
        let filter = ForwardFilter {
            status: given.get("status"),
            source: given.get("source"),
            q: given.get("q"),
        };
        let (rows, next) =
            destinations::deliveries(&state.db, &name, &filter, given.get("cursor").as_deref())
                .await
                .map_err(query_error)?;
        let data = serde_json::to_value(rows).map_err(|_| ApiError::Unavailable)?;
        Ok(serde_json::json!({ "data": data, "next_cursor": next }).to_string())
    }
    .await;
    answer(result, &request_id)
}

pub(super) async fn retry_one(
    State(state): State<AppState>,
    Path((name, id)): Path<(String, String)>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result = async {
        params(query.as_deref(), &[])?;
        let caller = unlimited(&state, &headers, Role::Operator).await?;
        let id: i64 = id
            .parse()
            .map_err(|_| ApiError::NotFound(format!("there is no forward delivery {id}")))?;
        destinations::retry_one(&state.db, &name, id, &actor(&caller))
            .await
            .map_err(|e| match e {
                RetryError::Refused(why) => ApiError::Conflict(why),
                RetryError::Query(e) => query_error(e),
            })?;
        state.forward_wake.notify_one();
        Ok(serde_json::json!({ "retried": 1 }).to_string())
    }
    .await;
    answer(result, &request_id)
}

/// `{"status"?, "source"?, "q"?, "dry_run"?, "expected_count"?}`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryRequest {
    source: Option<String>,
    q: Option<String>,
    #[serde(default)]
    dry_run: bool,
    expected_count: Option<i64>,
}

pub(super) async fn retry_dead(
    State(state): State<AppState>,
    Path(name): Path<String>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let result = async {
        params(query.as_deref(), &[])?;
        let caller = unlimited(&state, &headers, Role::Operator).await?;
        let request: RetryRequest = serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest(format!("the body: {e}")))?;
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
        let (count, retried) = match done {
            Ok(done) => done,
            Err(RetryError::Refused(_)) => {
                // The count changed: say what it is now, nothing was done.
                let (actual, _) =
                    destinations::retry_dead(&state.db, &name, &filter, None, &actor(&caller))
                        .await
                        .map_err(|e| match e {
                            RetryError::Refused(why) => ApiError::Conflict(why),
                            RetryError::Query(e) => query_error(e),
                        })?;
                return Err(ApiError::CountChanged {
                    expected: usize::try_from(request.expected_count.unwrap_or(0)).unwrap_or(0),
                    actual: usize::try_from(actual).unwrap_or(0),
                });
            }
            Err(RetryError::Query(e)) => return Err(query_error(e)),
        };
        if retried {
            state.forward_wake.notify_one();
        }
        Ok(serde_json::json!({
            "count": count,
            "dry_run": request.dry_run,
            "retried": retried,
        })
        .to_string())
    }
    .await;
    answer(result, &request_id)
}

/// `POST …/pause` and `…/resume`.
async fn set_paused(
    state: AppState,
    name: String,
    request_id: RequestId,
    query: Option<String>,
    headers: HeaderMap,
    paused: bool,
) -> Response {
    let result = async {
        params(query.as_deref(), &[])?;
        let caller = unlimited(&state, &headers, Role::Operator).await?;
        let known = configured(&state).iter().any(|(n, _)| *n == name);
        if !known {
            return Err(ApiError::NotFound(format!(
                "no destination named {name:?} is configured"
            )));
        }
        let changed = destinations::set_paused(&state.db, &name, paused, &actor(&caller)).await?;
        if !paused {
            state.forward_wake.notify_one();
        }
        Ok(serde_json::json!({ "paused": paused, "changed": changed }).to_string())
    }
    .await;
    answer(result, &request_id)
}

pub(super) async fn pause(
    State(state): State<AppState>,
    Path(name): Path<String>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    set_paused(state, name, request_id, query, headers, true).await
}

pub(super) async fn resume(
    State(state): State<AppState>,
    Path(name): Path<String>,
    request_id: RequestId,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    set_paused(state, name, request_id, query, headers, false).await
}
