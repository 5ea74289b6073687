//! The API's errors: RFC 9457 `application/problem+json`, each with its status, a title, what is
//! wrong in words, and the request id that finds the request in hookbox's log.

use crate::request_id::RequestId;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Why the API does not answer a request as asked.
#[derive(Debug)]
pub enum ApiError {
    /// 400: a parameter or the body is wrong (which one, and why).
    BadRequest(String),
    /// 401: no token, or one that is unknown, revoked or expired.
    Unauthorized(String),
    /// 403: the token's role may not do this.
    Forbidden(String),
    /// 404: nothing of that name the token may see.
    NotFound(String),
    /// 409: the action would not do what was asked (a replay failing again; a count changed).
    Conflict(String),
    /// 409: a bulk action would act on `actual` rows, not the `expected` the caller confirmed.
    CountChanged { expected: usize, actual: usize },
    /// 422: the database refuses the data for good; nothing was written.
    Unprocessable(String),
    /// 429: over the token's rate; try again after the seconds given.
    TooManyRequests { retry_after_secs: u64 },
    /// 429: a body search is running for this token already, or too many for the process.
    Busy(String),
    /// 429: the process holds as many long polls of the feed (all, or this token's share) or
    /// page reads waiting for their turn as it allows.
    FeedFull(crate::feed::Full),
    /// 408: a body search ran past its deadline and was stopped (narrow it).
    TimedOut(String),
    /// 413: the request's body is over [`super::MAX_BODY_BYTES`].
    PayloadTooLarge,
    /// 503: the database failed; retrying may work.
    Unavailable,
    /// 405: the path does not take this method (`Allow` lists those it takes).
    MethodNotAllowed(String),
    /// 410: the feed's items after a cursor are past the archive's retention; `oldest_cursor`
    /// is the earliest still served.
    Gone { why: String, oldest_cursor: String },
}

/// An RFC 9457 problem document, as every error of the API answers it.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "type": "urn:hookbox:problem:not-found",
    "title": "Not found",
    "status": 404,
    "detail": "there is no delivery 9000",
    "request_id": "0b7c6f1e9a2d4c58"
}))]
pub struct Problem {
    /// `urn:hookbox:problem:<slug>`: what kind of problem, for programs.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    /// The response's HTTP status.
    pub status: u16,
    /// What is wrong, in words, naming the parameter or field.
    pub detail: String,
    /// The request's id (`x-request-id`), that finds it in hookbox's log.
    pub request_id: String,
    /// For `count-changed`: how many rows match now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub actual_count: Option<usize>,
    /// For `gone`: the earliest feed cursor still served.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub oldest_cursor: Option<String>,
}

tokio::task_local! {
    /// The request id of the API request being answered ([`super::per_client`] sets it).
    pub static REQUEST_ID: RequestId;
}

impl ApiError {
    fn parts(&self) -> (StatusCode, &'static str, &'static str, String) {
        match self {
            ApiError::BadRequest(why) => (
                StatusCode::BAD_REQUEST,
                "bad-request",
                "Bad request",
                why.clone(),
            ),
            ApiError::Unauthorized(why) => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Unauthorized",
                why.clone(),
            ),
            ApiError::Forbidden(why) => {
                (StatusCode::FORBIDDEN, "forbidden", "Forbidden", why.clone())
            }
            ApiError::NotFound(why) => {
                (StatusCode::NOT_FOUND, "not-found", "Not found", why.clone())
            }
            ApiError::Conflict(why) => (StatusCode::CONFLICT, "conflict", "Conflict", why.clone()),
            ApiError::CountChanged { expected, actual } => (
                StatusCode::CONFLICT,
                "count-changed",
                "Count changed",
                format!(
                    "nothing was done: {actual} deliveries match now, not the {expected} expected; dry-run again and confirm that count"
                ),
            ),
            ApiError::Unprocessable(why) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "unprocessable",
                "Unprocessable",
                why.clone(),
            ),
            ApiError::TooManyRequests { retry_after_secs } => (
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-requests",
                "Too many requests",
                format!("over the token's rate: retry after {retry_after_secs} s"),
            ),
            ApiError::Busy(why) => (
                StatusCode::TOO_MANY_REQUESTS,
                "busy",
                "Too many searches",
                why.clone(),
            ),
            ApiError::FeedFull(full) => feed_full(*full),
            ApiError::TimedOut(why) => (
                StatusCode::REQUEST_TIMEOUT,
                "timed-out",
                "Search stopped",
                why.clone(),
            ),
            ApiError::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload-too-large",
                "Payload too large",
                format!("the body is over {} bytes", super::MAX_BODY_BYTES),
            ),
            ApiError::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Unavailable",
                "the database did not answer: retry later".into(),
            ),
            ApiError::Gone { why, .. } => (StatusCode::GONE, "gone", "Gone", why.clone()),
            ApiError::MethodNotAllowed(method) => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "Method not allowed",
                format!("this path does not take {method}: the Allow header lists what it takes"),
            ),
        }
    }
}

/// The feed's 429s: the process holds as many long polls or reads as it allows.
fn feed_full(full: crate::feed::Full) -> (StatusCode, &'static str, &'static str, String) {
    use crate::feed::Full;
    let (slug, title, detail) = match full {
        Full::TokenShare => (
            "long-polls-of-token",
            "Too many long polls of this token",
            format!(
                "this token has {} long polls of the feed waiting in this process already, its share of the {} places: retry after 1 s, or read without wait",
                crate::feed::MAX_WAITERS_PER_TOKEN,
                crate::feed::MAX_WAITERS
            ),
        ),
        Full::Reads => (
            "feed-reads-full",
            "Too many feed reads",
            format!(
                "{} reads of the feed wait for their turn in this process already: retry after 1 s",
                crate::feed::READS_WAITING
            ),
        ),
        Full::Waiters => (
            "long-polls-full",
            "Too many long polls",
            format!(
                "{} long polls of the feed wait in this process already: retry after 1 s, or read without wait",
                crate::feed::MAX_WAITERS
            ),
        ),
    };
    (StatusCode::TOO_MANY_REQUESTS, slug, title, detail)
}

impl From<crate::feed::Full> for ApiError {
    fn from(full: crate::feed::Full) -> Self {
        ApiError::FeedFull(full)
    }
}

impl ApiError {
    /// The problem document for the request `request_id`.
    pub fn into_problem(self, request_id: &RequestId) -> Response {
        let (status, slug, title, detail) = self.parts();
        let body = Problem {
            kind: format!("urn:hookbox:problem:{slug}"),
            title: title.into(),
            status: status.as_u16(),
            detail,
            request_id: request_id.to_string(),
            actual_count: match &self {
                ApiError::CountChanged { actual, .. } => Some(*actual),
                _ => None,
            },
            oldest_cursor: match &self {
                ApiError::Gone { oldest_cursor, .. } => Some(oldest_cursor.clone()),
                _ => None,
            },
        };
        let body = serde_json::to_string(&body).unwrap_or_default();
        let mut response = (status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        let retry_after = match self {
            ApiError::TooManyRequests { retry_after_secs } => Some(retry_after_secs),
            ApiError::FeedFull(_) => Some(1),
            _ => None,
        };
        if let Some(secs) = retry_after
            && let Ok(value) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// A handler's error answers its problem document, with the id of the request being answered.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let id = REQUEST_ID
            .try_with(Clone::clone)
            .unwrap_or_else(|_| RequestId("-".into()));
        self.into_problem(&id)
    }
}

/// Each domain error an endpoint meets, as the API answers it: converted here once, so a
/// handler writes `?`.
impl From<sea_orm::DbErr> for ApiError {
    fn from(e: sea_orm::DbErr) -> ApiError {
        tracing::error!(error = %e, "API request failed: database unavailable");
        ApiError::Unavailable
    }
}

impl From<app::db::conditions::QueryError> for ApiError {
    fn from(e: app::db::conditions::QueryError) -> ApiError {
        use app::db::conditions::QueryError;
        match e {
            QueryError::BadFilter(why) => ApiError::BadRequest(why),
            QueryError::Db(e) => ApiError::from(e),
        }
    }
}

impl From<app::db::destinations::RetryError> for ApiError {
    fn from(e: app::db::destinations::RetryError) -> ApiError {
        use app::db::destinations::RetryError;
        match e {
            RetryError::Refused(why) => ApiError::Conflict(why),
            RetryError::Query(e) => ApiError::from(e),
        }
    }
}

/// A body search (or a route's preview) that could not run: a bad filter 400, busy 429, past its
/// deadline 408.
impl From<app::db::search_bounds::SearchError> for ApiError {
    fn from(e: app::db::search_bounds::SearchError) -> ApiError {
        use app::db::search_bounds::SearchError;
        match e {
            SearchError::Query(e) => ApiError::from(e),
            SearchError::Busy(why) => ApiError::Busy(why),
            timed_out @ SearchError::TimedOut(_) => ApiError::TimedOut(timed_out.to_string()),
        }
    }
}
