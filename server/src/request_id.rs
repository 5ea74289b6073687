//! The request id: a random one for every request, or a short plain one a proxy sent; on every
//! log line of the request, in its response headers and in every 5xx body. One extractor reads it.

use axum::extract::{FromRequestParts, Request};
use axum::http::HeaderValue;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use std::convert::Infallible;
use std::fmt;

pub use app::request_id::HEADER;

/// The longest `x-request-id` kept from a client or proxy.
pub const MAX_REQUEST_ID_LEN: usize = 64;

/// A client's `x-request-id` goes into logs, response headers and 503 bodies: one that is long
/// or holds anything but letters, digits, `-`, `_`, `.` and `:` is replaced by a random one.
pub async fn drop_unfit_request_id(mut request: Request, next: Next) -> Response {
    let fit = |v: &HeaderValue| {
        let bytes = v.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= MAX_REQUEST_ID_LEN
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(b))
    };
    let headers = request.headers_mut();
    let values: Vec<&HeaderValue> = headers.get_all(HEADER).iter().collect();
    if values.len() > 1 || values.first().is_some_and(|v| !fit(v)) {
        headers.remove(HEADER);
    }
    next.run(request).await
}

/// The id `SetRequestIdLayer` gave this request ("-" outside that layer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

impl RequestId {
    pub fn of(headers: &axum::http::HeaderMap) -> RequestId {
        RequestId(app::request_id::of(headers))
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for RequestId {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(RequestId::of(&parts.headers))
    }
}

/// A random id for every request (kept when a proxy already set `x-request-id`): on every log
/// line of the request, in its response headers and in every 5xx body.
#[derive(Clone, Copy)]
pub struct RandomRequestId;

impl tower_http::request_id::MakeRequestId for RandomRequestId {
    fn make_request_id<B>(
        &mut self,
        _request: &axum::http::Request<B>,
    ) -> Option<tower_http::request_id::RequestId> {
        HeaderValue::from_str(&format!("{:016x}", rand::random::<u64>()))
            .ok()
            .map(tower_http::request_id::RequestId::new)
    }
}
