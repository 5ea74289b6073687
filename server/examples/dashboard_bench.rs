//! Times the dashboard's server functions over HTTP (the dashboard benchmark, `.ci/bench-dashboard`).
//!
//! It signs in through the `login` server function as a browser does (a form POST, the session
//! cookie from `Set-Cookie`), then calls the server functions behind the pages, one request at a
//! time, as one operator clicking through the dashboard:
//!
//! - `events`: the first page of `/events`; `status=failed`; the page 1,000 pages deep, reached by
//!   walking the cursors (the walk is done once; the deep page is then fetched by its cursor);
//!   `q=<object id>`, for an ordinary object and for the one with the most deliveries;
//! - `object`: the history page of one object (the one with the most revisions);
//! - `overview`: the counts of `/`;
//! - `problems`: `/problems`, the open failures grouped by cause;
//! - `find`: the top bar's search (`/search?q=`): the end of an object id (the digits of `--q`),
//!   and a value inside the bodies (a customer, about 1,000 deliveries);
//! - with `--token` (an API token), the API's `GET /api/v1/events` (first page, failed ones) and
//!   the object's `GET /api/v1/sources/{source}/objects/{id}` and its revisions.
//!
//! After a warm-up, every case is timed `--repetitions` times, the cases interleaved so that a
//! load spike on the machine is shared out among them. Each answer is checked (status 200, the
//! rows it must have), and the results are printed as a Markdown table against the target
//! (p95 below `--target-ms`).
//!
//! With `--database-url`, every case that missed the target is called once more with
//! PostgreSQL's `auto_explain` switched on for all sessions (the cluster must preload it:
//! `session_preload_libraries=auto_explain`), between `RAISE LOG` markers
//! (`dashboard_bench explain begin: CASE` / `... end: CASE`), so the server log holds the
//! `EXPLAIN (ANALYZE, BUFFERS)` of exactly the statements hookbox sent.
//!
//! ```sh
//! cargo run --release --example dashboard_bench -p server -- \
//!     --url http://127.0.0.1:3000 --user bench --password 'a long enough password' \
//!     --q order-7000 --object-source stripe --object-id sub_0
//! ```
//!
//! The last lines are machine-readable (`RESULT case=... p50_ms=... p95_ms=... max_ms=... met=...`,
//! then `MISSED case ...`); the exit status is 1 when an answer was wrong.

use anyhow::{Context, bail, ensure};
use clap::Parser;
use sea_orm::{ConnectionTrait, Database};
use serde_json::Value;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Time the dashboard's server functions over HTTP")]
struct Args {
    /// hookbox's base URL, e.g. http://127.0.0.1:3000.
    #[arg(long)]
    url: String,
    /// A dashboard user (viewer is enough).
    #[arg(long)]
    user: String,
    #[arg(long, env = "DASHBOARD_BENCH_PASSWORD")]
    password: String,
    /// Timed calls of each case.
    #[arg(long, default_value_t = 50)]
    repetitions: usize,
    /// Untimed calls of each case first.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// How deep the deep page is (1 is the first page).
    #[arg(long, default_value_t = 1000)]
    deep_page: usize,
    /// The `q` of the search case: an object id.
    #[arg(long)]
    q: String,
    /// The object of the history case.
    #[arg(long)]
    object_source: String,
    #[arg(long)]
    object_id: String,
    /// The target: p95 below this many milliseconds.
    #[arg(long, default_value_t = 50.0)]
    target_ms: f64,
    /// An API token (viewer is enough): also time `GET /api/v1/events` and the object's reads.
    #[arg(long, env = "DASHBOARD_BENCH_TOKEN")]
    token: Option<String>,
    /// PostgreSQL (superuser) URL of hookbox's database: explain the cases that missed.
    #[arg(long)]
    database_url: Option<String>,
}

/// One timed call: a server function and its form arguments.
struct Case {
    name: &'static str,
    label: String,
    endpoint: &'static str,
    args: Vec<(&'static str, String)>,
    check: fn(&Value, &Case) -> anyhow::Result<()>,
    /// Its own target (p95, ms), else `--target-ms`.
    target_ms: Option<f64>,
    latencies_us: Vec<u64>,
}

/// A payload search (`match`) on 1,000,000 deliveries: p95 under 150 ms on PostgreSQL.
const MATCH_TARGET_MS: f64 = 150.0;

/// `/problems` (open failures grouped by cause) on 1,000,000 deliveries: p95 under 100 ms.
const PROBLEMS_TARGET_MS: f64 = 100.0;

/// Open problems, each with its failures, and the totals they add up to.
fn problems(answer: &Value, _: &Case) -> anyhow::Result<()> {
    let open = answer["open"].as_array().context("no open groups")?;
    ensure!(!open.is_empty(), "no open problem");
    let total = answer["open_total"].as_i64().context("no total")?;
    ensure!(
        total as usize >= open.len(),
        "fewer problems in all than shown"
    );
    let shown: i64 = open.iter().filter_map(|g| g["count"].as_i64()).sum();
    ensure!(
        shown > 0 && shown <= answer["open_failures"].as_i64().unwrap_or(0),
        "the groups' failures do not add up"
    );
    Ok(())
}

/// The top bar's search on 1,000,000 deliveries: p95 under 100 ms on PostgreSQL.
const FIND_TARGET_MS: f64 = 100.0;

fn find_case(name: &'static str, what: &str, q: &str) -> Case {
    Case {
        name,
        label: format!("`find`: `/search?q={q}` ({what})"),
        endpoint: "find",
        args: vec![("q", q.to_string())],
        check: found_objects,
        target_ms: Some(FIND_TARGET_MS),
        latencies_us: Vec::new(),
    }
}

/// A search found objects, the one `--q` names among them for a search by its id's end.
fn found_objects(answer: &Value, case: &Case) -> anyhow::Result<()> {
    let objects = answer["objects"]
        .as_array()
        .context("no objects in the answer")?;
    ensure!(!objects.is_empty(), "no object found");
    if case.name == "find_id_suffix" {
        let q = &case.args[0].1;
        ensure!(
            objects.iter().any(|o| o["object_id"]
                .as_str()
                .is_some_and(|id| id.ends_with(q.as_str()))),
            "no object id ends with {q}"
        );
    }
    Ok(())
}

fn match_case(
    name: &'static str,
    what: &str,
    matcher: &str,
    check: fn(&Value, &Case) -> anyhow::Result<()>,
) -> Case {
    Case {
        name,
        label: format!("`events`: `/events?match={matcher}` ({what})"),
        endpoint: "events",
        args: vec![("match", matcher.to_string())],
        check,
        target_ms: Some(MATCH_TARGET_MS),
        latencies_us: Vec::new(),
    }
}

/// The API's reads that the dashboard's pages have too: `GET /api/v1/events` (first page, failed
/// ones) and the object with the most revisions, its current revision and its history's first page.
fn api_cases(args: &Args) -> Vec<Case> {
    let object = format!(
        "/api/v1/sources/{}/objects/{}",
        args.object_source, args.object_id
    );
    let case =
        |name, label: String, endpoint: String, query: Vec<(&'static str, String)>, check| {
            Case {
                name,
                label,
                // The cases live as long as the run: the few paths are leaked, not copied each call.
                endpoint: Box::leak(endpoint.into_boxed_str()),
                args: query,
                check,
                target_ms: None,
                latencies_us: Vec::new(),
            }
        };
    vec![
        case(
            "api_events",
            "API: `GET /api/v1/events`, first page".into(),
            "/api/v1/events".into(),
            vec![("limit", PAGE_SIZE.to_string())],
            api_page,
        ),
        case(
            "api_events_failed",
            "API: `GET /api/v1/events?status=failed`".into(),
            "/api/v1/events".into(),
            vec![
                ("status", "failed".into()),
                ("limit", PAGE_SIZE.to_string()),
            ],
            api_page,
        ),
        case(
            "api_object",
            format!("API: `GET {object}`"),
            object.clone(),
            vec![],
            api_object,
        ),
        case(
            "api_revisions",
            format!("API: `GET {object}/revisions`, first page"),
            format!("{object}/revisions"),
            vec![("limit", PAGE_SIZE.to_string())],
            api_page,
        ),
    ]
}

/// A full page of the API: 50 items and a next cursor.
fn api_page(answer: &Value, _: &Case) -> anyhow::Result<()> {
    let data = answer["data"].as_array().context("no data in the answer")?;
    ensure!(
        data.len() == PAGE_SIZE,
        "{} items, expected {PAGE_SIZE}",
        data.len()
    );
    ensure!(answer["next_cursor"].is_string(), "no next cursor");
    Ok(())
}

fn api_object(answer: &Value, _: &Case) -> anyhow::Result<()> {
    ensure!(answer["revision"].is_i64(), "the object has no revision");
    ensure!(answer["snapshot"].is_object(), "the object has no snapshot");
    Ok(())
}

fn some_rows(answer: &Value, _: &Case) -> anyhow::Result<()> {
    ensure!(!rows(answer)?.is_empty(), "no row");
    Ok(())
}

fn no_rows(answer: &Value, _: &Case) -> anyhow::Result<()> {
    ensure!(rows(answer)?.is_empty(), "rows where none match");
    Ok(())
}

const PAGE_SIZE: usize = 50;

fn rows(answer: &Value) -> anyhow::Result<&Vec<Value>> {
    answer["rows"].as_array().context("no rows in the answer")
}

fn full_page(answer: &Value, _: &Case) -> anyhow::Result<()> {
    let rows = rows(answer)?;
    ensure!(
        rows.len() == PAGE_SIZE,
        "{} rows, expected {PAGE_SIZE}",
        rows.len()
    );
    ensure!(answer["next_cursor"].is_string(), "no next cursor");
    Ok(())
}

fn failed_page(answer: &Value, case: &Case) -> anyhow::Result<()> {
    full_page(answer, case)?;
    ensure!(
        rows(answer)?.iter().all(|r| r["status"] == "failed"),
        "a row that is not failed"
    );
    Ok(())
}

fn search_page(answer: &Value, case: &Case) -> anyhow::Result<()> {
    let q = case
        .args
        .iter()
        .find(|(k, _)| *k == "q")
        .map(|(_, v)| v.as_str());
    let rows = rows(answer)?;
    ensure!(!rows.is_empty(), "no row for q={q:?}");
    ensure!(
        rows.iter()
            .all(|r| r["object_id"].as_str() == q || r["event_id"].as_str() == q),
        "a row that does not match q={q:?}"
    );
    Ok(())
}

fn history(answer: &Value, _: &Case) -> anyhow::Result<()> {
    ensure!(
        answer["current_revision"].is_i64(),
        "the object has no current revision"
    );
    let revisions = answer["revisions"]
        .as_array()
        .context("no revisions in the answer")?;
    ensure!(!revisions.is_empty(), "no revisions");
    Ok(())
}

fn overview(answer: &Value, _: &Case) -> anyhow::Result<()> {
    ensure!(answer["has_events"] == true, "the overview sees no events");
    ensure!(
        answer["volume"]["days"].as_array().map(Vec::len) == Some(7)
            && answer["volume"]["hours"].as_array().map(Vec::len) == Some(24),
        "not 7 days and 24 hours in the chart"
    );
    ensure!(
        answer["by_source_7d"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "no counts for the last 7 days"
    );
    Ok(())
}

struct Dashboard {
    client: reqwest::Client,
    base: String,
    cookie: String,
    token: Option<String>,
}

impl Dashboard {
    async fn sign_in(base: &str, user: &str, password: &str) -> anyhow::Result<Dashboard> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(1)
            .timeout(Duration::from_secs(60))
            .build()?;
        let response = client
            .post(format!("{base}/api/login"))
            .header("Accept", "application/json")
            .header("Sec-Fetch-Site", "same-origin")
            .form(&[("name", user), ("password", password), ("next", "/")])
            .send()
            .await
            .context("the login server function")?;
        let status = response.status();
        let cookie = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("hookbox_session="))
            .and_then(|v| v.split(';').next())
            .map(str::to_string);
        match cookie {
            Some(cookie) if status.is_success() || status.is_redirection() => Ok(Dashboard {
                client,
                base: base.to_string(),
                cookie,
                token: None,
            }),
            _ => bail!(
                "sign-in failed: {status} {}",
                response.text().await.unwrap_or_default()
            ),
        }
    }

    /// Calls a server function as the browser does (form arguments, JSON answer), or, for an
    /// endpoint that is a path of `/api/v1`, GETs it with the API token (query arguments).
    async fn call(&self, endpoint: &str, args: &[(&str, String)]) -> anyhow::Result<Value> {
        let request = match endpoint.starts_with("/api/v1/") {
            true => self
                .client
                .get(format!("{}{endpoint}", self.base))
                .bearer_auth(self.token.as_deref().context("no --token")?)
                .query(args),
            false => self
                .client
                .post(format!("{}/api/{endpoint}", self.base))
                .header("Cookie", &self.cookie)
                .header("Accept", "application/json")
                .header("Sec-Fetch-Site", "same-origin")
                .form(args),
        };
        let response = request
            .send()
            .await
            .with_context(|| format!("calling {endpoint}"))?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            bail!("{endpoint}: {status} {}", String::from_utf8_lossy(&body));
        }
        serde_json::from_slice(&body).with_context(|| format!("{endpoint}: the answer is not JSON"))
    }
}

fn percentile_ms(sorted_us: &[u64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted_us.len() as f64).ceil() as usize;
    sorted_us[rank.clamp(1, sorted_us.len()) - 1] as f64 / 1000.0
}

/// Follows `next_cursor` from the first page; returns the cursor of page `page`.
async fn cursor_of_page(dashboard: &Dashboard, page: usize) -> anyhow::Result<String> {
    let mut cursor = String::new();
    for n in 1..page {
        let mut args = Vec::new();
        if !cursor.is_empty() {
            args.push(("cursor", cursor.clone()));
        }
        let answer = dashboard.call("events", &args).await?;
        cursor = answer["next_cursor"]
            .as_str()
            .with_context(|| format!("page {n} has no next cursor: the archive is too small"))?
            .to_string();
    }
    Ok(cursor)
}

async fn explain(
    database_url: &str,
    dashboard: &Dashboard,
    missed: &[&Case],
) -> anyhow::Result<()> {
    let db = Database::connect(database_url)
        .await
        .context("connecting to PostgreSQL for the query plans")?;
    let log = |line: String| {
        let db = &db;
        async move {
            db.execute_unprepared(&format!("DO $$ BEGIN RAISE LOG '{line}'; END $$"))
                .await
        }
    };
    let set = |value: &'static str| {
        let db = &db;
        async move {
            db.execute_unprepared(&format!(
                "ALTER SYSTEM SET auto_explain.log_min_duration = {value}"
            ))
            .await?;
            db.execute_unprepared("SELECT pg_reload_conf()").await?;
            // Every backend rereads the configuration before its next statement.
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok::<_, sea_orm::DbErr>(())
        }
    };
    set("0").await?;
    let result = async {
        for case in missed {
            log(format!("dashboard_bench explain begin: {}", case.name)).await?;
            let answer = dashboard.call(case.endpoint, &case.args).await;
            log(format!("dashboard_bench explain end: {}", case.name)).await?;
            answer?;
        }
        Ok::<_, anyhow::Error>(())
    }
    .await;
    set("-1").await?;
    result
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(args.repetitions > 0, "--repetitions must be at least 1");
    ensure!(args.deep_page >= 2, "--deep-page must be at least 2");
    let base = args.url.trim_end_matches('/').to_string();
    let mut dashboard = Dashboard::sign_in(&base, &args.user, &args.password).await?;
    dashboard.token = args.token.clone();
    println!("dashboard_bench: signed in to {base} as {}", args.user);

    let walk_started = Instant::now();
    let deep_cursor = cursor_of_page(&dashboard, args.deep_page).await?;
    let walk = walk_started.elapsed();
    println!(
        "walked {} pages by cursor in {:.1} s ({:.1} ms a page); page {} starts after {deep_cursor}",
        args.deep_page - 1,
        walk.as_secs_f64(),
        walk.as_secs_f64() * 1000.0 / (args.deep_page - 1) as f64,
        args.deep_page
    );

    let mut cases = vec![
        Case {
            name: "events_first_page",
            label: "`events`: `/events`, first page".into(),
            endpoint: "events",
            args: vec![],
            check: full_page,
            target_ms: None,
            latencies_us: Vec::new(),
        },
        Case {
            name: "events_failed",
            label: "`events`: `/events?status=failed`".into(),
            endpoint: "events",
            args: vec![("status", "failed".into())],
            check: failed_page,
            target_ms: None,
            latencies_us: Vec::new(),
        },
        Case {
            name: "events_deep_page",
            label: format!("`events`: page {} by cursor", args.deep_page),
            endpoint: "events",
            args: vec![("cursor", deep_cursor)],
            check: full_page,
            target_ms: None,
            latencies_us: Vec::new(),
        },
        Case {
            name: "events_q_object",
            label: format!("`events`: `/events?q={}` (an object id)", args.q),
            endpoint: "events",
            args: vec![("q", args.q.clone())],
            check: search_page,
            target_ms: None,
            latencies_us: Vec::new(),
        },
        Case {
            name: "events_q_hot_object",
            label: format!(
                "`events`: `/events?q={}` (the object with the most deliveries)",
                args.object_id
            ),
            endpoint: "events",
            args: vec![("q", args.object_id.clone())],
            check: search_page,
            target_ms: None,
            latencies_us: Vec::new(),
        },
        Case {
            name: "object_history",
            label: format!(
                "`object`: `/objects/{}/{}`",
                args.object_source, args.object_id
            ),
            endpoint: "object",
            args: vec![
                ("source", args.object_source.clone()),
                ("object_id", args.object_id.clone()),
            ],
            check: history,
            target_ms: None,
            latencies_us: Vec::new(),
        },
        Case {
            name: "overview",
            label: "`overview`: `/` counts".into(),
            endpoint: "overview",
            args: vec![],
            check: overview,
            target_ms: None,
            latencies_us: Vec::new(),
        },
        Case {
            name: "problems",
            label: "`problems`: `/problems`, open failures by cause".into(),
            endpoint: "problems",
            args: vec![],
            check: problems,
            target_ms: Some(PROBLEMS_TARGET_MS),
            latencies_us: Vec::new(),
        },
        match_case(
            "match_customer",
            "one customer of 977: about 1,000 deliveries",
            r#"{"snapshot":{"customer":"cus-42"}}"#,
            full_page,
        ),
        match_case(
            "match_object",
            "one object: a handful of deliveries",
            &format!(r#"{{"object_id":"{}"}}"#, args.q),
            some_rows,
        ),
        match_case(
            "match_common",
            "nine deliveries in ten",
            r#"{"snapshot":{"currency":"EUR"}}"#,
            full_page,
        ),
        match_case(
            "match_array",
            "an element of an array: one delivery in five",
            r#"{"snapshot":{"items":[{"sku":"B-200","qty":3}]}}"#,
            full_page,
        ),
        match_case(
            "match_none",
            "nothing matches",
            r#"{"snapshot":{"customer":"cus-nobody"}}"#,
            no_rows,
        ),
        find_case(
            "find_id_suffix",
            "the end of an object id",
            args.q.rsplit(['-', '_']).next().unwrap_or(&args.q),
        ),
        find_case(
            "find_body_value",
            "a value inside the bodies: one customer of 977",
            "cus-42",
        ),
        match_case(
            "match_failed_customer",
            "with status=failed: a customer's failed deliveries",
            r#"{"snapshot":{"customer":"cus-42"}}"#,
            some_rows,
        ),
    ];
    if let Some(case) = cases.iter_mut().find(|c| c.name == "match_failed_customer") {
        case.args.push(("status", "failed".into()));
    }
    if args.token.is_some() {
        cases.extend(api_cases(&args));
    }

    // What each case answered, checked once, outside the timing.
    let mut shapes = Vec::new();
    for case in &cases {
        let answer = dashboard.call(case.endpoint, &case.args).await?;
        (case.check)(&answer, case).with_context(|| format!("{}: wrong answer", case.name))?;
        shapes.push(match case.endpoint {
            "events" => format!("{} rows", answer["rows"].as_array().map_or(0, Vec::len)),
            api if api.starts_with("/api/v1/") => match answer["data"].as_array() {
                Some(data) => format!("{} items", data.len()),
                None => format!("revision {}", answer["revision"]),
            },
            "problems" => format!(
                "{} problems, {} open failures",
                answer["open_total"], answer["open_failures"]
            ),
            "find" => format!(
                "{} objects, {} events",
                answer["objects"].as_array().map_or(0, Vec::len),
                answer["events"].as_array().map_or(0, Vec::len)
            ),
            "object" => format!(
                "{} revisions shown, current {}",
                answer["revisions"].as_array().map_or(0, Vec::len),
                answer["current_revision"]
            ),
            _ => format!(
                "{} sources (7 d), {} failures listed",
                answer["by_source_7d"].as_array().map_or(0, Vec::len),
                answer["newest_failures"].as_array().map_or(0, Vec::len)
            ),
        });
    }

    for round in 0..args.warmup + args.repetitions {
        for case in cases.iter_mut() {
            let started = Instant::now();
            let answer = dashboard.call(case.endpoint, &case.args).await?;
            let elapsed = started.elapsed();
            (case.check)(&answer, case).with_context(|| format!("{}: wrong answer", case.name))?;
            if round >= args.warmup {
                case.latencies_us.push(elapsed.as_micros() as u64);
            }
        }
    }

    println!(
        "\n{} timed calls of each case after {} warm-up calls, one request at a time, cases interleaved\n",
        args.repetitions, args.warmup
    );
    println!(
        "| server function: page | answer | p50 | p95 | max | target p95 < {} ms (searches by `match` < {MATCH_TARGET_MS} ms, `find` < {FIND_TARGET_MS} ms, `problems` < {PROBLEMS_TARGET_MS} ms) |",
        args.target_ms
    );
    println!("|---|---|---:|---:|---:|---|");
    let mut results = Vec::new();
    for (case, shape) in cases.iter_mut().zip(&shapes) {
        case.latencies_us.sort_unstable();
        let p50 = percentile_ms(&case.latencies_us, 50.0);
        let p95 = percentile_ms(&case.latencies_us, 95.0);
        let max = percentile_ms(&case.latencies_us, 100.0);
        let target = case.target_ms.unwrap_or(args.target_ms);
        let met = p95 < target;
        let verdict = if met {
            "met".to_string()
        } else {
            format!(
                "**missed** by {:.1} ms ({:.1} × the target)",
                p95 - target,
                p95 / target
            )
        };
        println!(
            "| {} | {shape} | {p50:.1} ms | {p95:.1} ms | {max:.1} ms | {verdict} |",
            case.label
        );
        results.push((case.name, p50, p95, max, met));
    }
    println!();
    for (name, p50, p95, max, met) in &results {
        println!("RESULT case={name} p50_ms={p50:.2} p95_ms={p95:.2} max_ms={max:.2} met={met}");
    }
    let missed: Vec<&Case> = cases
        .iter()
        .zip(&results)
        .filter(|(_, r)| !r.4)
        .map(|(c, _)| c)
        .collect();
    println!(
        "MISSED {}",
        missed.iter().map(|c| c.name).collect::<Vec<_>>().join(" ")
    );
    if let Some(url) = &args.database_url
        && !missed.is_empty()
    {
        explain(url, &dashboard, &missed).await?;
        println!("EXPLAINED {}", missed.len());
    }
    Ok(())
}
