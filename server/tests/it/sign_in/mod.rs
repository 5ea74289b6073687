//! Sign-in under attack: what an unauthenticated caller can make hookbox spend is bounded, the
//! throttle keys on the real client behind a trusted proxy and never locks a user out from
//! another client, one client cannot take every password check, failed sign-ins are bounded
//! counts instead of a row each, the dashboard's writes on SQLite queue for the single writer
//! (bounded) instead of taking its lock from the read pool, and the dashboard cannot starve
//! deliveries of database connections.
//!
//! This module holds what the tests share: a sign-in as a browser posts it, the server behind
//! a trusted proxy, the counts recorded in `sign_in_failures`, and floods of sign-ins.
//!
//! - `bounds`: what a burst of failed sign-ins can cost: memory, password checks, absurd names.
//! - `throttle`: the throttle keys on the forwarded client, its delay doubles, and a flood from
//!   one client never locks a user out from another.
//! - `records`: failed sign-ins as bounded counts per minute, and the audit log's retention.
//! - `load`: the dashboard against deliveries: its connections, SQLite's single writer, latency
//!   during a sign-in flood.
//! - `headers`: the dashboard pages' security headers.

use crate::support::*;
use app::auth;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

mod bounds;
mod headers;
mod load;
mod records;
mod throttle;

const PASSWORD: &str = "a long enough password";

/// What a sign-in answered.
#[derive(Debug, Clone)]
struct SignedIn {
    status: u16,
    text: String,
    /// `Retry-After`, in seconds.
    retry_after: Option<u64>,
    /// Whether it set a session cookie.
    session: bool,
}

impl SignedIn {
    fn succeeded(&self) -> bool {
        self.session && self.status < 400
    }

    /// 429 from the throttle (not for want of a password check slot).
    fn throttled(&self) -> bool {
        self.status == 429 && self.text.contains("Too many failed sign-ins")
    }

    /// 429 because no password check slot was free.
    fn busy(&self) -> bool {
        self.status == 429 && self.text.contains("at once")
    }
}

/// Posts the sign-in form as a browser does, from `forwarded_for` when given (behind a trusted
/// proxy: the client's address).
async fn sign_in_as(
    app: &TestApp,
    name: &str,
    password: &str,
    forwarded_for: Option<&str>,
) -> SignedIn {
    let mut request = app
        .client
        .post(app.url("/api/login"))
        .header("Accept", "application/json")
        .form(&[("name", name), ("password", password), ("next", "/")]);
    if let Some(address) = forwarded_for {
        request = request.header("X-Forwarded-For", address);
    }
    let response = request.send().await.expect("sign-in answers");
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect::<Vec<_>>()
    };
    let retry_after = header("retry-after").first().and_then(|v| v.parse().ok());
    let session = header("set-cookie")
        .iter()
        .any(|c| c.starts_with("hookbox_session=") && !c.starts_with("hookbox_session=;"));
    SignedIn {
        status,
        text: response.text().await.unwrap_or_default(),
        retry_after,
        session,
    }
}

/// Posts the sign-in form as a browser does; returns the status and the answer's text.
async fn attempt(
    app: &TestApp,
    name: &str,
    password: &str,
    forwarded_for: Option<&str>,
) -> (u16, String) {
    let answer = sign_in_as(app, name, password, forwarded_for).await;
    (answer.status, answer.text)
}

/// The server on a fresh database behind a trusted proxy on 127.0.0.1, so each test client
/// names its address in `X-Forwarded-For`.
async fn behind_a_proxy(backend: Backend) -> TestApp {
    let trusted_proxies = app::config::TrustedProxies::parse("127.0.0.1/32").expect("valid");
    spawn_app_with_state(backend, test_config(), |state| {
        state.settings = Arc::new(app::config::Settings {
            trusted_proxies,
            ..Default::default()
        });
    })
    .await
}

/// The sum of a column of `sign_in_failures` over the rows `condition` selects, once this
/// process's refused attempts counted in memory are written.
async fn recorded(db: &app::db::Db, column: &str, condition: &str) -> i64 {
    auth::write_sign_in_records(db)
        .await
        .expect("write the sign-in records");
    count(
        db,
        &format!(
            "SELECT CAST(COALESCE(SUM({column}), 0) AS BIGINT) FROM sign_in_failures {condition}"
        ),
    )
    .await
}

/// Runs `loops` tasks that sign in as `name` with `password` from `client` again and again until
/// `stop`; returns their answers.
fn flood(
    app: &TestApp,
    loops: usize,
    name: &'static str,
    password: &'static str,
    client: &'static str,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<SignedIn>>> {
    (0..loops)
        .map(|_| {
            let app = app.clone_handle();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    answers.push(sign_in_as(&app, name, password, Some(client)).await);
                    tokio::task::yield_now().await;
                }
                answers
            })
        })
        .collect()
}

async fn answers_of(tasks: Vec<tokio::task::JoinHandle<Vec<SignedIn>>>) -> Vec<SignedIn> {
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("flood task"));
    }
    all
}

/// Sign-ins from `clients` distinct addresses at once, each with `password` for `name`.
fn sign_ins_from_many(
    app: &TestApp,
    clients: usize,
    name: &'static str,
    password: &'static str,
) -> Vec<tokio::task::JoinHandle<SignedIn>> {
    (0..clients)
        .map(|i| {
            let app = app.clone_handle();
            tokio::spawn(async move {
                let client = format!("198.51.100.{}", 100 + i);
                sign_in_as(&app, name, password, Some(&client)).await
            })
        })
        .collect()
}
