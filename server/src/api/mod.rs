//! `/api/v1`: hookbox's reads and actions for programs, with API tokens
//! (`Authorization: Bearer hbt_…`, [`app::auth::tokens`]). Every handler calls the same domain
//! functions the dashboard's pages do; this module adds the token, its scope and rate, the
//! query's strict reading and the problem documents of errors ([`problem`]).
//!
//! - A token limited to some sources sees nothing of the others: their rows are 404.
//! - Each token makes at most [`TOKEN_REQUESTS_PER_SEC`] requests a second per process (429).
//! - Reads run on the dashboard's pool, under its statement timeout; request bodies are at most
//!   [`MAX_BODY_BYTES`].
//! - An unknown query parameter is a 400 naming it.

mod bulk;
mod destinations;
mod events;
mod objects;
mod operators;
pub mod problem;
mod reads;
mod replay;

use crate::AppState;
use crate::request_id::RequestId;
use app::auth::tokens::{AuthFailure, Caller, authenticate};
use app::model::Role;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use problem::ApiError;

/// Requests a token makes a second, per process (a burst of as many).
pub const TOKEN_REQUESTS_PER_SEC: u32 = 20;
/// Requests one client address makes a second, per process, whatever their tokens: checked
/// before any token is looked up, so made-up tokens cost no more than this in database reads.
pub const CLIENT_REQUESTS_PER_SEC: u32 = 50;
/// The largest request body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/api/v1/sources", get(reads::sources))
        .route("/api/v1/events", get(events::list))
        .route("/api/v1/events/replay", post(bulk::replay))
        .route("/api/v1/events/{id}", get(reads::event))
        .route("/api/v1/events/{id}/replay", post(replay::replay))
        .route(
            "/api/v1/sources/{source}/objects/{object_id}",
            get(objects::object),
        )
        .route(
            "/api/v1/sources/{source}/objects/{object_id}/revisions",
            get(objects::revisions),
        )
        .route("/api/v1/destinations", get(destinations::list))
        .route(
            "/api/v1/destinations/{name}/deliveries",
            get(destinations::deliveries),
        )
        .route(
            "/api/v1/destinations/{name}/deliveries/{id}/retry",
            post(destinations::retry_one),
        )
        .route(
            "/api/v1/destinations/{name}/retry",
            post(destinations::retry_dead),
        )
        .route(
            "/api/v1/destinations/{name}/pause",
            post(destinations::pause),
        )
        .route(
            "/api/v1/destinations/{name}/resume",
            post(destinations::resume),
        )
        .route("/api/v1/rejected", get(operators::rejected))
        .route("/api/v1/audit", get(operators::audit))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(state, per_client))
}

/// Every API request counts against its client address's rate first (429 over it).
async fn per_client(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let client = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|axum::extract::ConnectInfo(addr)| {
            state
                .settings
                .trusted_proxies
                .client_address(addr.ip(), request.headers())
                .to_string()
        })
        .unwrap_or_else(|| "unknown".into());
    if let Err(wait) = state
        .limiter
        .take(&format!("api client {client}"), CLIENT_REQUESTS_PER_SEC)
    {
        let request_id = RequestId::of(request.headers());
        return ApiError::TooManyRequests {
            retry_after_secs: wait.as_secs().max(1),
        }
        .into_problem(&request_id);
    }
    next.run(request).await
}

/// The caller of a request: a live token within its rate, with at least `role`.
async fn caller(state: &AppState, headers: &HeaderMap, role: Role) -> Result<Caller, ApiError> {
    let caller = authenticate(&state.db, headers)
        .await
        .map_err(|failure| match failure {
            AuthFailure::Refused(why) => ApiError::Unauthorized(why.to_string()),
            AuthFailure::Db(e) => ApiError::from(e),
        })?;
    if let Err(wait) = state.limiter.take(
        &format!("api token {}", caller.name),
        TOKEN_REQUESTS_PER_SEC,
    ) {
        return Err(ApiError::TooManyRequests {
            retry_after_secs: wait.as_secs().max(1),
        });
    }
    if role == Role::Operator && caller.role != Role::Operator {
        return Err(ApiError::Forbidden(
            "this is an operator's action; the token is a viewer's".into(),
        ));
    }
    Ok(caller)
}

/// A request's query parameters, read strictly ([`params`]).
struct Params(Vec<(String, String)>);

impl Params {
    /// The value of parameter `name`, if given.
    fn get(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// `limit`: 1 to `max`, `default` when absent; else a 400 naming it.
    fn limit(&self, default: usize, max: usize) -> Result<usize, ApiError> {
        match self.get("limit") {
            None => Ok(default),
            Some(text) => text
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| {
                    ApiError::BadRequest(format!("limit: {text:?} is not a number from 1 to {max}"))
                }),
        }
    }
}

/// The query's parameters, each at most once, every one among `known`; else a 400 naming it.
fn params(query: Option<&str>, known: &[&str]) -> Result<Params, ApiError> {
    let mut found: Vec<(String, String)> = Vec::new();
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if !known.contains(&name.as_ref()) {
            let mut known = known.to_vec();
            known.sort_unstable();
            return Err(ApiError::BadRequest(format!(
                "unknown query parameter {name:?} (known: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
        if found.iter().any(|(seen, _)| *seen == name) {
            return Err(ApiError::BadRequest(format!(
                "query parameter {name:?} is given twice"
            )));
        }
        found.push((name.into_owned(), value.into_owned()));
    }
    Ok(Params(found))
}

/// An archive row as every answer shows it.
fn event_json(row: &app::model::EventRow) -> serde_json::Value {
    serde_json::json!({
        "id": row.id,
        "source": row.source,
        "event_id": row.event_id,
        "object_id": row.object_id,
        "revision": row.revision,
        "type": row.event_type,
        "status": row.status.as_str(),
        "outcome": row.outcome.as_str(),
        "error": row.error_message,
        "received_at": row.received_at,
        "replay_of": row.replay_of,
        "replayed_by": row.replayed_by,
        "resolved_by": row.resolved_by,
    })
}

/// The answer of a handler: its JSON, or its problem document.
fn answer(result: Result<String, ApiError>, request_id: &RequestId) -> axum::response::Response {
    use axum::response::IntoResponse;
    match result {
        Ok(json) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            json,
        )
            .into_response(),
        Err(e) => e.into_problem(request_id),
    }
}
