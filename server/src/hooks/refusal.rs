//! What the endpoint refuses before ingest, and the one 503 it answers when a delivery could not
//! be recorded: [`Rejection`] (its answer and its reason), [`Refusal`] (what the refused-requests
//! log keeps of it), and how a refusal is counted and logged.

use super::answer::json;
use crate::request_id::RequestId;
use crate::{AppState, rejected_log};
use app::db::rejected::NewRejected;
use app::model::RefusalReason;
use axum::Extension;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;

/// How long a sender is asked to wait before retrying when the database is unavailable.
pub const RETRY_AFTER_SECS: u64 = 5;

/// The `source` label of a request to a source that is not configured: the requested name is
/// the sender's to choose, and would make one series per name.
pub const UNKNOWN_SOURCE: &str = app::db::rejected::UNKNOWN_BUCKET;

/// Every answer of the endpoint that is not an ingested delivery's outcome, in one place.
#[derive(Debug)]
pub enum Rejection {
    /// 404: no source of that name.
    UnknownSource,
    /// 413: the body is over `max_body_bytes`.
    TooLarge { limit: usize },
    /// 408: the body did not arrive within `body_read_timeout_secs`.
    TimedOut { deadline: Duration },
    /// 400: the body could not be read (the connection broke mid-body).
    Unreadable,
    /// 401: authentication failed; the sender learns nothing more.
    Unauthorized,
    /// 429: the source's authenticated deliveries are over `rate_limit_per_sec`.
    RateLimited { per_sec: u32, retry_after_secs: u64 },
    /// 503: the delivery could not be recorded; the sender keeps it and tries again. The
    /// request id finds the logged cause.
    Unavailable { request_id: RequestId },
}

impl Rejection {
    /// Why the request was refused: the `reason` label of `hookbox_refused_requests_total` and
    /// of its refused-requests log row. `None` for `Unavailable`: the request was not refused,
    /// the database failed it, and it is neither counted nor logged as refused.
    pub fn reason(&self) -> Option<RefusalReason> {
        match self {
            Rejection::UnknownSource => Some(RefusalReason::UnknownSource),
            Rejection::TooLarge { .. } => Some(RefusalReason::TooLarge),
            Rejection::TimedOut { .. } => Some(RefusalReason::TimedOut),
            Rejection::Unreadable => Some(RefusalReason::Unreadable),
            Rejection::Unauthorized => Some(RefusalReason::Unauthorized),
            Rejection::RateLimited { .. } => Some(RefusalReason::RateLimited),
            Rejection::Unavailable { .. } => None,
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let (status, body, extra) = match self {
            Rejection::UnknownSource => (
                StatusCode::NOT_FOUND,
                json!({"status": "not_found", "reason": "unknown source"}),
                None,
            ),
            Rejection::TooLarge { limit } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({"status": "invalid", "reason": format!("body is larger than {limit} bytes")}),
                Some((header::CONNECTION, HeaderValue::from_static("close"))),
            ),
            Rejection::TimedOut { deadline } => (
                StatusCode::REQUEST_TIMEOUT,
                json!({"status": "invalid", "reason": format!("the request body did not arrive within {} s", deadline.as_secs())}),
                Some((header::CONNECTION, HeaderValue::from_static("close"))),
            ),
            Rejection::Unreadable => (
                StatusCode::BAD_REQUEST,
                json!({"status": "invalid", "reason": "the request body could not be read"}),
                None,
            ),
            Rejection::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                json!({"status": "unauthorized"}),
                None,
            ),
            Rejection::RateLimited {
                per_sec,
                retry_after_secs,
            } => (
                StatusCode::TOO_MANY_REQUESTS,
                json!({"status": "rate_limited", "reason": format!("more than {per_sec} deliveries a second for this source")}),
                Some((header::RETRY_AFTER, HeaderValue::from(retry_after_secs))),
            ),
            Rejection::Unavailable { request_id } => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"status": "unavailable", "request_id": request_id.0}),
                Some((header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS))),
            ),
        };
        let mut response = json(status, body);
        if let Some((name, value)) = extra {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// A request refused before ingest (or, `Unavailable`, not recorded), with what the
/// refused-requests log keeps of it.
pub(super) struct Refusal {
    pub(super) rejection: Rejection,
    /// The precise cause, for the log: never sent to the sender.
    pub(super) cause: String,
    pub(super) body: BodySeen,
}

/// What was seen of a refused request's body.
#[derive(Default)]
pub(super) struct BodySeen {
    /// Bytes read, or the declared `Content-Length` when the body was not read.
    bytes: Option<u64>,
    /// When the body was read in full.
    sha256: Option<[u8; 32]>,
}

impl BodySeen {
    /// A body not read: its declared length, if any.
    pub(super) fn declared(bytes: Option<u64>) -> BodySeen {
        BodySeen {
            bytes,
            sha256: None,
        }
    }

    /// A body read in part (or refused by its declared length alone).
    pub(super) fn partly(bytes: u64) -> BodySeen {
        BodySeen {
            bytes: Some(bytes),
            sha256: None,
        }
    }

    /// A body read in full.
    pub(super) fn read(body: &Bytes) -> BodySeen {
        BodySeen {
            bytes: Some(body.len() as u64),
            sha256: Some(app::ingest::body_digest(body)),
        }
    }
}

impl Refusal {
    pub(super) fn new(rejection: Rejection, cause: String, body: BodySeen) -> Refusal {
        Refusal {
            rejection,
            cause,
            body,
        }
    }

    /// Counts the refusal and hands it to the refused-requests log, unless it has no reason
    /// (`Unavailable`); gives back what to answer.
    pub(super) fn count_and_log(
        self,
        state: &AppState,
        source_name: &str,
        request_id: &RequestId,
        peer: Option<Extension<ConnectInfo<SocketAddr>>>,
        headers: &HeaderMap,
    ) -> Rejection {
        let Refusal {
            rejection,
            cause,
            body,
        } = self;
        let Some(reason) = rejection.reason() else {
            return rejection;
        };
        let bucket = state
            .config
            .source(source_name)
            .map_or(UNKNOWN_SOURCE, |s| s.name.as_str());
        refused(bucket, reason);
        let client = state
            .settings
            .trusted_proxies
            .client_of(peer.map(|Extension(ConnectInfo(addr))| addr), headers);
        state.rejected_log.record(NewRejected {
            received_at: chrono::Utc::now(),
            bucket: bucket.to_string(),
            source: app::headers::cut(source_name, rejected_log::SOURCE_BYTES),
            reason,
            cause,
            client_address: client,
            request_id: Some(request_id.0.clone()),
            headers: rejected_log::logged_headers(headers, state.config.source(bucket)),
            body_bytes: body.bytes.and_then(|n| i64::try_from(n).ok()),
            body_sha256: body.sha256.map(hex::encode),
        });
        rejection
    }
}

/// Counts a request refused before ingest in `hookbox_refused_requests_total{source,reason}`.
fn refused(source: &str, reason: RefusalReason) {
    metrics::counter!(
        "hookbox_refused_requests_total",
        "source" => source.to_string(),
        "reason" => reason.as_str()
    )
    .increment(1);
}
