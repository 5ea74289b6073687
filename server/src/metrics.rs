//! `GET /metrics` in Prometheus text format, and the request-timing middleware.
//!
//! Metric names: `hookbox_deliveries_total{source,outcome}`, `hookbox_auth_failures_total{source}`,
//! `hookbox_rate_limited_total{source}`, `hookbox_refused_requests_total{source,reason}` (every
//! request refused before ingest), `hookbox_last_delivery_timestamp_seconds{source}`,
//! `hookbox_source_info{source}` (1 for each configured source),
//! `hookbox_http_request_duration_seconds{method,route,status}`,
//! `hookbox_ingest_transaction_duration_seconds{source}`, `hookbox_db_pool_connections{state}`
//! (in_use, idle, max), `hookbox_db_pool_waiting` (deliveries waiting for a connection to begin
//! their transaction), `hookbox_purge_runs_total{outcome}`, `hookbox_purge_deleted_rows_total`,
//! `hookbox_purge_dropped_days_total`,
//! `hookbox_purge_expired_bodies_total`, `hookbox_cold_archive_runs_total{outcome}`,
//! `hookbox_cold_archive_rows_total`, `hookbox_cold_archive_failing`,
//! `hookbox_last_purge_timestamp_seconds` (the daily retention run); read from the database at
//! each scrape: `hookbox_forward_pending`, `hookbox_forward_oldest_pending_seconds`,
//! `hookbox_forward_dead` (by destination), `hookbox_verify_last_run_timestamp_seconds`,
//! `hookbox_verify_last_run_drifts`, `hookbox_verify_last_run_repaired`, and
//! `hookbox_open_failures{source}`, `hookbox_open_problems{source}` (read at most every
//! [`OPEN_PROBLEMS_EVERY`], see [`read_open_problems`]), and
//! `hookbox_metrics_read_failures_total{read}` when one of those reads fails. The shipped alert
//! rules over them: `deploy/prometheus/alerts.yml`, `docs/alerts.md`.

use crate::AppState;
use app::model::OutcomeKind;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Instant;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The metrics each delivery to a source touches, each registered on its first use and then
/// kept: a lookup by name and labels per delivery was 2% of ingest's CPU.
pub struct SourceMetrics {
    source: String,
    transaction: OnceLock<metrics::Histogram>,
    last_delivery: OnceLock<metrics::Gauge>,
    /// `hookbox_deliveries_total{outcome}`, in the order of `OutcomeKind::ALL`.
    outcomes: Vec<OnceLock<metrics::Counter>>,
    unavailable: OnceLock<metrics::Counter>,
}

impl SourceMetrics {
    pub fn new(source: &str) -> SourceMetrics {
        SourceMetrics {
            source: source.to_string(),
            transaction: OnceLock::new(),
            last_delivery: OnceLock::new(),
            outcomes: OutcomeKind::ALL.iter().map(|_| OnceLock::new()).collect(),
            unavailable: OnceLock::new(),
        }
    }

    /// `hookbox_ingest_transaction_duration_seconds{source}`.
    pub fn transaction(&self) -> &metrics::Histogram {
        self.transaction.get_or_init(|| {
            metrics::histogram!("hookbox_ingest_transaction_duration_seconds", "source" => self.source.clone())
        })
    }

    /// `hookbox_last_delivery_timestamp_seconds{source}`.
    pub fn last_delivery(&self) -> &metrics::Gauge {
        self.last_delivery.get_or_init(|| {
            metrics::gauge!("hookbox_last_delivery_timestamp_seconds", "source" => self.source.clone())
        })
    }

    /// `hookbox_deliveries_total{source,outcome}` of a recorded delivery.
    pub fn delivered(&self, kind: OutcomeKind) -> &metrics::Counter {
        let index = OutcomeKind::ALL.iter().position(|k| *k == kind);
        match index.and_then(|i| self.outcomes.get(i)) {
            Some(slot) => slot.get_or_init(|| {
                metrics::counter!("hookbox_deliveries_total", "source" => self.source.clone(), "outcome" => kind.as_str())
            }),
            None => self.unavailable(),
        }
    }

    /// `hookbox_deliveries_total{source,outcome="unavailable"}`: not recorded, answered 503.
    pub fn unavailable(&self) -> &metrics::Counter {
        self.unavailable.get_or_init(|| {
            metrics::counter!("hookbox_deliveries_total", "source" => self.source.clone(), "outcome" => "unavailable")
        })
    }
}

/// [`SourceMetrics`] of every configured source.
#[derive(Default)]
pub struct DeliveryMetrics(std::collections::HashMap<String, SourceMetrics>);

impl DeliveryMetrics {
    pub fn of(config: &app::config::Config) -> DeliveryMetrics {
        DeliveryMetrics(
            config
                .sources
                .iter()
                .map(|s| (s.name.clone(), SourceMetrics::new(&s.name)))
                .collect(),
        )
    }

    pub fn get(&self, source: &str) -> Option<&SourceMetrics> {
        self.0.get(source)
    }
}

/// Seconds: from a fast commit to the pool's acquire timeout.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// How often, at most, the feed consumers' lag is read for `/metrics`.
pub const FEED_LAG_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

/// Each feed consumer's lag gauges, refreshed at most once per [`FEED_LAG_EVERY`] by a task of
/// its own (one at a time): a scrape never waits for the reading, it shows the last figures.
/// Every consumer's lag is one bounded statement (`consumers::lags`); a consumer deleted since
/// reads 0.
fn read_feed_lag(db: &app::db::Db) {
    use app::feed::consumers;
    static LAST: tokio::sync::Mutex<(Option<Instant>, Vec<String>)> =
        tokio::sync::Mutex::const_new((None, Vec::new()));
    // A refresh running holds it: that one will do.
    let Ok(mut last) = LAST.try_lock() else {
        return;
    };
    if last.0.is_some_and(|at| at.elapsed() < FEED_LAG_EVERY) {
        return;
    }
    last.0 = Some(Instant::now());
    let db = db.clone();
    tokio::spawn(async move {
        let list = match consumers::list(&db).await {
            Ok(list) => list,
            Err(e) => {
                metrics::counter!(READ_FAILURES, "read" => "feed_lag").increment(1);
                tracing::warn!(error = %e, "metrics: the feed consumers could not be listed");
                return;
            }
        };
        match consumers::lags(&db, &list).await {
            Ok(lags) => {
                for (consumer, lag) in list.iter().zip(lags) {
                    feed_lag(&consumer.name, lag.items, lag.seconds);
                }
            }
            Err(e) => {
                metrics::counter!(READ_FAILURES, "read" => "feed_lag").increment(1);
                tracing::warn!(error = %e, "metrics: the feed consumers' lag could not be read");
            }
        }
        for gone in last
            .1
            .iter()
            .filter(|n| !list.iter().any(|c| &c.name == *n))
        {
            feed_lag(gone, 0, 0);
        }
        last.1 = list.into_iter().map(|c| c.name).collect();
    });
}

/// A feed consumer's lag: items behind (among the `consumers::LAG_SCAN` rows looked at) and the age
/// of the oldest of them, in seconds.
fn feed_lag(consumer: &str, items: i64, seconds: i64) {
    metrics::gauge!("hookbox_feed_consumer_lag_items", "consumer" => consumer.to_string())
        .set(items as f64);
    metrics::gauge!("hookbox_feed_consumer_lag_seconds", "consumer" => consumer.to_string())
        .set(seconds as f64);
}

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
    // Each backend's pool reports itself through its own sqlx type: not a matter of SQL.
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
    // 0 until the first run: an alert sees "never", not nothing.
    metrics::gauge!(app::maintenance::daily::LAST_PURGE).increment(0.0);
    if state.config.archive.is_some() {
        metrics::gauge!(app::maintenance::daily::COLD_ARCHIVE_FAILING).increment(0.0);
    }
    // Which sources the alerts expect deliveries from, delivered to yet or not. The counters
    // the alerts take the increase of are touched at 0: a series that first appears at 1 shows
    // no increase, and its first 503 or dead delivery would raise no alert.
    for source in &state.config.sources {
        metrics::gauge!("hookbox_source_info", "source" => source.name.clone()).set(1.0);
        metrics::counter!("hookbox_deliveries_total", "source" => source.name.clone(), "outcome" => "unavailable")
            .increment(0);
    }
    for destination in &state.config.destinations {
        metrics::counter!("hookbox_forward_attempts_total", "destination" => destination.name.clone(), "result" => "dead")
            .increment(0);
    }
    for read in READS {
        // A counter that exists at 0, so its first failure is an increase.
        metrics::counter!(READ_FAILURES, "read" => *read).increment(0);
    }
    read_verify_runs(&state).await;
    read_open_problems(&state).await;
    read_feed_lag(&state.db);
    if !state.config.destinations.is_empty() {
        read_forward_dead(&state).await;
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
                metrics::counter!(READ_FAILURES, "read" => "forward_backlog").increment(1);
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

/// A read of the database at scrape failed (its gauges keep their previous value).
const READ_FAILURES: &str = "hookbox_metrics_read_failures_total";
const READS: &[&str] = &[
    "forward_backlog",
    "forward_dead",
    "verify_runs",
    "open_problems",
    "feed_lag",
];

/// How often a scrape reads the open problems at most: the read groups every open failure (an
/// index of them, `db::problems`), so however often and by however many scrapers `/metrics` is
/// read, the database does it at most once per period; between, the gauges keep the last read.
pub const OPEN_PROBLEMS_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

/// When the open problems were last read, and the sources their gauges were set for.
static OPEN_PROBLEMS_READ: tokio::sync::Mutex<(Option<Instant>, Vec<String>)> =
    tokio::sync::Mutex::const_new((None, Vec::new()));

/// `hookbox_open_failures{source}` and `hookbox_open_problems{source}` (`db::problems`: not
/// replays, not resolved, the cause neither ignored nor resolved since), every configured
/// source at 0 when it has none; a source that had some and is no longer configured goes to 0.
async fn read_open_problems(state: &AppState) {
    let mut read = OPEN_PROBLEMS_READ.lock().await;
    if read.0.is_some_and(|at| at.elapsed() < OPEN_PROBLEMS_EVERY) {
        return;
    }
    read.0 = Some(Instant::now());
    match app::db::problems::open_by_source(&state.db).await {
        Ok(counts) => {
            let mut sources: Vec<String> = state
                .config
                .sources
                .iter()
                .map(|s| s.name.clone())
                .collect();
            sources.extend(counts.iter().map(|(source, _)| source.clone()));
            sources.append(&mut read.1);
            sources.sort();
            sources.dedup();
            for source in &sources {
                let n = counts
                    .iter()
                    .find(|(s, _)| s == source)
                    .map(|(_, n)| n.clone())
                    .unwrap_or_default();
                metrics::gauge!("hookbox_open_failures", "source" => source.clone())
                    .set(n.failures as f64);
                metrics::gauge!("hookbox_open_problems", "source" => source.clone())
                    .set(n.problems as f64);
            }
            read.1 = counts.into_iter().map(|(source, _)| source).collect();
        }
        Err(e) => {
            metrics::counter!(READ_FAILURES, "read" => "open_problems").increment(1);
            tracing::warn!(error = %e, "metrics: the open problems could not be read")
        }
    }
}

/// The last `hookbox verify` run (`verify_runs`): its time (0 when none is recorded), the drifts
/// it found and how many it repaired.
async fn read_verify_runs(state: &AppState) {
    match app::db::verify_runs::last_run(&state.db).await {
        Ok(run) => {
            let (at, drifts, repaired) = run.map_or((0.0, 0, 0), |run| {
                let at = chrono::DateTime::parse_from_rfc3339(&run.ran_at)
                    .map_or(0.0, |at| at.timestamp_micros() as f64 / 1e6);
                (at, run.drift_count, run.repaired)
            });
            metrics::gauge!("hookbox_verify_last_run_timestamp_seconds").set(at);
            metrics::gauge!("hookbox_verify_last_run_drifts").set(drifts as f64);
            metrics::gauge!("hookbox_verify_last_run_repaired").set(repaired as f64);
        }
        Err(e) => {
            metrics::counter!(READ_FAILURES, "read" => "verify_runs").increment(1);
            tracing::warn!(error = %e, "metrics: the last verify run could not be read")
        }
    }
}

/// Each configured destination's dead deliveries (kept until an operator retries them), on the
/// dashboard's pool. One statement over the index on `(destination, status, id)`.
async fn read_forward_dead(state: &AppState) {
    let destinations = &state.config.destinations;
    let names: Vec<&str> = destinations.iter().map(|d| d.name.as_str()).collect();
    match app::db::destinations::dead_counts(&state.db, &names).await {
        Ok(counts) => {
            for (destination, dead) in destinations.iter().zip(counts) {
                metrics::gauge!("hookbox_forward_dead", "destination" => destination.name.clone())
                    .set(dead as f64);
            }
        }
        Err(e) => {
            metrics::counter!(READ_FAILURES, "read" => "forward_dead").increment(1);
            tracing::warn!(error = %e, "metrics: the dead forward deliveries could not be read")
        }
    }
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
