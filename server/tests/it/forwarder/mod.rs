//! The forwarder against a real HTTP receiver on loopback: what the application receives, retries
//! on the schedule with the same `webhook-id`, `Retry-After`, dead deliveries, and per-object
//! order with superseding while the destination fails.
//!
//! This module holds the receiver (the operator's application, answering from a script) and the
//! configurations and waits the tests share; `forwarding_faults`, `operations` and the
//! dashboard's destination tests use them too.
//!
//! - `delivery`: what the application receives, replays forwarded, and a commit in one process
//!   waking the forwarder of another.
//! - `retries`: retries with the same `webhook-id`, `Retry-After`, timeouts, dead deliveries,
//!   and ingest answering while the destination never does.
//! - `backlog`: superseding while the destination fails, its rate limit, its backlog's metrics.
//! - `shutdown`: attempts in flight at shutdown.
#![allow(clippy::unwrap_used)]

use crate::support::*;
use axum::http::{HeaderMap, StatusCode};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod backlog;
mod delivery;
mod retries;
mod shutdown;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

/// Answers to give, in order: (status, Retry-After seconds).
pub(crate) type Script = Vec<(u16, Option<u64>)>;

/// The operator's application: records every request and answers from a script (then 200).
#[derive(Clone, Default)]
pub(crate) struct Receiver {
    pub(crate) got: Arc<Mutex<Vec<Received>>>,
    pub(crate) script: Arc<Mutex<Script>>,
    /// While set, every request is answered 500 (the application is down).
    pub(crate) down: Arc<Mutex<bool>>,
    /// How long each request waits before it is answered.
    pub(crate) delay: Arc<Mutex<Duration>>,
}

impl Receiver {
    pub(crate) async fn start(script: Script) -> (Receiver, String) {
        let receiver = Receiver {
            script: Arc::new(Mutex::new(script)),
            ..Receiver::default()
        };
        let state = receiver.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: String| {
                let state = state.clone();
                async move {
                    state.got.lock().unwrap().push(Received { headers, body });
                    let delay = *state.delay.lock().unwrap();
                    tokio::time::sleep(delay).await;
                    let scripted = {
                        let mut script = state.script.lock().unwrap();
                        (!script.is_empty()).then(|| script.remove(0))
                    };
                    let (status, retry_after) = match scripted {
                        Some(answer) => answer,
                        None if *state.down.lock().unwrap() => (500, None),
                        None => (200, None),
                    };
                    let mut response = axum::response::IntoResponse::into_response((
                        StatusCode::from_u16(status).unwrap(),
                        "the application's answer",
                    ));
                    if let Some(secs) = retry_after {
                        response
                            .headers_mut()
                            .insert("retry-after", secs.to_string().parse().unwrap());
                    }
                    response
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (receiver, url)
    }

    pub(crate) fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Waits (at most 20 s) until the receiver has got `n` requests.
    pub(crate) async fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.got();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "only {} of {n} requests arrived",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub(crate) fn config(url: &str, schedule: &str) -> app::config::Config {
    config_with(url, schedule, "")
}

pub(crate) fn config_with(url: &str, schedule: &str, extra: &str) -> app::config::Config {
    let text = format!(
        r#"
[[destinations]]
name = "orders-app"
url = "{url}"
secret_env = "DESTINATION_SECRET"
timeout_secs = 5
retry_schedule_secs = {schedule}
{extra}

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
forward = ["orders-app"]
"#
    );
    app::config::Config::parse(&text, Path::new("forwarder.toml"), &test_env).expect("valid")
}

/// Waits (at most 20 s) until `sql` counts `n`.
pub(crate) async fn wait_for_count(db: &app::db::Db, sql: &str, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = count(db, sql).await;
        if found == n {
            return;
        }
        assert!(Instant::now() < deadline, "{sql}: {found}, not {n}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) fn header<'a>(received: &'a Received, name: &str) -> &'a str {
    received
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// A source `shop` forwarding to `orders-app` at `url` with the given attempt timeout.
fn config_timeout(url: &str, timeout_secs: u64, schedule: &str) -> app::config::Config {
    let text = format!(
        r#"
[[destinations]]
name = "orders-app"
url = "{url}"
secret_env = "DESTINATION_SECRET"
timeout_secs = {timeout_secs}
retry_schedule_secs = {schedule}

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
forward = ["orders-app"]
"#
    );
    app::config::Config::parse(&text, Path::new("forwarder.toml"), &test_env).expect("valid")
}
