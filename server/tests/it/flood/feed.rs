//! The pull feed's part of the flood: from four more addresses with four viewer tokens, long
//! polls that wait for a source that never gets a delivery (until the process's 256 waiters are
//! taken: 429), whole pages from the start, a consumer read with a lease, and new consumers
//! (until each token's 20: 409); and from a fifth, one greedy token that first asks for more
//! long polls at once than its share, then for every long poll and consumer it can (its share: a quarter of the polls, 20 consumers), whole pages of
//! duplicates that each carry a 256 kB snapshot, and `/metrics` (the consumers' lag).

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
    pub greedy: Arc<Greedy>,
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
    let greedy_token = super::viewer_token(db, "feed-greedy").await;
    share_reached(addr, client, &greedy_token, &started).await;
    let (long_polls, feed_served) = (started.calls.clone(), started.served.clone());
    for n in 0..4 {
        let token = super::viewer_token(db, &format!("feed-flooder-{n}")).await;
        let (client, stop, flooded, server_errors, long_polls, feed_served, answers) = (
            client.clone(),
            stop.clone(),
            flooded.clone(),
            server_errors.clone(),
            long_polls.clone(),
            feed_served.clone(),
            started.greedy.clone(),
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
                let (server_errors, feed_served, answers) =
                    (server_errors.clone(), feed_served.clone(), answers.clone());
                let call = tokio::spawn(async move {
                    let answer = request.send().await;
                    let status = answer.as_ref().map(|a| a.status().as_u16()).unwrap_or(0);
                    if status == 200 || status == 201 {
                        feed_served.fetch_add(1, Ordering::Relaxed);
                    }
                    if status == 429
                        && let Ok(answer) = answer
                    {
                        answers.count_refusal(&answer.text().await.unwrap_or_default());
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
    greedy(
        greedy_token,
        addr,
        client,
        stop,
        flooded,
        server_errors,
        &started,
        flood,
    )
    .await;
    started
}

/// Seeds duplicates of the 256 kB snapshots (`big-*`, sent before the flood): each of them
/// again (a real duplicate), and those copied to 400.
pub async fn seed_duplicates(db: &Db, client: &reqwest::Client, addr: SocketAddr) {
    let filler = "x".repeat(256 * 1024);
    for i in 0..40 {
        let body = crate::support::event(
            &format!("big-{i}"),
            &format!("big-{i}"),
            1,
            &format!(r#"{{"filler":"{filler}"}}"#),
        );
        assert_eq!(
            crate::support::send_to(client, addr, &body).await,
            Some((200, "duplicate".into()))
        );
    }
    crate::support::execute(
        db,
        "INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status,
             outcome, headers, body, received_at, body_of)
         SELECT w.source, w.event_id, w.object_id, w.revision, w.event_type, w.status, w.outcome,
             w.headers, w.body, w.received_at, w.body_of
         FROM webhook_events w, generate_series(1, 9) AS n
         WHERE w.outcome = 'duplicate'",
        vec![],
    )
    .await;
}

/// What the flooding tokens were answered.
#[derive(Default)]
pub struct Greedy {
    /// Long polls refused as over their token's share (`long-polls-of-token`), any token's.
    pub polls_over_share: AtomicU64,
    /// Pages of duplicates served.
    pub duplicate_pages: AtomicU64,
    /// Reads refused as past the process's queue of page reads (`feed-reads-full`).
    pub reads_full: AtomicU64,
}

impl Greedy {
    /// Counts a 429's problem document by its kind.
    fn count_refusal(&self, problem: &str) {
        if problem.contains("long-polls-of-token") {
            self.polls_over_share.fetch_add(1, Ordering::Relaxed);
        }
        if problem.contains("feed-reads-full") {
            self.reads_full.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The greedy token asks for long polls one after another (within its rate of requests) until
/// one is refused as past its share, before the other tokens start theirs (which, as many a
/// second as its own, would otherwise take the process's places as fast as it does). At most
/// 10 s: the flood's assertion says so if no refusal came.
async fn share_reached(addr: SocketAddr, client: &reqwest::Client, token: &str, started: &Flood) {
    let within_rate = std::time::Duration::from_secs(1) / (server::api::TOKEN_REQUESTS_PER_SEC - 2);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while started.greedy.polls_over_share.load(Ordering::Relaxed) == 0
        && tokio::time::Instant::now() < deadline
    {
        let request = client
            .get(format!("http://{addr}/api/v1/feed?source=sw&wait=10"))
            .bearer_auth(token)
            .header("X-Forwarded-For", "203.0.113.74");
        let answers = started.greedy.clone();
        let call = tokio::spawn(async move {
            if let Ok(answer) = request.send().await
                && answer.status() == 429
            {
                answers.count_refusal(&answer.text().await.unwrap_or_default());
            }
        });
        started
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(call);
        tokio::time::sleep(within_rate).await;
    }
}

/// The greedy token: long polls, consumers, pages of duplicates and `/metrics`, at once.
#[allow(clippy::too_many_arguments)]
async fn greedy(
    token: String,
    addr: SocketAddr,
    client: &reqwest::Client,
    stop: &Arc<AtomicBool>,
    flooded: &Arc<AtomicU64>,
    server_errors: &Arc<std::sync::Mutex<Vec<(String, u16)>>>,
    started: &Flood,
    flood: &mut Vec<tokio::task::JoinHandle<()>>,
) {
    let (client, stop, flooded, server_errors, calls, answers) = (
        client.clone(),
        stop.clone(),
        flooded.clone(),
        server_errors.clone(),
        started.calls.clone(),
        started.greedy.clone(),
    );
    flood.push(tokio::spawn(async move {
        let mut i = 0u64;
        let mut pace = hostile_pace();
        while !stop.load(Ordering::Relaxed) {
            pace.tick().await;
            let (method, path) = match i % 8 {
                0..=4 => ("GET", "/api/v1/feed?source=sw&wait=10".to_string()),
                5 => ("PUT", format!("/api/v1/feed/consumers/greedy-{i}")),
                6 => (
                    "GET",
                    "/api/v1/feed?include=duplicate&limit=500&source=shop&after=0.0".to_string(),
                ),
                _ => ("GET", "/metrics".to_string()),
            };
            let request = match method {
                "PUT" => client.put(format!("http://{addr}{path}")),
                _ => client.get(format!("http://{addr}{path}")),
            }
            .bearer_auth(&token)
            .header("X-Forwarded-For", "203.0.113.74");
            let (server_errors, answers) = (server_errors.clone(), answers.clone());
            let call = tokio::spawn(async move {
                let answer = request.send().await;
                let status = answer.as_ref().map(|a| a.status().as_u16()).unwrap_or(0);
                if status == 0 || status >= 500 {
                    let mut errors = server_errors.lock().unwrap_or_else(|e| e.into_inner());
                    errors.push((path, status));
                    return;
                }
                let Ok(answer) = answer else { return };
                // Read to the end: the answer's bytes are what the process held.
                let text = answer.text().await.unwrap_or_default();
                if status == 429 {
                    answers.count_refusal(&text);
                }
                if status == 200 && path.contains("include=duplicate") {
                    answers.duplicate_pages.fetch_add(1, Ordering::Relaxed);
                }
            });
            calls.lock().unwrap_or_else(|e| e.into_inner()).push(call);
            flooded.fetch_add(1, Ordering::Relaxed);
            i += 1;
        }
    }));
}
