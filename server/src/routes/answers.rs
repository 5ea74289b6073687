//! Answers shared by the route handlers, the router's own and the export's: the export takes
//! them from here, not from the router, which imports the export.

use crate::request_id::RequestId;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// 503 for a page or check when the database does not answer, naming the request id to find
/// the logged cause.
pub(crate) fn unavailable(request_id: &RequestId) -> Response {
    let text = app::error::DashboardError::Unavailable {
        request_id: request_id.0.clone(),
    }
    .to_string();
    (StatusCode::SERVICE_UNAVAILABLE, text).into_response()
}

/// 429 for a request past its user's bound ([`super::per_user`]): a server function's answer in
/// the dashboard's error encoding (the page shows `why`), a page's as text.
pub(crate) fn too_many_requests(server_function: bool, why: String) -> Response {
    let headers = [(axum::http::header::RETRY_AFTER, "1")];
    if server_function {
        let body =
            serde_json::to_string(&app::error::DashboardError::Throttled(why)).unwrap_or_default();
        let json = (axum::http::header::CONTENT_TYPE, "application/json");
        return (StatusCode::TOO_MANY_REQUESTS, headers, [json], body).into_response();
    }
    (StatusCode::TOO_MANY_REQUESTS, headers, why).into_response()
}
