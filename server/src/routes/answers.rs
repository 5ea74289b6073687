//! Answers shared by the route handlers, the router's own and the export's: the export takes
//! them from here, not from the router, which imports the export.

use crate::request_id::RequestId;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// 503 for a page or check when the database does not answer, naming the request id to find
/// the logged cause.
pub(crate) fn unavailable(request_id: &RequestId) -> Response {
    let text = format!("the database is unavailable; try again shortly (request id {request_id})");
    (StatusCode::SERVICE_UNAVAILABLE, text).into_response()
}
