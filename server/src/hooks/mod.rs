//! `POST /hooks/{source}`: authenticate over the raw bytes, validate, ingest, answer
//! (the answers table of `docs/webhooks.md`). Nothing is answered 2xx before its transaction has
//! committed, except a provider's handshake (Slack's URL verification), which is authenticated but
//! is not an event.
//!
//! The handler and its steps are here; the body read within limits in `body`, what the archive
//! keeps of the headers in `archived`, the refusals and the 503 in `refusal`, the answers to an
//! ingested delivery in `answer`.

mod answer;
mod archived;
mod body;
mod refusal;

pub use archived::{ARCHIVED_NAME_BYTES, ARCHIVED_REDACTED_KEPT, ARCHIVED_VALUE_BYTES};
pub use body::DISCARD_BYTES;
pub use refusal::{RETRY_AFTER_SECS, Rejection, UNKNOWN_SOURCE};

use crate::AppState;
use crate::metrics::SourceMetrics;
use crate::request_id::RequestId;
use answer::{json, outcome_answer};
use app::config::Source;
use app::envelope::{Envelope, FormRead, Invalid};
use app::ingest::read_delivery;
use app::ingest::{self, Outcome, Received, Recorded};
use app::providers;
use archived::archived_headers;
use axum::Extension;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use body::{declared_length, read_body};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use refusal::{BodySeen, Refusal};
use std::net::SocketAddr;
use std::time::Duration;

pub async fn receive(
    State(state): State<std::sync::Arc<AppState>>,
    Path(source_name): Path<String>,
    request_id: RequestId,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let client = state.settings.trusted_proxies.client_of(
        peer.as_ref().map(|Extension(ConnectInfo(addr))| *addr),
        &headers,
    );
    let sent = Sent {
        headers: &headers,
        query: query.as_deref(),
        client: &client,
    };
    match ingest_request(&state, &source_name, request_id.clone(), sent, body).await {
        Ok(response) => response,
        Err(refusal) => refusal
            .count_and_log(&state, &source_name, &request_id, peer, &headers)
            .into_response(),
    }
}

/// `GET /hooks/{source}`: a provider's endpoint verification by GET (Dropbox's `?challenge=`),
/// echoed as inert text; every other source answers 405, since deliveries are POSTed.
pub async fn verify_endpoint(
    State(state): State<std::sync::Arc<AppState>>,
    Path(source_name): Path<String>,
    request_id: RequestId,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let source = match configured_source(&state, &source_name, None) {
        Ok(source) => source,
        Err(refusal) => {
            return refusal
                .count_and_log(&state, &source_name, &request_id, peer, &headers)
                .into_response();
        }
    };
    match providers::get_challenge(source.preset, query.as_deref()) {
        None => (
            StatusCode::METHOD_NOT_ALLOWED,
            [(axum::http::header::ALLOW, "POST")],
            axum::Json(serde_json::json!({
                "status": "method_not_allowed",
                "reason": "deliveries are POSTed; this source's provider verifies no endpoint by GET",
            })),
        )
            .into_response(),
        Some(Err(why)) => json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"status": "bad_request", "reason": why}),
        ),
        Some(Ok(challenge)) => {
            tracing::info!(source = %source.name, "endpoint verification answered (not archived)");
            (
                StatusCode::OK,
                [
                    (axum::http::header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                    (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                ],
                challenge,
            )
                .into_response()
        }
    }
}

/// What of the request besides its body a signature may cover.
#[derive(Clone, Copy)]
struct Sent<'a> {
    headers: &'a HeaderMap,
    /// The query string as received, without its `?`.
    query: Option<&'a str>,
    /// The client's address (behind trusted proxies, the one they name).
    client: &'a str,
}

/// The request's steps, in order: the source, the body within limits, authentication, the
/// source's rate, a provider's handshake, then ingest and its answer.
async fn ingest_request(
    state: &AppState,
    source_name: &str,
    request_id: RequestId,
    sent: Sent<'_>,
    body: Body,
) -> Result<Response, Refusal> {
    let headers = sent.headers;
    let declared = declared_length(headers);
    let source = configured_source(state, source_name, declared)?;
    let body = read_within_limits(state, body, declared, headers).await?;
    let now = Utc::now();
    if let Some(offer) = providers::secret_offer(source.preset, headers, &body) {
        return capture_secret(state, source, sent, &body, offer, request_id).await;
    }
    let signed = authenticate_off_worker(state, source, sent, &body, now).await?;
    within_rate_limit(state, source, &body)?;
    if let Some(reply) =
        providers::handshake_answer(source.scheme, source.preset, &source.keys, headers, &body)
    {
        tracing::info!(source = %source.name, "provider handshake answered (not archived)");
        return Ok(match reply {
            providers::Handshake::Json(reply) => json(StatusCode::OK, reply),
            providers::Handshake::Text(text) => (
                StatusCode::OK,
                [(
                    axum::http::header::CONTENT_TYPE,
                    "text/plain; charset=utf-8",
                )],
                text,
            )
                .into_response(),
        });
    }
    let ingested = ingest(state, source, headers, &body, signed, now, request_id).await?;
    Ok(outcome_answer(
        &ingested.outcome,
        ingested.event_id.as_deref(),
        ingested.invalid_status,
    ))
}

/// Unsigned handshakes a source takes a second, per process (each reads the database).
pub const HANDSHAKES_PER_SEC: u32 = 2;

/// A provider's unsigned first request handing over the source's secret (Asana, Notion): taken
/// only while an operator waits for it (`hookbox handshake`), sealed to that operator, answered
/// as the provider requires, never archived. Otherwise a 401.
async fn capture_secret(
    state: &AppState,
    source: &Source,
    sent: Sent<'_>,
    body: &Bytes,
    offer: Result<providers::SecretOffer, &'static str>,
    request_id: RequestId,
) -> Result<Response, Refusal> {
    let refuse = |cause: &str| {
        metrics::counter!("hookbox_auth_failures_total", "source" => source.name.clone())
            .increment(1);
        Refusal::new(
            Rejection::Unauthorized,
            cause.to_string(),
            BodySeen::read(body),
        )
    };
    let offer = offer.map_err(&refuse)?;
    // Unsigned, so bounded before the database is asked: handshakes are rare.
    if let Err(wait) = state
        .limits
        .handshakes
        .take(&source.name, HANDSHAKES_PER_SEC)
    {
        let retry_after_secs = wait.as_secs().max(1);
        return Err(Refusal::new(
            Rejection::RateLimited {
                per_sec: HANDSHAKES_PER_SEC,
                retry_after_secs,
            },
            format!("over {HANDSHAKES_PER_SEC} handshakes a second for the source"),
            BodySeen::read(body),
        ));
    }
    let unavailable = |e: sea_orm::DbErr| {
        tracing::error!(source = %source.name, error = %e, "handshake not taken: database unavailable");
        Refusal::new(
            Rejection::Unavailable {
                request_id: request_id.clone(),
            },
            String::new(),
            BodySeen::default(),
        )
    };
    let wait = app::db::handshakes::open_wait_of(&state.db, &source.name)
        .await
        .map_err(unavailable)?;
    let Some((id, public_key)) = wait else {
        return Err(refuse(
            "a handshake handing over a secret, and no operator waits for one (hookbox handshake SOURCE)",
        ));
    };
    let Some(sealed) = crate::handshake::seal(&public_key, &offer.secret) else {
        return Err(refuse(
            "the waiting operator's key is not an X25519 public key",
        ));
    };
    let filled = app::db::handshakes::fill_wait(&state.db, id, &sealed, sent.client)
        .await
        .map_err(unavailable)?;
    if !filled {
        return Err(refuse("another handshake was taken for this wait first"));
    }
    tracing::info!(source = %source.name, client = %sent.client, "handshake secret sealed for the waiting operator (not archived)");
    let mut response = json(StatusCode::OK, serde_json::json!({"status": "handshake"}));
    if let Some(name) = offer.echo_header
        && let Ok(value) = axum::http::HeaderValue::from_str(&offer.secret)
    {
        response
            .headers_mut()
            .insert(axum::http::HeaderName::from_static(name), value);
    }
    Ok(response)
}

/// The configured source of that name; none is a 404, the body left unread.
fn configured_source<'a>(
    state: &'a AppState,
    source_name: &str,
    declared: Option<u64>,
) -> Result<&'a Source, Refusal> {
    state.config.source(source_name).ok_or_else(|| {
        Refusal::new(
            Rejection::UnknownSource,
            format!(
                "no source named \"{}\" is configured (the body was not read)",
                app::headers::cut(source_name, 60)
            ),
            BodySeen::declared(declared),
        )
    })
}

/// The body, within the server's `max_body_bytes` and `body_read_timeout_secs`.
async fn read_within_limits(
    state: &AppState,
    body: Body,
    declared: Option<u64>,
    headers: &HeaderMap,
) -> Result<Bytes, Refusal> {
    // In all, not per chunk: a sender trickling its body cannot hold a connection longer.
    let deadline = Duration::from_secs(state.config.server.body_read_timeout_secs);
    read_body(
        body,
        declared,
        headers,
        state.config.server.max_body_bytes,
        deadline,
    )
    .await
}

/// [`authenticate`], on a blocking thread in its turn ([`app::blocking`]) when the body is large
/// ([`app::ingest::READ_ON_WORKER_BYTES`]): a signature over a large body (Twilio's sorted
/// form, an HMAC over a megabyte) never holds an async worker, nor does its signed digest.
async fn authenticate_off_worker(
    state: &AppState,
    source: &Source,
    sent: Sent<'_>,
    body: &Bytes,
    now: DateTime<Utc>,
) -> Result<Signed, Refusal> {
    if body.len() <= app::ingest::READ_ON_WORKER_BYTES {
        return authenticate(state, source, sent, body, now);
    }
    let (owned_state, name, owned_body) = (state.clone(), source.name.clone(), body.clone());
    let (headers, query, client) = (
        sent.headers.clone(),
        sent.query.map(str::to_string),
        sent.client.to_string(),
    );
    let checked = app::blocking::run(move || {
        let source = owned_state.config.source(&name)?;
        let sent = Sent {
            headers: &headers,
            query: query.as_deref(),
            client: &client,
        };
        Some(authenticate(&owned_state, source, sent, &owned_body, now))
    })
    .await;
    match checked.flatten() {
        Some(result) => result,
        None => {
            tracing::error!(source = %source.name, "authentication could not run");
            Err(Refusal::new(
                Rejection::Unauthorized,
                "authentication could not run".into(),
                BodySeen::read(body),
            ))
        }
    }
}

/// What authentication tells of a delivery: the digest of what its sender signed, which the
/// captured-request guard compares whatever the encoding (`Auth::replay_digest`).
type Signed = Option<[u8; 32]>;

/// Checks the source's scheme over the raw bytes; a failure is a 401 that tells nothing more.
fn authenticate(
    state: &AppState,
    source: &Source,
    sent: Sent<'_>,
    body: &Bytes,
    now: DateTime<Utc>,
) -> Result<Signed, Refusal> {
    // The URL the sender signed: behind a proxy only the configured origin knows it.
    let url = state.config.server.public_url.as_ref().map(|origin| {
        let query = sent.query.map(|q| format!("?{q}")).unwrap_or_default();
        format!("{origin}/hooks/{}{query}", source.name)
    });
    let request = app::schemes::Request {
        method: "POST",
        query: sent.query,
        url: url.as_deref(),
        headers: sent.headers,
        body,
    };
    let Err(why) = source.auth().verify(
        &request,
        &source.keys,
        source.tolerance_secs,
        now.timestamp(),
    ) else {
        return Ok(source.auth().replay_digest(sent.headers, body));
    };
    tracing::info!(source = %source.name, reason = %why, "authentication failed");
    metrics::counter!("hookbox_auth_failures_total", "source" => source.name.clone()).increment(1);
    Err(Refusal::new(
        Rejection::Unauthorized,
        why.to_string(),
        BodySeen::read(body),
    ))
}

/// Takes one delivery from the source's `rate_limit_per_sec`; over it, a 429 with the wait.
/// Counted only once the sender is authenticated: unsigned junk cannot spend a genuine
/// sender's allowance.
fn within_rate_limit(state: &AppState, source: &Source, body: &Bytes) -> Result<(), Refusal> {
    let Some(per_sec) = source.rate_limit_per_sec else {
        return Ok(());
    };
    let Err(wait) = state.limits.sources.take(&source.name, per_sec) else {
        return Ok(());
    };
    metrics::counter!("hookbox_rate_limited_total", "source" => source.name.clone()).increment(1);
    let retry_after_secs = wait.as_secs().max(1);
    Err(Refusal::new(
        Rejection::RateLimited {
            per_sec,
            retry_after_secs,
        },
        format!(
            "over the source's {per_sec} deliveries a second; told to retry after {retry_after_secs} s"
        ),
        BodySeen::read(body),
    ))
}

/// What became of an ingested delivery, for its answer.
struct Ingested {
    outcome: Outcome,
    event_id: Option<String>,
    /// The 400 or 422 an invalid envelope chose.
    invalid_status: Option<StatusCode>,
}

/// Records the delivery in one transaction, timed and counted; the database failing is a 503.
/// A recorded new event wakes the forwarder when it was forwarded somewhere.
async fn ingest(
    state: &AppState,
    source: &Source,
    headers: &HeaderMap,
    body: &Bytes,
    signed: Signed,
    now: DateTime<Utc>,
    request_id: RequestId,
) -> Result<Ingested, Refusal> {
    let headers_json = archived_headers(headers, source);
    let read = read_delivery(source, headers, body).await;
    let received = received(
        source,
        &headers_json,
        body,
        signed,
        (read.form, &read.destinations[..]),
        now,
    );
    let fallback;
    let source_metrics = match state.delivery_metrics.get(&source.name) {
        Some(m) => m,
        None => {
            fallback = SourceMetrics::new(&source.name);
            &fallback
        }
    };
    let started = std::time::Instant::now();
    let (recorded, event_id, invalid_status) = record(state, source, read.parsed, &received).await;
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
    // Whatever the outcome: a commit may also let the feed serve rows held behind it.
    state.feed.committed();
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
    if !received.forward_to.is_empty()
        && matches!(outcome, Outcome::Applied { .. } | Outcome::Accepted)
    {
        state.forward_wake.notify_one();
    }
    Ok(Ingested {
        outcome,
        event_id,
        invalid_status,
    })
}

/// The delivery as ingest takes it: not a replay, for the destinations its read chose.
fn received<'a>(
    source: &'a Source,
    headers_json: &'a str,
    body: &'a Bytes,
    signed: Signed,
    (form, destinations): (FormRead, &'a [String]),
    now: DateTime<Utc>,
) -> Received<'a> {
    Received {
        source: &source.name,
        headers_json,
        body,
        body_fields: form.into_fields(),
        received_at: now,
        replay_of: None,
        replayed_by: None,
        signed_body_digest: signed,
        forward_to: destinations,
    }
}

/// Runs the transaction of a read delivery: a valid one applied (or deduplicated), an invalid
/// one archived as invalid. With the event id, and the 400 or 422 an invalid envelope chose.
async fn record(
    state: &AppState,
    source: &Source,
    parsed: Result<Envelope, Invalid>,
    received: &Received<'_>,
) -> (
    Result<Recorded, sea_orm::DbErr>,
    Option<String>,
    Option<StatusCode>,
) {
    match parsed {
        Ok(envelope) => {
            let recorded =
                ingest::apply_delivery(&state.db, source.mapping.mode, received, &envelope).await;
            (recorded, Some(envelope.event_id), None)
        }
        Err(invalid) => (
            ingest::record_invalid(&state.db, received, &invalid).await,
            invalid.event_id.clone(),
            Some(invalid.status()),
        ),
    }
}

#[cfg(test)]
mod tests;
