//! The pull feed's part of the flood: from four more addresses with four viewer tokens, long
//! polls that wait for a source that never gets a delivery (until the process's 256 waiters are
//! taken: 429), whole pages from the start, a consumer read with a lease, and new consumers
//! (until the 100 there may be: 409).

use super::hostile_pace;
use app::db::Db;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The feed's calls in flight (each ends within its wait), and how many were served.
#[derive(Default)]
pub struct Flood {
    pub calls: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    pub served: Arc<AtomicU64>,
}

/// Starts the feed's flooders on `flood`.
pub async fn flood(
    db: &Db,
    addr: SocketAddr,
    client: &reqwest::Client,
    stop: &Arc<AtomicBool>,
    flooded: &Arc<AtomicU64>,
    server_errors: &Arc<std::sync::Mutex<Vec<(String, u16)>>>,
    flood: &mut Vec<tokio::task::JoinHandle<()>>,
) -> Flood {
    let started = Flood::default();
    let (long_polls, feed_served) = (started.calls.clone(), started.served.clone());
    for n in 0..4 {
        let token = app::auth::tokens::add_token(
            db,
            &format!("feed-flooder-{n}"),
            app::model::Role::Viewer,
            &[],
            None,
            "olga",
            &["shop"],
        )
        .await
        .expect("a feed flooder's token");
        let (client, stop, flooded, server_errors, long_polls, feed_served) = (
            client.clone(),
            stop.clone(),
            flooded.clone(),
            server_errors.clone(),
            long_polls.clone(),
            feed_served.clone(),
        );
        flood.push(tokio::spawn(async move {
            let mut i = 0u64;
            let mut pace = hostile_pace();
            let from = format!("203.0.113.{}", 70 + n);
            while !stop.load(Ordering::Relaxed) {
                pace.tick().await;
                let (method, path) = match i % 4 {
                    0 | 1 => ("GET", "/api/v1/feed?source=sw&wait=10".to_string()),
                    2 => ("GET", "/api/v1/feed?limit=500".to_string()),
                    _ if i % 8 == 3 => ("PUT", format!("/api/v1/feed/consumers/flood-{n}-{i}")),
                    _ => (
                        "GET",
                        format!(
                            "/api/v1/feed/consumers/flood-{n}-3/items?limit=500&wait=10&lease=f{i}"
                        ),
                    ),
                };
                let request = match method {
                    "PUT" => client.put(format!("http://{addr}{path}")),
                    _ => client.get(format!("http://{addr}{path}")),
                }
                .bearer_auth(&token)
                .header("X-Forwarded-For", &from);
                let (server_errors, feed_served) = (server_errors.clone(), feed_served.clone());
                let call = tokio::spawn(async move {
                    let status = request
                        .send()
                        .await
                        .map(|a| a.status().as_u16())
                        .unwrap_or(0);
                    if status == 200 || status == 201 {
                        feed_served.fetch_add(1, Ordering::Relaxed);
                    }
                    if status == 0 || status >= 500 {
                        let mut errors = server_errors.lock().unwrap_or_else(|e| e.into_inner());
                        errors.push((path, status));
                    }
                });
                long_polls
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(call);
                flooded.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        }));
    }
    started
}
