//! A forwarding destination for the forwarding benchmark (`.ci/bench-forward`).
//!
//! It answers 200 at once to every `POST /hook` and records, per request, its arrival time minus
//! the body's `received_at` (when hookbox received the delivery; RFC 3339 with milliseconds, so
//! each figure is up to 1 ms high), the number of requests and the distinct `webhook-id`s. A
//! request without `webhook-id`, `webhook-timestamp` and `webhook-signature`, or whose body has
//! no parseable `received_at`, is counted `invalid` (and answered 200 all the same). Signatures
//! are not verified: the integration tests do that.
//!
//! ```sh
//! cargo run --release --example forward_sink -p server -- --listen 127.0.0.1:9000 --ids ids.txt
//! ```
//!
//! `GET /report`, SIGTERM, Ctrl-C or the end of `--duration` prints the machine-readable line
//! `RESULT requests=… distinct=… invalid=… p50_ms=… p95_ms=… p99_ms=… max_ms=…` (`GET /report`
//! also answers it); the last three also write the distinct ids to `--ids` and exit.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use clap::Parser;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Parser)]
#[command(about = "A destination that answers 200 at once and measures forwarding latency")]
struct Args {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Seconds to run; unset, until SIGTERM or Ctrl-C.
    #[arg(long)]
    duration: Option<u64>,
    /// A file to write the distinct `webhook-id`s to (one a line) on exit.
    #[arg(long)]
    ids: Option<std::path::PathBuf>,
}

#[derive(Default)]
struct Tally {
    requests: u64,
    invalid: u64,
    ids: HashSet<String>,
    /// Arrival minus `received_at`, in microseconds.
    latencies_us: Vec<i64>,
}

type Shared = Arc<Mutex<Tally>>;

fn lock(tally: &Shared) -> std::sync::MutexGuard<'_, Tally> {
    tally
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn hook(
    State(tally): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let arrived = chrono::Utc::now();
    let received_at = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| chrono::DateTime::parse_from_rfc3339(v["received_at"].as_str()?).ok());
    let id = headers.get("webhook-id").and_then(|v| v.to_str().ok());
    let signed =
        headers.contains_key("webhook-timestamp") && headers.contains_key("webhook-signature");
    let mut tally = lock(&tally);
    tally.requests += 1;
    match (id, received_at) {
        (Some(id), Some(at)) if signed => {
            let us = (arrived - at.to_utc())
                .num_microseconds()
                .unwrap_or(i64::MAX);
            tally.latencies_us.push(us);
            if !tally.ids.contains(id) {
                tally.ids.insert(id.to_string());
            }
        }
        _ => tally.invalid += 1,
    }
    StatusCode::OK
}

fn result_line(tally: &Tally) -> String {
    let mut sorted = tally.latencies_us.clone();
    sorted.sort_unstable();
    let ms = |p: f64| {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted
            .get(rank.clamp(1, sorted.len().max(1)) - 1)
            .map_or(0.0, |&us| us as f64 / 1000.0)
    };
    format!(
        "RESULT requests={} distinct={} invalid={} p50_ms={:.2} p95_ms={:.2} p99_ms={:.2} max_ms={:.2}",
        tally.requests,
        tally.ids.len(),
        tally.invalid,
        ms(50.0),
        ms(95.0),
        ms(99.0),
        ms(100.0)
    )
}

async fn report(State(tally): State<Shared>) -> String {
    let line = result_line(&lock(&tally));
    println!("{line}");
    line + "\n"
}

async fn stopped(duration: Option<u64>) {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            eprintln!("forward_sink: no SIGTERM handler: {e}");
            return;
        }
    };
    let until = async {
        match duration {
            Some(secs) => tokio::time::sleep(Duration::from_secs(secs)).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
        () = until => {}
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tally = Shared::default();
    let app = axum::Router::new()
        .route("/hook", post(hook))
        .route("/report", get(report))
        .with_state(tally.clone());
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    println!("forward_sink: listening on {}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(stopped(args.duration))
        .await?;
    let tally = lock(&tally);
    println!("{}", result_line(&tally));
    if let Some(path) = args.ids {
        let mut ids: Vec<&str> = tally.ids.iter().map(String::as_str).collect();
        ids.sort_unstable();
        std::fs::write(
            path,
            ids.iter().map(|id| format!("{id}\n")).collect::<String>(),
        )?;
    }
    Ok(())
}
