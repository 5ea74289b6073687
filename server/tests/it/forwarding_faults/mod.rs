//! Faults of forwarding, on real PostgreSQL, with the real `hookbox` binary and a real HTTP
//! receiver on loopback: kill -9 with attempts in flight, three processes claiming from one
//! database, and the database stopped under the forwarder. Waits are proven by counters (the
//! receiver's, the database's, the processes' JSON logs), never assumed from a sleep.
//!
//! This module holds the application on loopback (with requests held and released on demand),
//! the processes' configuration, and the polls and queries the tests share.
//!
//! - `kill`: kill -9 under forwarding load.
//! - `claims`: three processes claiming from one database.
//! - `stopped_database`: the database stopped under the forwarder.
#![allow(clippy::unwrap_used)]

use crate::forwarder::{Received, header};
use crate::support::*;
use axum::http::{HeaderMap, StatusCode};
use futures::StreamExt;
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod claims;
mod kill;
mod stopped_database;

/// What the application has seen.
#[derive(Default)]
struct Seen {
    got: Vec<Received>,
    /// The `webhook-id`s whose requests are held while `hold` is set.
    hold_only: BTreeSet<String>,
    /// Whether every request is held while `hold` is set, whatever its row.
    hold_every: bool,
    /// The `webhook-id`s of the requests waiting for [`Application::release`].
    held: Vec<String>,
    /// While set, every request is answered 500.
    down: bool,
}

/// The operator's application on loopback: records each request as it arrives, then answers it
/// after `delay` (500 while down, else 200); while held, the requests of the rows named (or
/// every request) wait for the release first.
#[derive(Clone)]
struct Application {
    url: String,
    delay: Duration,
    seen: Arc<Mutex<Seen>>,
    /// Whether the requests of `hold_only` are held; changed only with `seen` locked.
    hold: tokio::sync::watch::Sender<bool>,
}

impl Application {
    async fn start(delay: Duration) -> Application {
        let application = Application {
            url: String::new(),
            delay,
            seen: Arc::default(),
            hold: tokio::sync::watch::Sender::new(false),
        };
        let state = application.clone();
        let router = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: String| {
                let state = state.clone();
                async move { state.answer(headers, body).await }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Application { url, ..application }
    }

    async fn answer(&self, headers: HeaderMap, body: String) -> (StatusCode, &'static str) {
        let id = headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let hold = {
            let mut seen = self.seen.lock().unwrap();
            seen.got.push(Received { headers, body });
            let hold = self.hold.subscribe();
            let held = *hold.borrow() && (seen.hold_every || seen.hold_only.contains(&id));
            held.then(|| {
                seen.held.push(id.clone());
                hold
            })
        };
        if let Some(mut hold) = hold {
            let _ = hold.wait_for(|held| !*held).await.map(|_| ());
            remove(&mut self.seen.lock().unwrap().held, &id);
        }
        tokio::time::sleep(self.delay).await;
        if self.seen.lock().unwrap().down {
            (StatusCode::INTERNAL_SERVER_ERROR, "the application is down")
        } else {
            (StatusCode::OK, "the application's answer")
        }
    }

    /// The `webhook-id` of every request, in the order they arrived.
    fn ids(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.got
            .iter()
            .map(|r| header(r, "webhook-id").to_string())
            .collect()
    }

    /// (requests got, requests held now), read together.
    fn got_and_held(&self) -> (usize, usize) {
        let seen = self.seen.lock().unwrap();
        (seen.got.len(), seen.held.len())
    }

    fn set_down(&self, down: bool) {
        self.seen.lock().unwrap().down = down;
    }

    /// From now on, arriving requests of these rows wait for [`Application::release`].
    fn hold(&self, ids: BTreeSet<String>) {
        let mut seen = self.seen.lock().unwrap();
        seen.hold_only = ids;
        self.hold.send_replace(true);
    }

    /// From now on, every arriving request waits for [`Application::release`].
    fn hold_every(&self) {
        let mut seen = self.seen.lock().unwrap();
        seen.hold_every = true;
        self.hold.send_replace(true);
    }

    /// Lets the held requests be answered; returns their `webhook-id`s.
    fn release(&self) -> Vec<String> {
        let mut seen = self.seen.lock().unwrap();
        seen.hold_every = false;
        self.hold.send_replace(false);
        seen.held.clone()
    }
}

fn remove(ids: &mut Vec<String>, id: &str) {
    if let Some(i) = ids.iter().position(|x| x == id) {
        ids.remove(i);
    }
}

/// A hookbox.toml with the destination `orders-app` at `url`, to which `shop` forwards.
fn config(url: &str, timeout_secs: u64, schedule: &str, extra: &str) -> String {
    format!(
        r#"
[[destinations]]
name = "orders-app"
url = "{url}"
secret_env = "DESTINATION_SECRET"
timeout_secs = {timeout_secs}
retry_schedule_secs = {schedule}
{extra}

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
forward = ["orders-app"]
"#
    )
}

/// The binary with forwarding's quick poll and its log as JSON lines.
async fn start(database_url: &str, config: &str) -> Binary {
    Binary::start(
        database_url,
        config,
        &[
            ("HOOKBOX_FORWARD_POLL_MS", "100"),
            ("HOOKBOX_LOG_FORMAT", "json"),
            ("RUST_LOG", "info,sqlx=warn,sea_orm=warn"),
        ],
    )
    .await
}

/// Sends `n` events of distinct objects, 16 at a time, event `i` to `addrs[i % addrs.len()]`;
/// returns how many were answered 200 `applied`, having checked every answer is that.
async fn send_events(addrs: &[SocketAddr], n: usize) -> usize {
    let client = reqwest::Client::new();
    let answers: Vec<Option<(u16, String)>> = futures::stream::iter(0..n)
        .map(|i| {
            let (client, addr) = (client.clone(), addrs[i % addrs.len()]);
            async move {
                let body = event(&format!("e{i}"), &format!("order-{i}"), 1, "{}");
                send_to(&client, addr, &body).await
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let applied = answers
        .iter()
        .filter(|a| a.as_ref().is_some_and(|(s, o)| *s == 200 && o == "applied"))
        .count();
    assert_eq!(applied, n, "every event is applied: {answers:?}");
    applied
}

/// Rows of integer columns.
async fn ints(db: &app::db::Db, sql: &str) -> Vec<Vec<i64>> {
    let rows = db
        .dashboard
        .query_all_raw(Statement::from_string(DatabaseBackend::Postgres, sql))
        .await
        .expect("query");
    rows.iter()
        .map(|row| {
            (0..row.column_names().len())
                .map(|i| row.try_get_by_index::<i64>(i).expect("an integer"))
                .collect()
        })
        .collect()
}

/// The `webhook-id` of every forward delivery.
async fn row_ids(db: &app::db::Db) -> BTreeSet<String> {
    ints(db, "SELECT id FROM forward_deliveries")
        .await
        .into_iter()
        .map(|r| format!("fwd_{}", r[0]))
        .collect()
}

/// Polls until `holds` (at most `limit`).
async fn until(what: &str, limit: Duration, mut holds: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !holds().await {
        assert!(
            Instant::now() < deadline,
            "waited {limit:?} in vain for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Milliseconds since the epoch of a timestamp column, in SQL.
fn ms(column: &str) -> String {
    format!("CAST(EXTRACT(EPOCH FROM {column}) * 1000 AS bigint)")
}
