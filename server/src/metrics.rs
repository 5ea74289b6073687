//! `GET /metrics` in Prometheus text format, and the request-timing middleware.
//!
//! Metric names: `hookbox_deliveries_total{source,outcome}`, `hookbox_auth_failures_total{source}`,
//! `hookbox_rate_limited_total{source}`, `hookbox_http_request_duration_seconds{method,route,status}`,
//! `hookbox_ingest_transaction_duration_seconds{source}`, `hookbox_db_pool_connections{state}`
//! (in_use, idle, max), `hookbox_db_pool_waiting` (deliveries waiting for a connection to begin
//! their transaction), `hookbox_purge_runs_total{outcome}`, `hookbox_purge_deleted_rows_total`
//! (the daily retention run).

use crate::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Instant;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Seconds: from a fast commit to the pool's acquire timeout.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Installs the process-wide recorder once and returns its handle.
pub fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
                .unwrap_or_else(|_| PrometheusBuilder::new());
            match builder.install_recorder() {
                Ok(handle) => handle,
                // Another recorder is installed (it cannot happen in the binary): render an
                // empty registry rather than fail.
                Err(_) => PrometheusBuilder::new().build_recorder().handle(),
            }
        })
        .clone()
}

pub async fn render(State(state): State<AppState>) -> Response {
    let (size, idle, max) = match state.db.backend() {
        sea_orm::DatabaseBackend::Postgres => {
            let pool = state.db.writer.get_postgres_connection_pool();
            (
                pool.size(),
                pool.num_idle() as u32,
                pool.options().get_max_connections(),
            )
        }
        _ => {
            let pool = state.db.writer.get_sqlite_connection_pool();
            (
                pool.size(),
                pool.num_idle() as u32,
                pool.options().get_max_connections(),
            )
        }
    };
    metrics::gauge!("hookbox_db_pool_connections", "state" => "in_use")
        .set(f64::from(size.saturating_sub(idle)));
    metrics::gauge!("hookbox_db_pool_connections", "state" => "idle").set(f64::from(idle));
    metrics::gauge!("hookbox_db_pool_connections", "state" => "max").set(f64::from(max));
    // Kept by `ingest::begin`; touched here so the series exists before the first delivery.
    metrics::gauge!(app::ingest::POOL_WAITING).increment(0.0);
    if !state.config.destinations.is_empty() {
        match app::forward::backlog(&state.db).await {
            Ok(backlog) => {
                let now = chrono::Utc::now();
                for destination in &state.config.destinations {
                    let found = backlog.iter().find(|b| b.destination == destination.name);
                    let pending = found.map_or(0, |b| b.pending);
                    let oldest = found.and_then(|b| b.oldest).map_or(0.0, |at| {
                        (now - at).num_milliseconds().max(0) as f64 / 1000.0
                    });
                    metrics::gauge!("hookbox_forward_pending", "destination" => destination.name.clone())
                        .set(pending as f64);
                    metrics::gauge!("hookbox_forward_oldest_pending_seconds", "destination" => destination.name.clone())
                        .set(oldest);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics: the forwarding backlog could not be read")
            }
        }
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        state.metrics.render(),
    )
        .into_response()
}

/// Times every request by its route (never by its raw path, which would explode the labels).
pub async fn time_requests(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let method = request.method().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    metrics::histogram!(
        "hookbox_http_request_duration_seconds",
        "method" => method,
        "route" => route,
        "status" => response.status().as_u16().to_string()
    )
    .record(started.elapsed().as_secs_f64());
    response
}
