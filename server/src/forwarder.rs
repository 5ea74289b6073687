//! The forwarder every `hookbox serve` runs: it claims due forward deliveries (`app::forward`),
//! posts each signed request with its destination's timeout on a client kept per destination
//! (connections reused), and records the answer. No database transaction is open during a call.
//!
//! It wakes when ingest commits a forwarded delivery in this process, and polls as the backstop
//! (another process's deliveries, retries coming due). On shutdown it stops claiming; attempts in
//! flight finish or are dropped with the process, and their rows stay due (the lease runs out).

use app::config::{Config, Destination};
use app::db::Db;
use app::forward::{self, AttemptResult, Claimed};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How often the forwarder looks for due deliveries without being woken.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Deliveries claimed at once.
const BATCH: usize = 32;

/// The longest answer excerpt kept per attempt.
const EXCERPT_BYTES: usize = 1024;

/// Runs until `stop` is notified.
pub async fn run(db: Db, config: Arc<Config>, wake: Arc<Notify>, stop: Arc<Notify>) {
    if config.destinations.is_empty() {
        return;
    }
    let worker = format!("{}-{:08x}", std::process::id(), rand::random::<u32>());
    let clients: HashMap<String, reqwest::Client> = config
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
        .collect();
    let names: Vec<&str> = config
        .destinations
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let longest = config
        .destinations
        .iter()
        .map(|d| d.timeout_secs)
        .max()
        .unwrap_or(15);
    // Per destination, at most `rate_limit_per_sec` attempts a second from this process.
    let limiter = Arc::new(crate::rate_limit::RateLimiter::default());
    // A claim outlives the slowest attempt, so only a dead worker loses it.
    let lease = Duration::from_secs(longest + 30);
    loop {
        let claimed = match forward::claim_due(&db, &names, &worker, lease, BATCH).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, "forwarder: cannot claim deliveries; retrying");
                Vec::new()
            }
        };
        let busy = !claimed.is_empty();
        let mut attempts = tokio::task::JoinSet::new();
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
        tokio::select! {
            _ = attempts.join_all() => {}
            () = stop.notified() => return,
        }
        if busy {
            continue;
        }
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(POLL_INTERVAL) => {}
            () = stop.notified() => return,
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
                        .and_then(|v| v.trim().parse::<u64>().ok())
                })
                .flatten();
            let excerpt = truncate_bytes(response.text().await.unwrap_or_default(), EXCERPT_BYTES);
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
                format!("no answer within {} s", destination.timeout_secs)
            } else if e.is_connect() {
                "the connection was refused or failed".to_string()
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

fn truncate_bytes(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}
