//! The pull feed's benchmark client (`.ci/bench-feed`, `docs/benchmarks.md`).
//!
//! - `poll`: one consumer long-polling `GET /api/v1/feed` (`wait=25`, 500 a page) for
//!   `--seconds`, as an application keeping up would: what it costs ingest is measured beside it.
//! - `drain`: reads the whole feed over HTTP from the start, 500 a page, with one token (its
//!   feed pages, 100 a second, bound it at 50,000 items); items per second.
//! - `drain-db`: the same through the domain function the endpoint calls (`app::feed::read`),
//!   without HTTP or the token's rate: what the database and hookbox's reading cost.
//!
//! The last line is machine-readable: `RESULT items=… seconds=… rate=… pages=… empty=… refused=…`
//! (the last three: pages answered over HTTP, how many empty, answers 429).

use clap::{Parser, Subcommand};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Poll {
        #[arg(long)]
        url: String,
        #[arg(long)]
        token: String,
        #[arg(long)]
        seconds: u64,
    },
    Drain {
        #[arg(long)]
        url: String,
        #[arg(long)]
        token: String,
    },
    DrainDb {
        #[arg(long)]
        database_url: String,
    },
}

/// What a reader over HTTP was answered.
#[derive(Default)]
struct Read {
    items: u64,
    /// Pages answered (200), and how many of them were empty.
    pages: u64,
    empty: u64,
    /// Answers 429 (over the token's rate, or the process's queue of reads).
    refused: u64,
}

/// Reads pages after `after` until one is empty (or `until` passes, for a long poll).
async fn read_http(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    wait: u64,
    until: Option<Instant>,
) -> anyhow::Result<Read> {
    let mut after: Option<String> = None;
    let mut read = Read::default();
    loop {
        if until.is_some_and(|t| Instant::now() >= t) {
            return Ok(read);
        }
        let mut request = client
            .get(format!("{url}/api/v1/feed"))
            .bearer_auth(token)
            .query(&[("limit", "500"), ("wait", &wait.to_string())]);
        if let Some(after) = &after {
            request = request.query(&[("after", after)]);
        }
        let response = request.send().await?;
        if response.status().as_u16() == 429 {
            read.refused += 1;
            let wait = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                .unwrap_or(1);
            // Over the token's rate: as a well-behaved client, after the time it is told.
            tokio::time::sleep(Duration::from_secs(wait)).await;
            continue;
        }
        anyhow::ensure!(
            response.status().is_success(),
            "the feed answered {}",
            response.status()
        );
        let page: serde_json::Value = serde_json::from_slice(&response.bytes().await?)?;
        let data = page["data"].as_array().map_or(0, Vec::len) as u64;
        read.items += data;
        read.pages += 1;
        read.empty += u64::from(data == 0);
        after = page["next_cursor"].as_str().map(str::to_string);
        if data == 0 && until.is_none() {
            return Ok(read);
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    let read = match Args::parse().command {
        Command::Poll {
            url,
            token,
            seconds,
        } => {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()?;
            let until = Instant::now() + Duration::from_secs(seconds);
            read_http(&client, &url, &token, 25, Some(until)).await?
        }
        Command::Drain { url, token } => {
            let client = reqwest::Client::new();
            read_http(&client, &url, &token, 0, None).await?
        }
        Command::DrainDb { database_url } => {
            let db = app::db::Db::connect(&database_url).await?;
            let selection = app::feed::Selection::default();
            let mut after = None;
            let mut items = 0u64;
            loop {
                let page = app::feed::read(&db, after, &selection, 500)
                    .await
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                if page.items.is_empty() {
                    break Read {
                        items,
                        ..Read::default()
                    };
                }
                items += page.items.len() as u64;
                after = Some(page.next);
            }
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "RESULT items={} seconds={seconds:.1} rate={:.0} pages={} empty={} refused={}",
        read.items,
        read.items as f64 / seconds,
        read.pages,
        read.empty,
        read.refused
    );
    Ok(())
}
