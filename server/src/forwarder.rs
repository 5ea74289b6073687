//! The forwarder every `hookbox serve` runs: it claims due forward deliveries (`app::forward`),
//! posts each signed request with its destination's timeout on a client kept per destination
//! (connections reused), and records the answer. No database transaction is open during a call.
//!
//! Wake-ups: ingest in this process notifies it after commit; the forwarder then tells the other
//! processes on the same PostgreSQL database with one `NOTIFY` per round of claims (never one per
//! delivery, and outside every ingest transaction), which their listeners turn into a wake-up.
//! Polling (`HOOKBOX_FORWARD_POLL_MS`) is the backstop: retries coming due, a lost notification,
//! SQLite's other processes.
//!
//! Shutdown (its token cancelled): it stops claiming and listening, lets the attempts in flight
//! finish within the grace period, then abandons the rest and gives up their claims, so their
//! rows are due again at once (for another process or the next start). Nothing is marked
//! delivered that was not answered 2xx.

use crate::background::Background;
use app::config::{Config, Destination};
use app::db::Db;
use app::forward::{self, AttemptResult, Claimed};
use sea_orm::DatabaseBackend;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The PostgreSQL channel the forwarders of one database wake each other on.
pub const CHANNEL: &str = "hookbox_forward";

/// Deliveries claimed at once.
const BATCH: usize = 32;

/// The longest answer excerpt kept per attempt.
const EXCERPT_BYTES: usize = 1024;

/// How the forwarder runs.
#[derive(Clone)]
pub struct Options {
    /// Notified by ingest in this process after a commit that wrote forward rows.
    pub wake: Arc<Notify>,
    /// Where it runs, its LISTEN task with it: it stops claiming when this is cancelled.
    pub background: Background,
    /// How often it looks for due rows when nothing woke it.
    pub poll: Duration,
    /// How long attempts in flight may take after the cancellation.
    pub grace: Duration,
}

/// Runs until its background is cancelled, then lets attempts in flight finish within the grace
/// period.
pub async fn run(db: Db, config: Arc<Config>, options: Options) {
    let Options {
        wake,
        background,
        poll,
        grace,
    } = options;
    let stop = background.token();
    // Tells the other processes on this PostgreSQL database that deliveries were committed.
    let mut announcer = crate::wakeup::Announcer::new(&db, CHANNEL);
    if config.destinations.is_empty() {
        // Nothing to send here; what this process commits is still announced to the others
        // (a configuration that names no destination yet, during a rolling change).
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = wake.notified() => announcer.announce().await,
            }
        }
    }
    let worker = format!("{}-{:08x}", std::process::id(), rand::random::<u32>());
    let clients = clients_of(&config);
    let mut names: Vec<&str> = config
        .destinations
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let lease = lease_of(&config);
    // Per destination, at most `rate_limit_per_sec` attempts a second from this process.
    let limiter = Arc::new(crate::rate_limit::RateLimiter::default());
    // Other processes' wake-ups (PostgreSQL only).
    let peers = Arc::new(Notify::new());
    if db.backend() == DatabaseBackend::Postgres {
        let listening = stop
            .clone()
            .run_until_cancelled_owned(crate::wakeup::listen(db.clone(), CHANNEL, {
                let peers = peers.clone();
                move || peers.notify_one()
            }));
        background.spawn("forwarder LISTEN", async move {
            listening.await;
        });
    }
    let mut attempts = tokio::task::JoinSet::new();
    loop {
        // Claim while at most half the batch is in flight: a slow attempt holds one slot, never
        // the others (each object has at most one attempt in flight; the claim sees to it).
        if attempts.len() <= BATCH / 2 {
            let room = BATCH - attempts.len();
            // Each destination in turn comes first, so a deep backlog of one never starves another.
            names.rotate_left(1);
            let claimed = match forward::claim_due(&db, &names, &worker, lease, room).await {
                Ok(claimed) => claimed,
                Err(e) => {
                    tracing::warn!(error = %e, "forwarder: cannot claim deliveries; retrying");
                    Vec::new()
                }
            };
            for c in claimed {
                let (Some(destination), Some(client)) = (
                    config.destinations.iter().find(|d| d.name == c.destination),
                    clients.get(&c.destination),
                ) else {
                    continue;
                };
                let (db, destination, client, limiter) = (
                    db.clone(),
                    destination.clone(),
                    client.clone(),
                    limiter.clone(),
                );
                attempts.spawn(async move {
                    if let Some(per_sec) = destination.rate_limit_per_sec {
                        while let Err(wait) = limiter.take(&destination.name, per_sec) {
                            tokio::time::sleep(wait).await;
                        }
                    }
                    attempt(db, destination, client, c).await;
                });
            }
        }
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            // A finished attempt may free an object's next revision, and room in the batch.
            Some(_) = attempts.join_next(), if !attempts.is_empty() => {}
            () = wake.notified() => announcer.announce().await,
            () = peers.notified() => {}
            () = tokio::time::sleep(poll), if attempts.is_empty() => {}
        }
    }
    finish(&db, &worker, attempts, grace).await;
}

/// One HTTP client per destination, with its timeout and no redirects.
fn clients_of(config: &Config) -> HashMap<String, reqwest::Client> {
    config
        .destinations
        .iter()
        .filter_map(|d| {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(d.timeout_secs))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| tracing::error!(destination = %d.name, error = %e, "no HTTP client"))
                .ok()?;
            Some((d.name.clone(), client))
        })
        .collect()
}

/// How long a claim lasts: it outlives the slowest attempt, its wait for the rate limit
/// included, so only a dead worker loses it.
fn lease_of(config: &Config) -> Duration {
    let longest = config
        .destinations
        .iter()
        .map(|d| {
            let rate_wait = d.rate_limit_per_sec.map_or(0, |per_sec| {
                (BATCH as u64).div_ceil(u64::from(per_sec.max(1)))
            });
            d.timeout_secs + rate_wait
        })
        .max()
        .unwrap_or(15);
    Duration::from_secs(longest + 30)
}

/// At shutdown: the attempts in flight finish within `grace` (or are abandoned, their
/// deliveries due again), then the worker's unfinished claims are given up.
async fn finish(db: &Db, worker: &str, mut attempts: tokio::task::JoinSet<()>, grace: Duration) {
    let in_flight = attempts.len();
    if in_flight > 0 {
        tracing::info!(
            in_flight,
            ?grace,
            "forwarder stopping: letting attempts in flight finish"
        );
        let finished = tokio::time::timeout(grace, async {
            while attempts.join_next().await.is_some() {}
        })
        .await;
        if finished.is_err() {
            attempts.abort_all();
            while attempts.join_next().await.is_some() {}
            tracing::warn!(
                abandoned = attempts.len(),
                "grace period over: forward attempts abandoned, their deliveries stay due"
            );
        }
    }
    match forward::release_claims(db, worker).await {
        Ok(0) => {}
        Ok(released) => tracing::info!(released, "forwarder stopped: unfinished claims given up"),
        Err(e) => {
            tracing::warn!(error = %e, "forwarder stopped: claims not given up; they end with their lease")
        }
    }
}

async fn attempt(db: Db, destination: Destination, client: reqwest::Client, claimed: Claimed) {
    let destination = &destination;
    let body = forward::request_body(&claimed);
    let mut request = client
        .post(&destination.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json");
    for (name, value) in forward::signed_headers(destination, &claimed, &body) {
        request = request.header(name.as_str(), value);
    }
    let started_at = chrono::Utc::now();
    let started = Instant::now();
    let answer = request.body(body).send().await;
    let result = match answer {
        Ok(response) => {
            let status = response.status().as_u16();
            let retry_after = matches!(status, 429 | 503)
                .then(|| {
                    response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| forward::retry_after_secs(v, chrono::Utc::now()))
                })
                .flatten();
            let excerpt = excerpt(response).await;
            AttemptResult {
                started_at,
                duration_ms: elapsed_ms(started),
                status_code: Some(status),
                error: (!(200..300).contains(&status)).then(|| format!("answered {status}")),
                response_excerpt: Some(excerpt).filter(|e| !e.is_empty()),
                retry_after_secs: retry_after,
            }
        }
        Err(e) => AttemptResult {
            started_at,
            duration_ms: elapsed_ms(started),
            status_code: None,
            error: Some(if e.is_timeout() {
                format!(
                    "{} {} s",
                    app::model::NO_ANSWER_WITHIN,
                    destination.timeout_secs
                )
            } else if e.is_connect() {
                app::model::CONNECTION_FAILED.to_string()
            } else {
                "the request failed".to_string()
            }),
            response_excerpt: None,
            retry_after_secs: None,
        },
    };
    let outcome = if result.delivered() {
        "delivered"
    } else {
        "failed"
    };
    metrics::histogram!("hookbox_forward_attempt_duration_seconds", "destination" => destination.name.clone())
        .record(started.elapsed().as_secs_f64());
    match forward::record_attempt(&db, destination, &claimed, &result).await {
        Ok(after) => {
            let result = if after == forward::AfterAttempt::Dead {
                "dead"
            } else {
                outcome
            };
            metrics::counter!("hookbox_forward_attempts_total", "destination" => destination.name.clone(), "result" => result)
                .increment(1);
            tracing::info!(destination = %destination.name, delivery = claimed.id, event_id = %claimed.event_id, attempt = claimed.attempts + 1, result, "forward attempt");
        }
        // The row keeps its lease until it runs out, then is attempted again: at least once.
        Err(e) => {
            tracing::warn!(destination = %destination.name, delivery = claimed.id, error = %e, "forward attempt not recorded; it will be attempted again")
        }
    }
}

fn elapsed_ms(started: Instant) -> i64 {
    i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)
}

/// The first [`EXCERPT_BYTES`] of an answer's body, read no further: a destination answering
/// a huge body costs at most that much memory (and the attempt's timeout bounds the time).
async fn excerpt(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < EXCERPT_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                bytes.extend_from_slice(&chunk[..chunk.len().min(EXCERPT_BYTES - bytes.len())])
            }
            Ok(None) | Err(_) => break,
        }
    }
    truncate_bytes(String::from_utf8_lossy(&bytes).into_owned(), EXCERPT_BYTES)
}

fn truncate_bytes(mut text: String, max: usize) -> String {
    text.truncate(text.floor_char_boundary(max));
    text
}
