//! The `hookbox` binary's library: the axum router, the webhook endpoint and the commands.

pub mod api;
pub mod archive;
pub mod background;
pub mod check_config;
pub mod database;
pub mod export;
pub mod feed;
pub mod forwarder;
pub mod handshake;
pub mod hooks;
pub mod logging;
pub mod mail;
pub mod maintenance;
pub mod metrics;
pub mod notifier;
pub mod oidc;
pub mod rate_limit;
pub mod rejected_log;
pub mod request_id;
pub mod routes;
pub mod send;
pub mod serve;
pub mod tokens;
pub mod users;
pub mod wakeup;

use app::config::Config;
use app::db::Db;
use std::sync::Arc;

/// What every request handler shares.
#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub config: Arc<Config>,
    /// Rate limits by kind of key (sources, handshakes, API tokens, API clients).
    pub limits: Arc<rate_limit::Limits>,
    pub metrics: metrics_exporter_prometheus::PrometheusHandle,
    /// The environment's settings (trusted proxies, sessions, the shutdown grace, …).
    pub settings: Arc<app::config::Settings>,
    /// Notified when ingest commits a delivery with forward rows: the forwarder wakes.
    pub forward_wake: Arc<tokio::sync::Notify>,
    /// Told of every delivery this process commits: the pull feed's long polls wake.
    pub feed: Arc<feed::FeedSignal>,
    /// Where the endpoint records what it refuses; `serve` starts its writer (until then rows
    /// are dropped and counted).
    pub rejected_log: rejected_log::RejectedLog,
    /// The metrics handles of each configured source's deliveries.
    pub delivery_metrics: Arc<metrics::DeliveryMetrics>,
    /// Each signed-in user's dashboard requests in flight ([`routes::per_user`]).
    pub in_flight: routes::per_user::InFlight,
    /// The OpenID Provider of single sign-on (`[auth.oidc]`), when configured.
    pub oidc: Option<Arc<oidc::Provider>>,
}

impl AppState {
    /// The client address of a request as it is logged, limited and shown: its connection's
    /// peer, or the client a trusted proxy in front of it forwarded for.
    pub fn client_of(&self, request: &axum::extract::Request) -> String {
        let peer = request
            .extensions()
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|connected| connected.0);
        self.settings
            .trusted_proxies
            .client_of(peer, request.headers())
    }

    pub fn new(db: Db, config: Arc<Config>) -> AppState {
        let handle = metrics::install();
        let oidc = config.oidc.clone().and_then(|oidc| {
            let public_url = config.server.public_url.as_deref()?;
            oidc::Provider::new(oidc, public_url)
                .map_err(|e| tracing::error!(error = %e, "single sign-on is off"))
                .ok()
                .map(Arc::new)
        });
        AppState {
            delivery_metrics: Arc::new(metrics::DeliveryMetrics::of(&config)),
            db,
            config,
            limits: Arc::default(),
            metrics: handle,
            settings: Arc::default(),
            forward_wake: Arc::default(),
            feed: Arc::default(),
            rejected_log: rejected_log::RejectedLog::default(),
            in_flight: routes::per_user::InFlight::default(),
            oidc,
        }
    }
}
