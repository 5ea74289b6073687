//! Load generator for `POST /hooks/{source}` (the ingest benchmark, `.ci/bench`).
//!
//! It plays the senders of an `hmac-sha256` source in snapshot mode: every request is signed as
//! a real sender signs (`X-Hookbox-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "{t}.{body}">`,
//! computed here with `hmac`, not with hookbox's own code). Each connection owns a disjoint share
//! of the objects, so the answer to every request is known in advance and checked:
//!
//! - ~70% a new revision of an object: `applied` (200). Revisions advance by two; the skipped
//!   one is held back for later.
//! - ~15% an exact retry of an earlier accepted delivery (same bytes, signed again): `duplicate` (200).
//! - ~15% an older revision: two in three are a held-back revision arriving late, `stale` (200);
//!   one in three re-sends a delivered revision under a new event id, `reused_revision` (409).
//!
//! ```sh
//! cargo run --release --example ingest_load -p server -- \
//!     --url http://127.0.0.1:3000/hooks/bench --secret bench-secret --connections 32 --duration 20
//! ```
//!
//! `--junk-rate 500` adds junk beside them (forged signatures, made-up source names), each of
//! which must be refused: what a flood of refused requests costs the deliveries.
//!
//! `--rate 200` paces the deliveries at 200 a second in all (one every 5 ms, handed to whichever
//! connection is free; after a stall it goes on at the same spacing, with no catch-up burst);
//! without it every connection sends its next request as soon as the previous one is answered.
//!
//! SIGINT stops the deliveries early; what was answered is reported as at the deadline.
//! The last line is machine-readable (`RESULT key=value ...`); the exit status is 1 when any
//! answer differed from the expected one or a request failed.

use anyhow::Context;

/// The allocator hookbox uses: the load generator shares the benchmark's cores with hookbox and
/// PostgreSQL, so what it spends is counted against hookbox's ratio.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use clap::Parser;
use hmac::{Hmac, Mac};
use rand::Rng;
use rand::rngs::StdRng;
use rand::{SeedableRng, seq::IndexedRandom};
use sha2::Sha256;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Parser)]
#[command(about = "Drive POST /hooks/{source} with signed snapshot deliveries")]
struct Args {
    /// The endpoint, e.g. http://127.0.0.1:3000/hooks/bench.
    #[arg(long)]
    url: String,
    /// The source's secret (used as UTF-8 key bytes, as the hmac-sha256 scheme does).
    #[arg(long)]
    secret: String,
    /// Concurrent keep-alive connections, one request in flight on each.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 20)]
    duration: u64,
    /// Objects, shared out among the connections.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Deliveries per second across all connections, evenly spaced; unset, as fast as answered.
    #[arg(long)]
    rate: Option<f64>,
    /// Beside the deliveries, junk requests a second (evenly spaced, over 8 connections of their
    /// own): half with a forged signature to the source, half to made-up source names. Each must
    /// be refused (401, 404); they are not in the deliveries' figures.
    #[arg(long)]
    junk_rate: Option<f64>,
    /// Writes each delivery's start (Unix microseconds) and latency (microseconds), one a line,
    /// to this file: the latencies of a window (a purge running) can be told apart.
    #[arg(long)]
    latencies: Option<std::path::PathBuf>,
}

/// Set on SIGINT: the deliveries stop, and what was answered is reported as at the deadline.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The junk connections of `--junk-rate`.
const JUNK_CONNECTIONS: usize = 8;

/// Sends junk until `deadline`, one every tick of `pace`; returns (sent, refused as expected).
async fn junk(url: String, n: usize, deadline: Instant, pace: Pace) -> anyhow::Result<(u64, u64)> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .timeout(Duration::from_secs(30))
        .build()?;
    let base = url
        .rsplit_once('/')
        .map_or(url.as_str(), |(b, _)| b)
        .to_string();
    let (mut sent, mut refused) = (0u64, 0u64);
    let mut i = n as u64;
    loop {
        let tick = async { pace.lock().await.tick().await };
        tokio::select! {
            _ = tick => {}
            () = tokio::time::sleep_until(deadline.into()) => return Ok((sent, refused)),
        }
        i += JUNK_CONNECTIONS as u64;
        let forged = i.is_multiple_of(2);
        let target = if forged {
            url.clone()
        } else {
            format!("{base}/junk-{i}")
        };
        let answer = client
            .post(&target)
            .header("content-type", "application/json")
            .header(
                "x-hookbox-signature",
                format!("t={},v1={:064x}", unix_now(), i),
            )
            .body(format!("{{\"junk\":{i}}}"))
            .send()
            .await;
        sent += 1;
        if let Ok(answer) = answer {
            let want = if forged { 401 } else { 404 };
            if answer.status().as_u16() == want && answer.bytes().await.is_ok() {
                refused += 1;
            }
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The pace of `--rate`: one tick per delivery, shared by the connections (first come, first
/// served).
type Pace = Arc<tokio::sync::Mutex<tokio::time::Interval>>;

/// What a request is, and so which answer it must get.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    NewRevision,
    Retry,
    LateRevision,
    ReusedRevision,
}

impl Kind {
    /// The expected HTTP status and the body's `status` (or `reason` for a conflict).
    fn expected(self) -> (u16, &'static str) {
        match self {
            Kind::NewRevision => (200, "applied"),
            Kind::Retry => (200, "duplicate"),
            Kind::LateRevision => (200, "stale"),
            Kind::ReusedRevision => (409, "reused_revision"),
        }
    }
}

/// One object's sender state.
struct Object {
    id: String,
    /// The greatest revision delivered.
    current: i64,
    /// Revisions skipped and not delivered yet.
    held_back: Vec<i64>,
    /// Revisions delivered (applied or stale), for reused-revision conflicts.
    delivered: Vec<i64>,
}

/// The deliveries of one connection.
struct Sender {
    objects: Vec<Object>,
    /// The objects with at least one delivered revision.
    touched: Vec<usize>,
    /// Bodies accepted earlier, for exact retries (a bounded ring).
    accepted: Vec<Vec<u8>>,
    next_accepted: usize,
    reuse_counter: u64,
    rng: StdRng,
}

const RETRY_RING: usize = 1024;

impl Sender {
    fn next(&mut self) -> (Kind, Vec<u8>) {
        let roll = self.rng.random_range(0..100);
        if (70..85).contains(&roll) && !self.accepted.is_empty() {
            let i = self.rng.random_range(0..self.accepted.len());
            return (Kind::Retry, self.accepted[i].clone());
        }
        if roll >= 85
            && let Some(&o) = self.touched.choose(&mut self.rng)
        {
            let object = &mut self.objects[o];
            if roll < 95 && !object.held_back.is_empty() {
                let i = self.rng.random_range(0..object.held_back.len());
                let revision = object.held_back.swap_remove(i);
                object.delivered.push(revision);
                let body = snapshot_body(&format!("{}-r{revision}", object.id), object, revision);
                self.remember(&body);
                return (Kind::LateRevision, body);
            }
            if let Some(&revision) = object.delivered.choose(&mut self.rng) {
                self.reuse_counter += 1;
                let event_id = format!("{}-r{revision}-again{}", object.id, self.reuse_counter);
                return (
                    Kind::ReusedRevision,
                    snapshot_body(&event_id, object, revision),
                );
            }
        }
        let o = self.rng.random_range(0..self.objects.len());
        let object = &mut self.objects[o];
        if object.current == 0 {
            self.touched.push(o);
        }
        object.held_back.push(object.current + 1);
        object.current += 2;
        let revision = object.current;
        object.delivered.push(revision);
        let body = snapshot_body(&format!("{}-r{revision}", object.id), object, revision);
        self.remember(&body);
        (Kind::NewRevision, body)
    }

    fn remember(&mut self, body: &[u8]) {
        if self.accepted.len() < RETRY_RING {
            self.accepted.push(body.to_vec());
        } else {
            self.accepted[self.next_accepted] = body.to_vec();
        }
        self.next_accepted = (self.next_accepted + 1) % RETRY_RING;
    }
}

/// A snapshot envelope of about 300 bytes, like a small order.
fn snapshot_body(event_id: &str, object: &Object, revision: i64) -> Vec<u8> {
    serde_json::json!({
        "event_id": event_id,
        "object_id": object.id,
        "revision": revision,
        "type": "order.updated",
        "snapshot": {
            "status": if revision % 3 == 0 { "paid" } else { "pending" },
            "amount": 1000 + revision,
            "currency": "EUR",
            "customer": format!("cus-{}", revision % 977),
            "items": [{"sku": "A-100", "qty": 1}, {"sku": "B-200", "qty": revision % 5 + 1}],
        }
    })
    .to_string()
    .into_bytes()
}

fn signature(secret: &[u8], body: &[u8]) -> anyhow::Result<String> {
    let t = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).context("HMAC key")?;
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!(
        "t={t},v1={}",
        hex::encode(mac.finalize().into_bytes())
    ))
}

/// What one connection saw.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    /// (start in Unix microseconds, latency in microseconds) of each answered delivery.
    timeline: Vec<(u64, u64)>,
    by_outcome: BTreeMap<String, u64>,
    by_status: BTreeMap<u16, u64>,
    unexpected: u64,
    failed_requests: u64,
    examples: Vec<String>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.latencies_us.extend(other.latencies_us);
        self.timeline.extend(other.timeline);
        for (k, v) in other.by_outcome {
            *self.by_outcome.entry(k).or_default() += v;
        }
        for (k, v) in other.by_status {
            *self.by_status.entry(k).or_default() += v;
        }
        self.unexpected += other.unexpected;
        self.failed_requests += other.failed_requests;
        self.examples.extend(other.examples);
        self.examples.truncate(5);
    }

    fn note(&mut self, problem: String) {
        if self.examples.len() < 5 {
            self.examples.push(problem);
        }
    }
}

async fn drive(
    url: String,
    secret: String,
    mut sender: Sender,
    deadline: Instant,
    pace: Option<Pace>,
) -> anyhow::Result<Tally> {
    // One client per connection with one idle slot: exactly one keep-alive connection each.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .timeout(Duration::from_secs(30))
        .build()?;
    let mut tally = Tally::default();
    while Instant::now() < deadline && !STOP.load(std::sync::atomic::Ordering::Relaxed) {
        if let Some(pace) = &pace {
            let tick = async { pace.lock().await.tick().await };
            tokio::select! {
                _ = tick => {}
                () = tokio::time::sleep_until(deadline.into()) => break,
            }
        }
        let (kind, body) = sender.next();
        let signed = signature(secret.as_bytes(), &body)?;
        let started = Instant::now();
        let started_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        let sent = client
            .post(&url)
            .header("content-type", "application/json")
            .header("x-hookbox-signature", signed)
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                tally.failed_requests += 1;
                tally.note(format!("request failed: {e}"));
                continue;
            }
        };
        let status = response.status().as_u16();
        let answer = response.bytes().await;
        let latency = started.elapsed().as_micros() as u64;
        tally.latencies_us.push(latency);
        tally.timeline.push((started_unix, latency));
        *tally.by_status.entry(status).or_default() += 1;
        let answer: serde_json::Value = match answer {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
            Err(e) => {
                tally.failed_requests += 1;
                tally.note(format!("reading the answer failed: {e}"));
                continue;
            }
        };
        let field = if status == 409 { "reason" } else { "status" };
        let got = answer[field].as_str().unwrap_or("?").to_string();
        let (want_status, want) = kind.expected();
        if status != want_status || got != want {
            tally.unexpected += 1;
            tally.note(format!(
                "{kind:?}: expected {want_status} {want}, got {status} {answer}"
            ));
        }
        let label = if status == 200 || status == 409 {
            got
        } else {
            format!("http {status}")
        };
        *tally.by_outcome.entry(label).or_default() += 1;
    }
    Ok(tally)
}

fn percentile_ms(sorted_us: &[u64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted_us.len() as f64).ceil() as usize;
    sorted_us[rank.clamp(1, sorted_us.len()) - 1] as f64 / 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.connections > 0, "--connections must be at least 1");
    anyhow::ensure!(
        args.objects >= args.connections,
        "--objects must be at least --connections"
    );
    let pace = match args.rate {
        None => None,
        Some(rate) => {
            anyhow::ensure!(
                rate.is_finite() && rate > 0.0,
                "--rate must be a positive number"
            );
            let mut interval = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            Some(Arc::new(tokio::sync::Mutex::new(interval)))
        }
    };
    println!(
        "ingest_load: {} connections, {} s, {} objects, {}, {}",
        args.connections,
        args.duration,
        args.objects,
        args.rate
            .map_or("unpaced".to_string(), |r| format!("{r} deliveries/s")),
        args.url
    );

    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.duration);
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            STOP.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let mut workers = Vec::with_capacity(args.connections);
    for c in 0..args.connections {
        let objects = (0..args.objects)
            .filter(|o| o % args.connections == c)
            .map(|o| Object {
                id: format!("order-{o}"),
                current: 0,
                held_back: Vec::new(),
                delivered: Vec::new(),
            })
            .collect();
        let sender = Sender {
            objects,
            touched: Vec::new(),
            accepted: Vec::with_capacity(RETRY_RING),
            next_accepted: 0,
            reuse_counter: 0,
            rng: StdRng::seed_from_u64(c as u64),
        };
        workers.push(tokio::spawn(drive(
            args.url.clone(),
            args.secret.clone(),
            sender,
            deadline,
            pace.clone(),
        )));
    }
    let mut junk_workers = Vec::new();
    if let Some(junk_rate) = args.junk_rate {
        anyhow::ensure!(
            junk_rate.is_finite() && junk_rate > 0.0,
            "--junk-rate must be a positive number"
        );
        let mut interval = tokio::time::interval(Duration::from_secs_f64(1.0 / junk_rate));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let pace = Arc::new(tokio::sync::Mutex::new(interval));
        for n in 0..JUNK_CONNECTIONS {
            junk_workers.push(tokio::spawn(junk(
                args.url.clone(),
                n,
                deadline,
                pace.clone(),
            )));
        }
    }
    let mut tally = Tally::default();
    for worker in workers {
        tally.merge(worker.await??);
    }
    let (mut junk_sent, mut junk_refused) = (0, 0);
    for worker in junk_workers {
        let (sent, refused) = worker.await??;
        junk_sent += sent;
        junk_refused += refused;
    }
    let elapsed = started.elapsed().as_secs_f64();

    if let Some(path) = &args.latencies {
        tally.timeline.sort_unstable();
        let lines: String = tally
            .timeline
            .iter()
            .map(|(at, us)| format!("{at} {us}\n"))
            .collect();
        std::fs::write(path, lines)?;
    }
    tally.latencies_us.sort_unstable();
    let answered = tally.latencies_us.len() as u64;
    let rate = answered as f64 / elapsed;
    let p50 = percentile_ms(&tally.latencies_us, 50.0);
    let p99 = percentile_ms(&tally.latencies_us, 99.0);
    let non_2xx: u64 = tally
        .by_status
        .iter()
        .filter(|(s, _)| !(200..300).contains(*s))
        .map(|(_, n)| n)
        .sum();
    let non_2xx_unexpected: u64 = tally
        .by_status
        .iter()
        .filter(|(s, _)| !(200..300).contains(*s) && **s != 409)
        .map(|(_, n)| n)
        .sum();

    println!("answered        {answered} in {elapsed:.1} s = {rate:.1} deliveries/s");
    println!("latency         p50 {p50:.2} ms, p99 {p99:.2} ms");
    for (outcome, n) in &tally.by_outcome {
        println!("outcome         {outcome:<16} {n}");
    }
    for (status, n) in &tally.by_status {
        println!("http            {status:<16} {n}");
    }
    println!(
        "non-2xx         {non_2xx} ({non_2xx_unexpected} other than the expected 409 reused_revision)"
    );
    println!(
        "unexpected      {} answers, {} failed requests",
        tally.unexpected, tally.failed_requests
    );
    for example in &tally.examples {
        println!("  e.g. {example}");
    }
    if args.junk_rate.is_some() {
        println!("junk            {junk_sent} sent, {junk_refused} refused as expected (401, 404)");
    }
    let count = |name: &str| tally.by_outcome.get(name).copied().unwrap_or(0);
    println!(
        "RESULT rate={rate:.1} p50_ms={p50:.2} p99_ms={p99:.2} answered={answered} applied={} stale={} duplicate={} reused_revision={} non_2xx={non_2xx} unexpected={} failed={} junk_sent={junk_sent} junk_refused={junk_refused}",
        count("applied"),
        count("stale"),
        count("duplicate"),
        count("reused_revision"),
        tally.unexpected,
        tally.failed_requests
    );
    if tally.unexpected > 0 || tally.failed_requests > 0 || junk_refused != junk_sent {
        std::process::exit(1);
    }
    Ok(())
}
