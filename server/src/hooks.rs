//! `POST /hooks/{source}`: authenticate over the raw bytes, validate, ingest, answer
//! (the answers table of `docs/webhooks.md`). Nothing is answered 2xx before its transaction has
//! committed, except a provider's handshake (Slack's URL verification), which is authenticated but
//! is not an event.

use crate::request_id::RequestId;
use crate::{AppState, rejected_log};
use app::db::rejected::NewRejected;
use app::envelope::parse_envelope;
use app::ingest::{self, Outcome, Received, Recorded};
use app::providers;
use axum::Extension;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;

/// How long a sender is asked to wait before retrying when the database is unavailable.
pub const RETRY_AFTER_SECS: u64 = 5;

/// How much of a too-large body is read and thrown away so that a sender that writes its whole
/// body before reading the answer receives the 413 instead of a reset connection. Beyond it the
/// connection is closed.
pub const DISCARD_BYTES: u64 = 16 * 1024 * 1024;

/// The archive's bounds on headers (`app::headers` classifies them): a kept (safe or signature)
/// value is cut to [`ARCHIVED_VALUE_BYTES`]; a redacted header keeps its name cut to
/// [`ARCHIVED_NAME_BYTES`] and its size, for at most [`ARCHIVED_REDACTED_KEPT`] names (the rest
/// are counted under `…`).
pub const ARCHIVED_VALUE_BYTES: usize = 4096;
pub const ARCHIVED_NAME_BYTES: usize = 64;
pub const ARCHIVED_REDACTED_KEPT: usize = 64;

pub async fn receive(
    State(state): State<std::sync::Arc<AppState>>,
    Path(source_name): Path<String>,
    request_id: RequestId,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match ingest_request(&state, &source_name, request_id.clone(), &headers, body).await {
        Ok(response) => response,
        Err(refusal) => {
            let Refusal {
                rejection,
                cause,
                body,
            } = refusal;
            if !matches!(rejection, Rejection::Unavailable { .. }) {
                let bucket = state
                    .config
                    .source(&source_name)
                    .map_or(UNKNOWN_SOURCE, |s| s.name.as_str());
                refused(bucket, &rejection);
                let client = match peer {
                    Some(Extension(ConnectInfo(addr))) => state
                        .settings
                        .trusted_proxies
                        .client_address(addr.ip(), &headers)
                        .to_string(),
                    None => "unknown".into(),
                };
                state.rejected_log.record(NewRejected {
                    received_at: chrono::Utc::now(),
                    bucket: bucket.to_string(),
                    source: rejected_log::cut(&source_name, rejected_log::SOURCE_BYTES),
                    reason: rejection.reason(),
                    cause,
                    client_address: client,
                    request_id: Some(request_id.0.clone()),
                    headers: rejected_log::logged_headers(&headers, state.config.source(bucket)),
                    body_bytes: body.bytes.and_then(|n| i64::try_from(n).ok()),
                    body_sha256: body.sha256.map(hex::encode),
                });
            }
            rejection.into_response()
        }
    }
}

/// A request refused before ingest (or, `Unavailable`, not recorded), with what the
/// refused-requests log keeps of it.
struct Refusal {
    rejection: Rejection,
    /// The precise cause, for the log: never sent to the sender.
    cause: String,
    body: BodySeen,
}

/// What was seen of a refused request's body.
#[derive(Default)]
struct BodySeen {
    /// Bytes read, or the declared `Content-Length` when the body was not read.
    bytes: Option<u64>,
    /// When the body was read in full.
    sha256: Option<[u8; 32]>,
}

impl Refusal {
    fn new(rejection: Rejection, cause: String, body: BodySeen) -> Refusal {
        Refusal {
            rejection,
            cause,
            body,
        }
    }
}

async fn ingest_request(
    state: &AppState,
    source_name: &str,
    request_id: RequestId,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let Some(source) = state.config.source(source_name) else {
        return Err(Refusal::new(
            Rejection::UnknownSource,
            format!(
                "no source named \"{}\" is configured (the body was not read)",
                rejected_log::cut(source_name, 60)
            ),
            BodySeen {
                bytes: declared,
                sha256: None,
            },
        ));
    };

    // In all, not per chunk: a sender trickling its body cannot hold a connection longer.
    let deadline = Duration::from_secs(state.config.server.body_read_timeout_secs);
    let body = read_body(
        body,
        declared,
        headers,
        state.config.server.max_body_bytes,
        deadline,
    )
    .await
    .map_err(|(rejection, cause, bytes)| {
        Refusal::new(
            rejection,
            cause,
            BodySeen {
                bytes: Some(bytes),
                sha256: None,
            },
        )
    })?;
    let seen = || BodySeen {
        bytes: Some(body.len() as u64),
        sha256: Some(ingest::body_digest(&body)),
    };

    let now = chrono::Utc::now();
    if let Err(why) = source.scheme.verify(
        headers,
        &body,
        &source.keys,
        source.tolerance_secs,
        now.timestamp(),
    ) {
        tracing::info!(source = %source.name, reason = %why, "authentication failed");
        metrics::counter!("hookbox_auth_failures_total", "source" => source.name.clone())
            .increment(1);
        return Err(Refusal::new(
            Rejection::Unauthorized,
            why.to_string(),
            seen(),
        ));
    }
    // Counted only once the sender is authenticated: unsigned junk cannot spend a genuine
    // sender's allowance.
    if let Some(per_sec) = source.rate_limit_per_sec
        && let Err(wait) = state.limiter.take(&source.name, per_sec)
    {
        metrics::counter!("hookbox_rate_limited_total", "source" => source.name.clone())
            .increment(1);
        let retry_after_secs = wait.as_secs().max(1);
        return Err(Refusal::new(
            Rejection::RateLimited {
                per_sec,
                retry_after_secs,
            },
            format!(
                "over the source's {per_sec} deliveries a second; told to retry after {retry_after_secs} s"
            ),
            seen(),
        ));
    }
    if let Some(reply) = providers::handshake_answer(source.scheme, &body) {
        tracing::info!(source = %source.name, "provider handshake answered (not archived)");
        return Ok(answer(StatusCode::OK, reply));
    }

    let headers_json = archived_headers(headers, source);
    let received = Received {
        source: &source.name,
        headers_json: &headers_json,
        body: &body,
        received_at: now,
        replay_of: None,
        replayed_by: None,
        signed_body_digest: source
            .scheme
            .signs_body_only()
            .then(|| ingest::body_digest(&body)),
        forward_to: &source.forward,
    };
    let fallback;
    let source_metrics = match state.delivery_metrics.get(&source.name) {
        Some(m) => m,
        None => {
            fallback = crate::metrics::SourceMetrics::new(&source.name);
            &fallback
        }
    };
    let started = std::time::Instant::now();
    let (recorded, event_id, status) = match parse_envelope(&source.mapping, headers, &body) {
        Ok(envelope) => {
            let recorded =
                ingest::apply_delivery(&state.db, source.mapping.mode, &received, &envelope).await;
            (recorded, Some(envelope.event_id), None)
        }
        Err(invalid) => (
            ingest::record_invalid(&state.db, &received, &invalid).await,
            invalid.event_id.clone(),
            Some(invalid.status()),
        ),
    };
    source_metrics
        .transaction()
        .record(started.elapsed().as_secs_f64());
    let Recorded {
        archive_id,
        outcome,
    } = recorded.map_err(|e| {
        tracing::error!(source = %source.name, error = %e, "delivery not recorded: database unavailable");
        source_metrics.unavailable().increment(1);
        Refusal::new(
            Rejection::Unavailable { request_id },
            String::new(),
            BodySeen::default(),
        )
    })?;
    source_metrics.delivered(outcome.kind()).increment(1);
    // What the shipped silence alert reads (`deploy/prometheus/alerts.yml`).
    source_metrics
        .last_delivery()
        .set(now.timestamp_micros() as f64 / 1e6);
    // Every delivery is in the archive; a line per delivery at the default level would be the
    // hot path's costliest step after the database (`docs/benchmarks.md`).
    tracing::debug!(
        source = %source.name,
        event_id = event_id.as_deref().unwrap_or("-"),
        outcome = outcome.name(),
        archive_id,
        "delivery recorded"
    );
    if !source.forward.is_empty() && matches!(outcome, Outcome::Applied { .. } | Outcome::Accepted)
    {
        state.forward_wake.notify_one();
    }
    Ok(outcome_answer(&outcome, event_id.as_deref(), status))
}

/// The body of an ingested delivery's answer. Fields in name order, as a JSON object of them
/// prints; the outer `Option` leaves a field out, an inner `None` is `null`.
#[derive(serde::Serialize, Default)]
struct Answer<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    current_revision: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delivered_as: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_id: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    existing_event_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    idempotent: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<i64>,
    status: &'static str,
}

/// The answer to an ingested delivery (`docs/webhooks.md`, section 4). `invalid_status` is the
/// 400 or 422 the envelope chose.
fn outcome_answer(
    outcome: &Outcome,
    event_id: Option<&str>,
    invalid_status: Option<StatusCode>,
) -> Response {
    let event = Some(event_id);
    let (status, body) = match outcome {
        Outcome::Applied { revision } => (
            StatusCode::OK,
            Answer {
                status: "applied",
                event_id: event,
                revision: Some(*revision),
                ..Answer::default()
            },
        ),
        Outcome::Stale {
            revision,
            current_revision,
        } => (
            StatusCode::OK,
            Answer {
                status: "stale",
                event_id: event,
                revision: Some(*revision),
                current_revision: Some(*current_revision),
                ..Answer::default()
            },
        ),
        Outcome::Accepted => (
            StatusCode::OK,
            Answer {
                status: "accepted",
                event_id: event,
                ..Answer::default()
            },
        ),
        Outcome::Duplicate => (
            StatusCode::OK,
            Answer {
                status: "duplicate",
                event_id: event,
                idempotent: Some(true),
                ..Answer::default()
            },
        ),
        Outcome::ReplayedBody { original_event_id } => (
            StatusCode::OK,
            Answer {
                status: "duplicate",
                event_id: Some(Some(original_event_id)),
                idempotent: Some(true),
                delivered_as: event,
                ..Answer::default()
            },
        ),
        Outcome::ReusedEventId | Outcome::ReusedRevision { .. } => (
            StatusCode::CONFLICT,
            Answer {
                status: "conflict",
                reason: Some(outcome.name()),
                event_id: event,
                message: Some(outcome.error_message()),
                existing_event_id: match outcome {
                    Outcome::ReusedRevision {
                        existing_event_id: Some(holder),
                    } => Some(holder),
                    _ => None,
                },
                ..Answer::default()
            },
        ),
        Outcome::Invalid { reason } => (
            invalid_status.unwrap_or(StatusCode::UNPROCESSABLE_ENTITY),
            Answer {
                status: "invalid",
                reason: Some(reason),
                ..Answer::default()
            },
        ),
    };
    (status, axum::Json(body)).into_response()
}

fn answer(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// The request headers as a JSON object for the archive, names in byte order, as a JSON object
/// of them would print; written straight into the text, without a JSON value in between.
fn archived_headers(headers: &HeaderMap, source: &app::config::Source) -> String {
    let entries = archived_entries(headers, source);
    let mut out = Vec::with_capacity(48 * entries.len() + 2);
    out.push(b'{');
    for (i, (name, value)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json_string(&mut out, name);
        out.push(b':');
        json_string(&mut out, value);
    }
    out.push(b'}');
    // Only JSON's own bytes and escaped strings were written.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// What the archive keeps of each header, in byte order of the names: safe and signature headers
/// as received (repeated ones joined with ", " as HTTP allows), values cut to
/// [`ARCHIVED_VALUE_BYTES`]; any other header `[redacted, N bytes]`, its name cut to
/// [`ARCHIVED_NAME_BYTES`], at most [`ARCHIVED_REDACTED_KEPT`] of them.
fn archived_entries(headers: &HeaderMap, source: &app::config::Source) -> Vec<(String, String)> {
    use app::headers::{HeaderClass, classify, cut, redacted};
    use std::collections::BTreeMap;
    let mut kept: BTreeMap<String, String> = BTreeMap::new();
    let mut hidden: BTreeMap<String, usize> = BTreeMap::new();
    let (mut more, mut more_bytes) = (0usize, 0usize);
    for name in headers.keys() {
        let values = headers.get_all(name);
        match classify(name.as_str(), Some(source)) {
            HeaderClass::Safe | HeaderClass::Signature => {
                let mut values = values.iter();
                let joined = match (values.next(), values.next()) {
                    (Some(only), None) => String::from_utf8_lossy(only.as_bytes()).into_owned(),
                    _ => headers
                        .get_all(name)
                        .iter()
                        .map(|v| String::from_utf8_lossy(v.as_bytes()))
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                let value = if joined.len() > ARCHIVED_VALUE_BYTES {
                    cut(&joined, ARCHIVED_VALUE_BYTES)
                } else {
                    joined
                };
                kept.insert(name.as_str().to_string(), value);
            }
            HeaderClass::Secret => {
                let bytes: usize = values.iter().map(|v| v.len()).sum();
                // A cut name ends in `…`, which no header name holds: it meets only names cut
                // alike, and their sizes add up.
                let shown = cut(name.as_str(), ARCHIVED_NAME_BYTES);
                if hidden.contains_key(&shown) || hidden.len() < ARCHIVED_REDACTED_KEPT {
                    *hidden.entry(shown).or_default() += bytes;
                } else {
                    more += 1;
                    more_bytes += name.as_str().len() + bytes;
                }
            }
        }
    }
    kept.extend(
        hidden
            .into_iter()
            .map(|(name, bytes)| (name, redacted(bytes))),
    );
    if more > 0 {
        kept.insert(
            "…".into(),
            format!("{more} more headers ({more_bytes} bytes) not kept"),
        );
    }
    kept.into_iter().collect()
}

/// `text` as a JSON string, quoted and escaped.
fn json_string(out: &mut Vec<u8>, text: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// The `source` label of a request to a source that is not configured: the requested name is
/// the sender's to choose, and would make one series per name.
pub const UNKNOWN_SOURCE: &str = app::db::rejected::UNKNOWN_BUCKET;

/// Counts a request refused before ingest in `hookbox_refused_requests_total{source,reason}`.
fn refused(source: &str, rejection: &Rejection) {
    metrics::counter!(
        "hookbox_refused_requests_total",
        "source" => source.to_string(),
        "reason" => rejection.reason()
    )
    .increment(1);
}

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
    /// The `reason` label of `hookbox_refused_requests_total`.
    pub fn reason(&self) -> &'static str {
        match self {
            Rejection::UnknownSource => "unknown_source",
            Rejection::TooLarge { .. } => "too_large",
            Rejection::TimedOut { .. } => "timed_out",
            Rejection::Unreadable => "unreadable",
            Rejection::Unauthorized => "unauthorized",
            Rejection::RateLimited { .. } => "rate_limited",
            Rejection::Unavailable { .. } => "unavailable",
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
        let mut response = answer(status, body);
        if let Some((name, value)) = extra {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// Reads the body, at most `limit` bytes, within `deadline` in all. A larger body is read on and
/// discarded (up to [`DISCARD_BYTES`], within the same deadline) before the 413, so the answer
/// reaches a sender that reads only after writing. A refusal comes with its cause and the bytes
/// seen (read, or declared when the declared length alone refuses it).
async fn read_body(
    body: Body,
    declared: Option<u64>,
    headers: &HeaderMap,
    limit: usize,
    deadline: Duration,
) -> Result<Bytes, (Rejection, String, u64)> {
    let read_so_far = std::sync::atomic::AtomicU64::new(0);
    let read = async {
        let mut body = body;
        if let Some(declared) = declared.filter(|n| *n > limit as u64) {
            // A client waiting for `100 Continue` has sent nothing yet, and one announcing more
            // than we would discard is answered at once.
            let waits = headers
                .get(header::EXPECT)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
            if !waits && declared <= DISCARD_BYTES {
                discard(&mut body, declared).await;
            }
            return Err((
                Rejection::TooLarge { limit },
                format!("Content-Length {declared} is over the limit of {limit} bytes"),
                declared,
            ));
        }
        let mut buffer = BytesMut::with_capacity(declared.map_or(0, |n| n as usize));
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                let read = buffer.len();
                return Err((
                    Rejection::Unreadable,
                    format!("the connection broke after {read} bytes of the body"),
                    read as u64,
                ));
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if buffer.len() + data.len() > limit {
                let read = (buffer.len() + data.len()) as u64;
                discard(&mut body, DISCARD_BYTES).await;
                return Err((
                    Rejection::TooLarge { limit },
                    format!(
                        "the body passed the limit of {limit} bytes (no Content-Length said so)"
                    ),
                    read,
                ));
            }
            buffer.extend_from_slice(&data);
            read_so_far.store(buffer.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(buffer.freeze())
    };
    match tokio::time::timeout(deadline, read).await {
        Ok(result) => result,
        Err(_) => {
            let read = read_so_far.load(std::sync::atomic::Ordering::Relaxed);
            Err((
                Rejection::TimedOut { deadline },
                format!(
                    "the body did not arrive within {} s ({read} bytes of {} arrived)",
                    deadline.as_secs(),
                    declared.map_or_else(|| "an undeclared length".to_string(), |n| n.to_string())
                ),
                read,
            ))
        }
    }
}

/// Reads and drops what is left of a body, up to `at_most` bytes (never more than
/// [`DISCARD_BYTES`]); stops early at an error.
async fn discard(body: &mut Body, at_most: u64) {
    let at_most = at_most.min(DISCARD_BYTES);
    let mut seen: u64 = 0;
    while seen <= at_most {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    seen += data.len() as u64;
                }
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The archive's entries as a JSON object of them: what the archive kept before the
    /// headers were written straight into text.
    fn as_json_value(headers: &HeaderMap, source: &app::config::Source) -> String {
        let map: serde_json::Map<String, Value> = archived_entries(headers, source)
            .into_iter()
            .map(|(name, value)| (name, Value::String(value)))
            .collect();
        Value::Object(map).to_string()
    }

    fn shop() -> app::config::Source {
        let config = app::config::Config::parse(
            "[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"S\"]\n",
            std::path::Path::new("t.toml"),
            &|_| Some("s3cret".into()),
        )
        .unwrap();
        config.source("shop").unwrap().clone()
    }

    /// What the answers were before they were serialised from a struct: JSON objects.
    fn as_json_object(outcome: &Outcome, event_id: Option<&str>) -> Value {
        match outcome {
            Outcome::Applied { revision } => {
                json!({"status": "applied", "event_id": event_id, "revision": revision})
            }
            Outcome::Stale {
                revision,
                current_revision,
            } => {
                json!({"status": "stale", "event_id": event_id, "revision": revision, "current_revision": current_revision})
            }
            Outcome::Accepted => json!({"status": "accepted", "event_id": event_id}),
            Outcome::Duplicate => {
                json!({"status": "duplicate", "event_id": event_id, "idempotent": true})
            }
            Outcome::ReplayedBody { original_event_id } => {
                json!({"status": "duplicate", "event_id": original_event_id, "idempotent": true, "delivered_as": event_id})
            }
            Outcome::ReusedEventId | Outcome::ReusedRevision { .. } => {
                let mut body = json!({
                    "status": "conflict",
                    "reason": outcome.name(),
                    "event_id": event_id,
                    "message": outcome.error_message(),
                });
                if let (
                    Outcome::ReusedRevision {
                        existing_event_id: Some(holder),
                    },
                    Value::Object(map),
                ) = (outcome, &mut body)
                {
                    map.insert("existing_event_id".into(), Value::String(holder.clone()));
                }
                body
            }
            Outcome::Invalid { reason } => json!({"status": "invalid", "reason": reason}),
        }
    }

    #[tokio::test]
    async fn every_answer_is_the_json_object_it_was_byte_for_byte() {
        let outcomes = [
            Outcome::Applied { revision: 7 },
            Outcome::Stale {
                revision: 3,
                current_revision: 7,
            },
            Outcome::Accepted,
            Outcome::Duplicate,
            Outcome::ReplayedBody {
                original_event_id: "evt \"1\"".into(),
            },
            Outcome::ReusedEventId,
            Outcome::ReusedRevision {
                existing_event_id: Some("evt-9".into()),
            },
            Outcome::ReusedRevision {
                existing_event_id: None,
            },
            Outcome::Invalid {
                reason: "snapshot is missing".into(),
            },
        ];
        for outcome in &outcomes {
            for event_id in [Some("evt-2"), None] {
                let response = outcome_answer(outcome, event_id, None);
                assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
                let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
                    .await
                    .unwrap();
                assert_eq!(
                    String::from_utf8(bytes.to_vec()).unwrap(),
                    as_json_object(outcome, event_id).to_string(),
                    "{outcome:?} {event_id:?}"
                );
            }
        }
        assert_eq!(
            outcome_answer(&Outcome::ReusedEventId, None, None).status(),
            StatusCode::CONFLICT
        );
        assert_eq!(
            outcome_answer(
                &Outcome::Invalid { reason: "x".into() },
                None,
                Some(StatusCode::BAD_REQUEST)
            )
            .status(),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn archived_headers_are_the_json_object_of_the_headers_byte_for_byte() {
        let source = shop();
        let mut headers = HeaderMap::new();
        headers.insert("x-z-last", HeaderValue::from_static("z"));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer s3cret"),
        );
        headers.append("x-forwarded-for", HeaderValue::from_static("192.0.2.1"));
        headers.append("x-forwarded-for", HeaderValue::from_static("198.51.100.2"));
        headers.insert(
            header::USER_AGENT,
            HeaderValue::from_static(r#"say "hi" \ back"#),
        );
        headers.insert("accept", HeaderValue::from_bytes(b"caf\xe9\tx").unwrap());
        headers.insert(header::COOKIE, HeaderValue::from_static("a=b"));
        headers.insert("x-hookbox-signature", HeaderValue::from_static("t=1,v1=ab"));
        headers.insert("content-type", HeaderValue::from_static(""));
        let written = archived_headers(&headers, &source);
        assert_eq!(written, as_json_value(&headers, &source));
        let parsed: Value = serde_json::from_str(&written).unwrap();
        assert_eq!(parsed["authorization"], "[redacted, 13 bytes]");
        assert_eq!(parsed["cookie"], "[redacted, 3 bytes]");
        assert_eq!(parsed["x-z-last"], "[redacted, 1 bytes]");
        assert_eq!(parsed["x-forwarded-for"], "192.0.2.1, 198.51.100.2");
        assert_eq!(parsed["user-agent"], r#"say "hi" \ back"#);
        assert_eq!(parsed["accept"], "caf\u{fffd}\tx");
        assert_eq!(parsed["x-hookbox-signature"], "t=1,v1=ab");
        assert!(written.starts_with(r#"{"accept":"caf"#), "{written}");
        assert!(!written.contains("s3cret"));
        assert_eq!(archived_headers(&HeaderMap::new(), &source), "{}");
    }

    #[test]
    fn archived_headers_are_bounded_whatever_arrives() {
        let source = shop();
        let mut headers = HeaderMap::new();
        for i in 0..100 {
            // Names of 2 kB sharing their first 64 bytes, then short distinct ones.
            let name = if i < 10 {
                format!("{}{i}", "n".repeat(2000))
            } else {
                format!("x-h{i}")
            };
            headers.insert(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(&"v".repeat(5000)).unwrap(),
            );
        }
        headers.insert(
            header::USER_AGENT,
            HeaderValue::from_str(&"u".repeat(100_000)).unwrap(),
        );
        let written = archived_headers(&headers, &source);
        assert_eq!(written, as_json_value(&headers, &source));
        let parsed: serde_json::Map<String, Value> = serde_json::from_str(&written).unwrap();
        // 10 long names as one, 53 short ones, the user agent and the rest counted.
        assert_eq!(parsed.len(), ARCHIVED_REDACTED_KEPT + 2, "{parsed:?}");
        let long = format!("{}…", "n".repeat(ARCHIVED_NAME_BYTES - 3));
        assert_eq!(parsed[&long], "[redacted, 50000 bytes]");
        assert_eq!(parsed["…"], "27 more headers (135135 bytes) not kept");
        assert_eq!(
            parsed["user-agent"].as_str().unwrap().len(),
            ARCHIVED_VALUE_BYTES
        );
        assert!(parsed.keys().all(|k| k.len() <= ARCHIVED_NAME_BYTES));
        assert!(
            written.len() < ARCHIVED_VALUE_BYTES + 64 * 100,
            "{}",
            written.len()
        );
    }
}
