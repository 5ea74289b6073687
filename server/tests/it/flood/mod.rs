//! One hostile client floods the real `hookbox` binary (on PostgreSQL) for 30 s with failed
//! sign-ins (100 a second), refused requests (100 a second: forged signatures of every kind of
//! verifier, from recipes and Twilio's sorted forms to Ed25519 `v1a` entries and Asana's
//! unsigned handshake, made-up sources and API tokens, oversized headers), exports it never
//! reads (2 at a time, as the review's) and, signed in as a viewer, the dashboard's heaviest reads (100 a second: body and id searches, problems and the resolved ones, sources, a big body,
//! the overview's charts, a destination's series) and, with a viewer's API token, the API's
//! heaviest reads (whole pages of 500, body searches, the big deliveries), and from four more
//! addresses the pull feed's long polls, whole pages and new consumers, all at once, while a sender's signed
//! deliveries are paced at 50 a second. Every delivery is answered 200 and applied, none waits
//! more than 5 s (a starved delivery, not a speed target: the latencies are printed, and the
//! targets live in `.ci/bench`), hookbox's peak RSS stays under 220 MB, no dashboard read is
//! answered 5xx, what the flood leaves in the database is bounded, and the rightful operator
//! signs in from their own address in the middle of it and reads the problems page.
//!
//! It runs alone (`.config/nextest.toml`), so its figures are hookbox's, not its neighbours'.
//! Signed forms of 1 MiB of distinct fields (`forms`) are sent beside it, two a second, and exports
//! alternate with body searches (`match`).
//!
//! Single sign-on's starts and forged callbacks (`sso`) go at 50 a second.
//!
//! `FLOOD_ONLY=signin`, `refused`, `export`, `pages`, `api`, `feed`, `forms` or `sso` (comma-separated) narrows the flood to
//! those kinds, to find which one costs the deliveries what.

mod client;
mod config;
mod feed;
mod forged;
mod forms;
mod sso;
mod storm;

pub(super) use client::hostile_pace;
use client::sign_in;

use config::CONFIG;
use forged::forged_delivery;

use crate::support::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A v1a key (Ed25519) of the Standard Webhooks vectors.
const STDWH_PUBLIC_KEY: &str = "whpk_Wt+q6hwenv+i22xieiDnqkg+I5QIzC3v45i9fjjGJFs=";

const ADMIN_PASSWORD: &str = "the operator's own password";
const VIEWER_PASSWORD: &str = "a long enough password";
/// The flooder's address and the operator's, as the trusted proxy in front reports them.
const FLOODER: &str = "203.0.113.66";
const OPERATOR: &str = "198.51.100.7";

async fn start(database_url: &str, issuer: &str) -> Binary {
    Binary::start(
        database_url,
        &format!("{CONFIG}{}", sso::config(issuer)),
        &[
            ("OIDC_SECRET", crate::oidc::CLIENT_SECRET),
            ("HOOKBOX_ADMIN_PASSWORD", ADMIN_PASSWORD),
            ("HOOKBOX_TRUSTED_PROXIES", "127.0.0.1/32"),
            ("STDWH_PUBLIC_KEY", STDWH_PUBLIC_KEY),
            ("DESTINATION_SECRET", DESTINATION_SECRET),
            ("RUST_LOG", "warn"),
        ],
    )
    .await
}

#[tokio::test]
async fn a_flood_of_sign_ins_refused_requests_and_exports_leaves_paced_deliveries_answered() {
    let (db, url) = fresh_postgres(&cluster_url()).await;
    // Single sign-on's provider, hostile; the flood only starts sign-ins and forges callbacks.
    let provider = crate::oidc::hostile::Hostile::spawn().await;
    let process = start(&url, &provider.issuer).await;
    let addr = process.addr;
    app::auth::add_user(&db, "mallory", VIEWER_PASSWORD, app::model::Role::Viewer)
        .await
        .expect("the flooder's viewer account");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client");

    // Heavy rows for the exports: 40 deliveries of about 256 kB each.
    let filler = "x".repeat(256 * 1024);
    for i in 0..40 {
        let body = event(
            &format!("big-{i}"),
            &format!("big-{i}"),
            1,
            &format!(r#"{{"filler":"{filler}"}}"#),
        );
        assert_eq!(
            send_to(&client, addr, &body).await,
            Some((200, "applied".into()))
        );
    }
    let mallory = sign_in(&client, addr, "mallory", VIEWER_PASSWORD, FLOODER)
        .await
        .expect("the viewer signs in before flooding");

    let stop = Arc::new(AtomicBool::new(false));
    let flooded = Arc::new(AtomicU64::new(0));
    let mut flood = Vec::new();
    let only = std::env::var("FLOOD_ONLY").unwrap_or_default();
    let on = |kind: &str| only.is_empty() || only.contains(kind);
    // Failed sign-ins: the operator's name with wrong passwords, and made-up names.
    for task in 0..if on("signin") { 2 } else { 0 } {
        let (client, stop, flooded) = (client.clone(), stop.clone(), flooded.clone());
        flood.push(tokio::spawn(async move {
            let mut i = 0u64;
            let mut pace = hostile_pace();
            while !stop.load(Ordering::Relaxed) {
                pace.tick().await;
                let name = if i.is_multiple_of(2) {
                    "admin".to_string()
                } else {
                    format!("nobody-{task}-{i}")
                };
                let _ = sign_in(&client, addr, &name, "wrong password", FLOODER).await;
                flooded.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        }));
    }
    // Refused requests: forged signatures with oversized header names and values, and sources
    // that do not exist.
    for task in 0..if on("refused") { 2 } else { 0 } {
        let (client, stop, flooded) = (client.clone(), stop.clone(), flooded.clone());
        flood.push(tokio::spawn(async move {
            let long_name = format!("x-{}", "n".repeat(4000));
            let long_value = "v".repeat(8000);
            let mut i = 0u64;
            let mut pace = hostile_pace();
            while !stop.load(Ordering::Relaxed) {
                pace.tick().await;
                // Made-up API tokens: bounded per client address before any lookup.
                if i % 5 == 4 {
                    let _ = client
                        .get(format!("http://{addr}/api/v1/events?limit=500"))
                        .header("X-Forwarded-For", FLOODER)
                        .bearer_auth(format!("hbt_made-up-{task}-{i}"))
                        .send()
                        .await;
                    flooded.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                    continue;
                }
                let (path, forged) = match i % 4 {
                    0 => ("/hooks/shop".to_string(), None),
                    1 => (format!("/hooks/made-up-{task}-{i}"), None),
                    // Every other scheme's verifier, in turn, with a body of 16 KiB.
                    _ => {
                        let (source, headers, body) = forged_delivery(i / 2);
                        (format!("/hooks/{source}"), Some((headers, body)))
                    }
                };
                let mut request = client
                    .post(format!("http://{addr}{path}"))
                    .header("X-Forwarded-For", FLOODER)
                    .header(long_name.as_str(), long_value.as_str());
                for h in 0..40 {
                    request = request.header(format!("x-junk-{h}"), "junk");
                }
                let request = match forged {
                    None => request
                        .header("X-Hookbox-Signature", "t=1,v1=forged")
                        .body("{\"event_id\":\"forged\"}".to_string()),
                    Some((headers, body)) => {
                        let mut request = request;
                        for (name, value) in headers {
                            request = request.header(name, value);
                        }
                        request.body(body)
                    }
                };
                let _ = request.send().await;
                flooded.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        }));
    }
    // Exports that are opened and never read, each held a few seconds, then opened again.
    for task in 0..if on("export") { 2 } else { 0 } {
        let (client, stop, flooded, cookie) = (
            client.clone(),
            stop.clone(),
            flooded.clone(),
            mallory.clone(),
        );
        flood.push(tokio::spawn(async move {
            // One of the two searches bodies (`match`): a search's deadline and places bound it.
            let query = match task {
                0 => "format=ndjson",
                _ => "format=ndjson&match=%7B%22filler%22%3A%22y%22%7D",
            };
            while !stop.load(Ordering::Relaxed) {
                let response = client
                    .get(format!("http://{addr}/export/events?{query}"))
                    .header("Cookie", &cookie)
                    .header("X-Forwarded-For", FLOODER)
                    .send()
                    .await;
                flooded.fetch_add(1, Ordering::Relaxed);
                // The head is read, the body never: hold it, then let go.
                tokio::time::sleep(Duration::from_secs(3)).await;
                drop(response);
            }
        }));
    }

    // The dashboard's heaviest reads, as the signed-in viewer: each answered, never a 5xx.
    let server_errors = Arc::new(std::sync::Mutex::new(Vec::<(String, u16)>::new()));
    for task in 0..if on("pages") { 2 } else { 0 } {
        let (client, stop, flooded, cookie, server_errors) = (
            client.clone(),
            stop.clone(),
            flooded.clone(),
            mallory.clone(),
            server_errors.clone(),
        );
        flood.push(tokio::spawn(async move {
            let mut i = 0u64;
            let mut pace = hostile_pace();
            while !stop.load(Ordering::Relaxed) {
                pace.tick().await;
                let (endpoint, args): (&str, Vec<(&str, String)>) = match i % 9 {
                    0 => ("find", vec![("q", format!("x{}", "x".repeat(150)))]),
                    1 => ("find", vec![("q", format!("order-{}", i % 997))]),
                    2 => ("problems", vec![]),
                    3 => ("sources", vec![]),
                    4 => ("overview", vec![]),
                    // The resolved causes, and a big delivery's body as its copy button fetches it.
                    5 => ("problems_settled", vec![("page", (i % 3).to_string())]),
                    6 => ("event_source", vec![("id", (1 + i % 40).to_string())]),
                    7 => ("route_previews", vec![]),
                    _ => (
                        "destination_series",
                        vec![("name", format!("d-{task}-{i}"))],
                    ),
                };
                let answer = client
                    .post(format!("http://{addr}/api/{endpoint}"))
                    .header("Cookie", &cookie)
                    .header("X-Forwarded-For", FLOODER)
                    .form(&args)
                    .send()
                    .await;
                let status = answer.map(|a| a.status().as_u16()).unwrap_or(0);
                if status == 0 || status >= 500 {
                    let mut errors = server_errors.lock().unwrap_or_else(|e| e.into_inner());
                    errors.push((endpoint.to_string(), status));
                }
                flooded.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        }));
    }

    // The API's heaviest reads, with a valid viewer token: whole pages (500 rows), body
    // searches, the big deliveries one by one, an object's history, every problem, a route's
    // preview over the newest 10,000 deliveries; never a 5xx.
    let api_token = viewer_token(&db, "flooding-script").await;
    // Answered 200: the token's rate (20 a second) is served, the rest refused with 429.
    let api_served = Arc::new(AtomicU64::new(0));
    for _ in 0..if on("api") { 2 } else { 0 } {
        let (client, stop, flooded, token, server_errors, api_served) = (
            client.clone(),
            stop.clone(),
            flooded.clone(),
            api_token.clone(),
            server_errors.clone(),
            api_served.clone(),
        );
        flood.push(tokio::spawn(async move {
            let mut i = 0u64;
            let mut pace = hostile_pace();
            while !stop.load(Ordering::Relaxed) {
                pace.tick().await;
                let path = match i % 8 {
                    0 => "/api/v1/events?limit=500".to_string(),
                    1 => format!("/api/v1/events?limit=500&match=%7B%22filler%22%3A%22y{i}%22%7D"),
                    2 => format!("/api/v1/events/{}", 1 + i % 40),
                    3 => format!(
                        "/api/v1/sources/shop/objects/big-{}/revisions?limit=500",
                        i % 40
                    ),
                    4 => "/api/v1/problems?state=all".to_string(),
                    5 => "/api/v1/problems?state=open&source=shop".to_string(),
                    6 => "/api/v1/routes/preview".to_string(),
                    _ => "/api/v1/events?limit=500&status=failed&from=2020-01-01".to_string(),
                };
                let request = if path.ends_with("/preview") {
                    let body = serde_json::json!({
                        "source": "shop",
                        "match": {"snapshot": {"n": i}},
                        "limit": 10000
                    });
                    client
                        .post(format!("http://{addr}{path}"))
                        .header("content-type", "application/json")
                        .body(body.to_string())
                } else {
                    client.get(format!("http://{addr}{path}"))
                };
                let answer = request
                    .bearer_auth(&token)
                    .header("X-Forwarded-For", FLOODER)
                    .send()
                    .await;
                let status = answer.map(|a| a.status().as_u16()).unwrap_or(0);
                if status == 200 {
                    api_served.fetch_add(1, Ordering::Relaxed);
                }
                if status == 0 || status >= 500 {
                    let mut errors = server_errors.lock().unwrap_or_else(|e| e.into_inner());
                    errors.push((path, status));
                }
                flooded.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        }));
    }

    if on("sso") {
        sso::flood(addr, &client, (&stop, &flooded), &server_errors, &mut flood);
    }
    if on("forms") {
        forms::flood(addr, &client, &stop, &flooded, &server_errors, &mut flood);
    }
    let feed = if on("feed") {
        feed::seed_duplicates(&db, &client, addr).await;
        feed::flood(
            &db,
            addr,
            &client,
            &stop,
            &flooded,
            &server_errors,
            &mut flood,
        )
        .await
    } else {
        feed::Flood::default()
    };

    // The sender: 50 deliveries a second for 30 s, each timed.
    let peak_rss = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak_rss) = (stop.clone(), peak_rss.clone());
        let pid = process.child.id();
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
                    .unwrap_or_default()
                    .lines()
                    .find_map(|line| line.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
                    .unwrap_or(0);
                peak_rss.fetch_max(rss, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let mut ticker = tokio::time::interval(Duration::from_millis(20));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut deliveries = Vec::new();
    let mut operator = None;
    let started = Instant::now();
    for i in 0..1500 {
        ticker.tick().await;
        let sender = client.clone();
        deliveries.push(tokio::spawn(async move {
            let body = event(&format!("paced-{i}"), &format!("order-{i}"), 1, "{}");
            let sent = Instant::now();
            let answer = send_to(&sender, addr, &body).await;
            (answer, sent.elapsed())
        }));
        // In the middle of the flood, the operator signs in from their own address.
        if i == 1000 {
            let client = client.clone();
            operator = Some(tokio::spawn(async move {
                let cookie = sign_in(&client, addr, "admin", ADMIN_PASSWORD, OPERATOR).await?;
                let problems = client
                    .post(format!("http://{addr}/api/problems"))
                    .header("Cookie", &cookie)
                    .header("X-Forwarded-For", OPERATOR)
                    .send()
                    .await
                    .map_err(|_| 0u16)?;
                match problems.status().as_u16() {
                    200 => Ok(cookie),
                    status => Err(status),
                }
            }));
        }
    }
    let mut latencies = Vec::with_capacity(deliveries.len());
    let mut failures = Vec::new();
    for (i, delivery) in deliveries.into_iter().enumerate() {
        let (answer, took) = delivery.await.expect("delivery task");
        if answer != Some((200, "applied".to_string())) {
            failures.push((i, answer));
        }
        latencies.push(took);
    }
    let operator = operator.expect("started").await.expect("operator task");
    let paced_for = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for task in flood {
        let _ = task.await;
    }
    // The feed's calls end within their wait (10 s).
    let calls: Vec<_> = std::mem::take(&mut *feed.calls.lock().unwrap_or_else(|e| e.into_inner()));
    for call in calls {
        let _ = call.await;
    }
    let _ = sampler.await;
    let peak_kb = process
        .memory_kb("VmHWM")
        .max(peak_rss.load(Ordering::Relaxed));

    latencies.sort();
    let p50 = latencies[latencies.len() / 2];
    let p99 = latencies[latencies.len() * 99 / 100];
    let max = latencies[latencies.len() - 1];
    println!(
        "flood: {} hostile requests over {paced_for:?}; 1500 deliveries p50 {p50:?} p99 {p99:?} max {max:?}; peak RSS {} MB",
        flooded.load(Ordering::Relaxed),
        peak_kb / 1024
    );

    assert!(
        failures.is_empty(),
        "{} deliveries not applied, first {:?}; log: {}",
        failures.len(),
        &failures[..failures.len().min(5)],
        process.log()
    );
    assert!(
        operator.is_ok(),
        "the operator could not sign in and read the problems during the flood: {operator:?}"
    );
    assert!(
        max < Duration::from_secs(5),
        "a delivery waited {max:?} for its answer during the flood"
    );
    let server_errors = server_errors
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    assert!(
        server_errors.is_empty(),
        "{} dashboard or API reads answered 5xx or not at all, first {:?}",
        server_errors.len(),
        &server_errors[..server_errors.len().min(5)]
    );
    if on("sso") {
        // Starts past the flooder's bound were refused, forged callbacks left counts, not rows.
        let flows = scalar(&db, "SELECT count(*) FROM sign_in_flows", vec![]).await;
        assert_eq!(
            flows,
            Some(app::auth::oidc::MAX_FLOWS_PER_CLIENT),
            "the flooder's starts stored up to its bound, no more"
        );
        let refused = scalar(
            &db,
            "SELECT count(*) FROM audit_log WHERE outcome = 'refused'",
            vec![],
        )
        .await;
        assert_eq!(refused, Some(0), "no audit row per forged callback");
    }
    if on("feed") {
        let served = feed.served.load(Ordering::Relaxed);
        println!("feed reads and consumers served during the flood: {served}");
        assert!(served >= 50, "the feed's calls were served {served} times");
        let consumers = scalar(&db, "SELECT count(*) FROM feed_consumers", vec![])
            .await
            .expect("a count");
        assert!(
            consumers <= app::feed::consumers::MAX_CONSUMERS,
            "{consumers} consumers"
        );
        // One token takes its share, not everyone's.
        let owners = texts(
            &db,
            "SELECT t.name, CAST(count(*) AS text) FROM feed_consumers c
             JOIN api_tokens t ON t.id = c.owner_token_id GROUP BY t.name ORDER BY t.name",
            vec![],
        )
        .await;
        println!("feed consumers by owner: {owners:?}");
        assert_eq!(
            owners.len(),
            5,
            "every flooding token has consumers: {owners:?}"
        );
        for owner in &owners {
            let n: i64 = owner[1].as_deref().unwrap_or("0").parse().unwrap_or(0);
            assert!(
                n <= app::feed::consumers::MAX_CONSUMERS_PER_OWNER,
                "{owners:?}"
            );
        }
        let greedy = &feed.greedy;
        let (over_share, pages, reads_full) = (
            greedy.polls_over_share.load(Ordering::Relaxed),
            greedy.duplicate_pages.load(Ordering::Relaxed),
            greedy.reads_full.load(Ordering::Relaxed),
        );
        println!(
            "long polls over their token's share: {over_share}; the greedy token's pages of duplicates: {pages}; \
             reads refused past the queue of page reads: {reads_full}"
        );
        assert!(over_share > 0, "a token reached its share of long polls");
        assert!(pages > 0, "pages of duplicates were served");
    }
    if on("api") {
        let served = api_served.load(Ordering::Relaxed);
        println!("API reads served during the flood: {served}");
        assert!(
            served >= 100,
            "the API token's reads were served {served} times"
        );
    }
    // Measured 168–178 MB (a debug build: about 40 MB of it is the binary's own pages), each
    // kind alone 110–145 MB (the feed 117 MB; 156 while its queue of page reads was unbounded
    // and the reads catching up filled it); freed memory goes back to the system after 10 ms
    // (main.rs), which at mimalloc's own second left 223–250 MB resident.
    assert!(
        peak_kb < 220 * 1024,
        "hookbox's peak RSS {} MB during the flood",
        peak_kb / 1024
    );
    assert!(
        flooded.load(Ordering::Relaxed) > 4_000,
        "the flood flooded: {} requests",
        flooded.load(Ordering::Relaxed)
    );
    // What the flood left in the database is bounded: sign-in failures are counted per name,
    // client and minute, and the refused requests' rows each hold a bounded number of bytes.
    let audit_rows = count(
        &db,
        "SELECT count(*) FROM audit_log WHERE action = 'sign_in' AND outcome <> 'succeeded'",
    )
    .await;
    assert_eq!(audit_rows, 0, "failed sign-ins are no audit rows");
    assert_eq!(
        count(&db, "SELECT count(*) FROM handshake_waits").await,
        0,
        "an unsigned handshake never writes a row"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM webhook_events WHERE source NOT IN ('shop', 'github')"
        )
        .await,
        0,
        "no forged delivery is archived"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(DISTINCT source) FROM rejected_requests
              WHERE source IN ('lemon', 'twilio', 'mailgun', 'stdwh', 'asana')"
        )
        .await,
        5,
        "every kind of forgery reached its verifier and was refused"
    );
    let largest_refused = scalar(
        &db,
        "SELECT CAST(COALESCE(max(length(headers) + length(cause) + length(source)), 0) AS bigint) FROM rejected_requests",
        vec![],
    )
    .await
    .unwrap_or(0);
    assert!(
        largest_refused < 16 * 1024,
        "a refused-requests row holds {largest_refused} bytes"
    );
}

/// A viewer's API token named `name` for the source `shop`, made by olga.
async fn viewer_token(db: &app::db::Db, name: &str) -> String {
    app::auth::tokens::add_token(
        db,
        name,
        app::model::Role::Viewer,
        &[],
        None,
        "olga",
        &["shop"],
    )
    .await
    .unwrap_or_else(|e| panic!("the token {name}: {e:?}"))
}
