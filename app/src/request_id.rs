//! The request id every response carries (`x-request-id`, set by the server's middleware), read
//! in one place for the logs and the 5xx answers of both the endpoint and the dashboard.

/// The header carrying it.
pub const HEADER: &str = "x-request-id";

/// The request's id, "-" when it has none.
pub fn of(headers: &http::HeaderMap) -> String {
    headers
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_string()
}
