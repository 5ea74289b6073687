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
mod consumers;
mod destinations;
pub mod doc;
mod events;
mod extract;
mod feed;
mod objects;
mod operators;
pub mod problem;
mod problems;
mod reads;
mod replay;
mod routes;

use crate::AppState;
use crate::rate_limit::RateLimiter;
use crate::request_id::RequestId;
use app::auth::tokens::{AuthFailure, Caller, authenticate};
use app::model::Role;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderMap;
use axum::routing::{any, get};
use problem::ApiError;
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Requests a token makes a second, per process (a burst of as many).
pub const TOKEN_REQUESTS_PER_SEC: u32 = 20;
/// Requests one client address makes a second, per process, whatever their tokens: checked
/// before any token is looked up, so made-up tokens cost no more than this in database reads.
pub const CLIENT_REQUESTS_PER_SEC: u32 = 50;
/// Feed pages a token catching up reads a second, per process (a burst of as many), from a budget
/// of their own ([`Budget::FeedPages`]): 500 items a page, so a reader catching up on a backlog
/// goes at up to 50,000 items a second (a named consumer, which commits each page, 25,000) while
/// the token's other requests keep their [`TOKEN_REQUESTS_PER_SEC`]. One client address, before
/// its token is looked up, reads as many.
pub const FEED_PAGES_PER_SEC: u32 = 100;
/// The largest request body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Every route of the API with its operation in the document: one list, so neither can name
/// what the other lacks.
fn operations() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(doc::ApiDoc::openapi())
        .routes(routes!(reads::sources))
        .routes(routes!(events::list))
        .routes(routes!(bulk::replay))
        .routes(routes!(reads::event))
        .routes(routes!(replay::replay))
        .routes(routes!(objects::object))
        .routes(routes!(objects::revisions))
        .routes(routes!(destinations::list))
        .routes(routes!(destinations::deliveries))
        .routes(routes!(destinations::retry_one))
        .routes(routes!(destinations::retry_dead))
        .routes(routes!(destinations::pause))
        .routes(routes!(destinations::resume))
        .routes(routes!(routes::list))
        .routes(routes!(routes::preview))
        .routes(routes!(operators::rejected))
        .routes(routes!(operators::audit))
        .routes(routes!(problems::list))
        .routes(routes!(problems::set))
        .routes(routes!(feed::read))
        .routes(routes!(consumers::list))
        .routes(routes!(consumers::put, consumers::get, consumers::delete))
        .routes(routes!(consumers::items))
        .routes(routes!(consumers::commit))
        .routes(routes!(consumers::seek))
}

/// The OpenAPI 3.1 document of the API, as `GET /api/v1/openapi.json` answers it.
pub fn document() -> utoipa::openapi::OpenApi {
    let (_, mut document) = operations().split_for_parts();
    doc::ProblemResponses.modify(&mut document);
    document
}

pub fn router(state: AppState) -> Router<AppState> {
    let (routes, _) = operations().split_for_parts();
    // Serialized once; each answer shares these bytes.
    let document = axum::body::Bytes::from(document().to_json().unwrap_or_else(|e| {
        tracing::error!(error = %e, "the API's document did not serialize");
        "{}".into()
    }));
    routes
        .route(
            "/api/v1/openapi.json",
            get(move || {
                let document = document.clone();
                async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        document,
                    )
                }
            }),
        )
        .route(
            "/api/v1/{*rest}",
            any(
                |axum::extract::Path(rest): axum::extract::Path<String>| async move {
                    ApiError::NotFound(format!("the API has no /api/v1/{rest}"))
                },
            ),
        )
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(state, per_client))
}

/// What a request takes from its client address's and its token's rates: a page of the feed
/// (`GET /api/v1/feed`, a consumer's `GET …/items` and the `POST …/commit` that turns it) from
/// the feed's budget, everything else from the requests'. Each has buckets of its own, so a
/// reader catching up never spends the token's other requests, nor they its pages. A token takes
/// its pages from the feed's budget only while catching up (its last page was full,
/// `Limits::catching_up`); a reader keeping up reads at the token's request rate.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Budget {
    Requests,
    FeedPages,
}

impl Budget {
    /// The budget of a request by its method and path (before routing: a path no route takes is
    /// a cheap 404 either way).
    pub(crate) fn of(method: &axum::http::Method, path: &str) -> Budget {
        let consumers = |last: &str| {
            path.strip_prefix("/api/v1/feed/consumers/")
                .and_then(|rest| rest.strip_suffix(last))
                .is_some_and(|name| !name.is_empty() && !name.contains('/'))
        };
        let page =
            *method == axum::http::Method::GET && (path == "/api/v1/feed" || consumers("/items"));
        // A consumer's items start at its committed cursor: its commit is how it turns a page.
        let turn = *method == axum::http::Method::POST && consumers("/commit");
        if page || turn {
            Budget::FeedPages
        } else {
            Budget::Requests
        }
    }

    /// The budget [`per_client`] decided for this request (decided here only for a request
    /// that did not pass it).
    pub(crate) fn of_parts(parts: &axum::http::request::Parts) -> Budget {
        parts
            .extensions
            .get::<Budget>()
            .copied()
            .unwrap_or_else(|| Budget::of(&parts.method, parts.uri.path()))
    }

    /// The buckets of client addresses and of tokens, and their rate a second.
    fn buckets(self, limits: &crate::rate_limit::Limits) -> (&RateLimiter, &RateLimiter, u32) {
        match self {
            Budget::Requests => (&limits.clients, &limits.tokens, CLIENT_REQUESTS_PER_SEC),
            Budget::FeedPages => (&limits.feed_clients, &limits.feed_pages, FEED_PAGES_PER_SEC),
        }
    }

    /// A token's rate a second in this budget.
    fn token_rate(self) -> u32 {
        match self {
            Budget::Requests => TOKEN_REQUESTS_PER_SEC,
            Budget::FeedPages => FEED_PAGES_PER_SEC,
        }
    }
}

/// Every API request counts against its client address's rate first (429 over it), in its
/// [`Budget`].
async fn per_client(
    axum::extract::State(state): axum::extract::State<AppState>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let client = state.client_of(&request);
    let budget = Budget::of(request.method(), request.uri().path());
    // Decided once: the caller's extractor takes the token's rate from the same budget.
    request.extensions_mut().insert(budget);
    let (clients, _, per_sec) = budget.buckets(&state.limits);
    if let Err(wait) = clients.take(&client, per_sec) {
        let request_id = RequestId::of(request.headers());
        return ApiError::TooManyRequests {
            retry_after_secs: wait.as_secs().max(1),
        }
        .into_problem(&request_id);
    }
    let request_id = RequestId::of(request.headers());
    let method = request.method().clone();
    let response = problem::REQUEST_ID
        .scope(request_id.clone(), next.run(request))
        .await;
    // The router's own 405 (a path asked with a method it does not take) as a problem too; the
    // router adds `Allow` to it on the way out.
    if response.status() == axum::http::StatusCode::METHOD_NOT_ALLOWED {
        return ApiError::MethodNotAllowed(method.to_string()).into_problem(&request_id);
    }
    response
}

/// The caller of a request: a live token within its rate of `budget`, with at least `role`.
async fn caller(
    state: &AppState,
    headers: &HeaderMap,
    role: Role,
    budget: Budget,
) -> Result<Caller, ApiError> {
    let caller = authenticate(&state.db, headers)
        .await
        .map_err(|failure| match failure {
            AuthFailure::Refused(why) => ApiError::Unauthorized(why.to_string()),
            AuthFailure::Db(e) => ApiError::from(e),
        })?;
    // A page of the feed is a request like any other unless the token is catching up.
    let budget = match budget {
        Budget::FeedPages if !state.limits.catching_up.holds(&caller.name) => Budget::Requests,
        budget => budget,
    };
    let (_, tokens, _) = budget.buckets(&state.limits);
    if let Err(wait) = tokens.take(&caller.name, budget.token_rate()) {
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

/// An archive row as every answer shows it.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "id": 4812,
    "source": "stripe",
    "event_id": "evt_1QbC2d",
    "object_id": "pi_3QbC2d",
    "revision": 1733300000,
    "type": "payment_intent.succeeded",
    "status": "processed",
    "outcome": "applied",
    "error": null,
    "received_at": "2026-12-04T06:25:12.481+00:00",
    "replay_of": null,
    "replayed_by": null,
    "resolved_by": null
}))]
pub struct Event {
    /// The archive row's id: `GET /api/v1/events/{id}`.
    pub id: i64,
    pub source: String,
    /// The sender's event id, if the delivery had one.
    pub event_id: Option<String>,
    pub object_id: Option<String>,
    pub revision: Option<i64>,
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    pub status: app::model::Status,
    pub outcome: app::model::OutcomeKind,
    /// Why it failed or was skipped, in words.
    pub error: Option<String>,
    #[schema(format = DateTime)]
    pub received_at: String,
    /// The archive row this one replays.
    pub replay_of: Option<i64>,
    /// Who replayed it (a user's or a token's name).
    pub replayed_by: Option<String>,
    /// The replay that resolved this failure.
    pub resolved_by: Option<i64>,
}

impl From<&app::model::EventRow> for Event {
    fn from(row: &app::model::EventRow) -> Event {
        Event {
            id: row.id,
            source: row.source.clone(),
            event_id: row.event_id.clone(),
            object_id: row.object_id.clone(),
            revision: row.revision,
            event_type: row.event_type.clone(),
            status: row.status,
            outcome: row.outcome,
            error: row.error_message.clone(),
            received_at: row.received_at.clone(),
            replay_of: row.replay_of,
            replayed_by: row.replayed_by.clone(),
            resolved_by: row.resolved_by,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Budget;
    use axum::http::Method;

    #[test]
    fn the_feeds_pages_and_nothing_else_take_the_feeds_budget() {
        for (method, path, budget) in [
            (Method::GET, "/api/v1/feed", Budget::FeedPages),
            (
                Method::GET,
                "/api/v1/feed/consumers/loader/items",
                Budget::FeedPages,
            ),
            (
                Method::POST,
                "/api/v1/feed/consumers/loader/items",
                Budget::Requests,
            ),
            (
                Method::POST,
                "/api/v1/feed/consumers/loader/commit",
                Budget::FeedPages,
            ),
            (
                Method::GET,
                "/api/v1/feed/consumers/loader/commit",
                Budget::Requests,
            ),
            (
                Method::POST,
                "/api/v1/feed/consumers/loader/seek",
                Budget::Requests,
            ),
            (
                Method::GET,
                "/api/v1/feed/consumers/loader",
                Budget::Requests,
            ),
            (
                Method::GET,
                "/api/v1/feed/consumers//items",
                Budget::Requests,
            ),
            (
                Method::GET,
                "/api/v1/feed/consumers/a/b/items",
                Budget::Requests,
            ),
            (Method::GET, "/api/v1/feed/", Budget::Requests),
            (Method::GET, "/api/v1/events", Budget::Requests),
        ] {
            assert_eq!(Budget::of(&method, path), budget, "{method} {path}");
        }
    }
}
