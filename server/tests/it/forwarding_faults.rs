//! Faults of forwarding, on real PostgreSQL, with the real `hookbox` binary and a real HTTP
//! receiver on loopback: kill -9 with attempts in flight, three processes claiming from one
//! database, and the database stopped under the forwarder. Waits are proven by counters (the
//! receiver's, the database's, the processes' JSON logs), never assumed from a sleep.
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

/// What the application has seen.
#[derive(Default)]
struct Seen {
    got: Vec<Received>,
    /// The `webhook-id`s of the requests not answered yet, and when each came.
    in_flight: Vec<(String, Instant)>,
    /// The `webhook-id`s whose requests are held while `hold` is set.
    hold_only: BTreeSet<String>,
    /// The `webhook-id`s of the requests waiting for [`Application::release`].
    held: Vec<String>,
    /// While set, every request is answered 500.
    down: bool,
}

/// The operator's application on loopback: records each request as it arrives, then answers it
/// after `delay` (500 while down, else 200); while held, the requests of the rows named wait for
/// the release first.
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
            seen.in_flight.push((id.clone(), Instant::now()));
            let hold = self.hold.subscribe();
            let held = *hold.borrow() && seen.hold_only.contains(&id);
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
        let mut seen = self.seen.lock().unwrap();
        if let Some(i) = seen.in_flight.iter().position(|(x, _)| *x == id) {
            seen.in_flight.remove(i);
        }
        if seen.down {
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

    /// The requests not answered yet that came less than `within` ago.
    fn in_flight(&self, within: Duration) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.in_flight
            .iter()
            .filter(|(_, came)| came.elapsed() < within)
            .map(|(id, _)| id.clone())
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

    /// Lets the held requests be answered; returns their `webhook-id`s.
    fn release(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
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
        .conn
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

#[tokio::test]
async fn after_kill_9_under_forwarding_load_every_forward_delivery_ends_delivered() {
    let (db, url) = fresh_postgres(&cluster_url()).await;
    // Each answer takes 50 ms, so attempts are in flight; 25 attempts a second, so 200 rows take
    // 8 s and the kill finds some delivered, some pending.
    let application = Application::start(Duration::from_millis(50)).await;
    let config = config(&application.url, 2, "[1, 1, 1]", "rate_limit_per_sec = 25");
    let mut process = start(&url, &config).await;

    let applied = send_events(&[process.addr], 200).await;
    until(
        "forwarding in progress",
        Duration::from_secs(30),
        async || {
            count(
                &db,
                "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
            )
            .await
                >= 10
        },
    )
    .await;
    // Killed while the application has a request in flight: one that came less than 30 ms ago
    // is answered 20 ms after the kill at the earliest.
    let deadline = Instant::now() + Duration::from_secs(30);
    let in_flight = loop {
        let in_flight = application.in_flight(Duration::from_millis(30));
        if !in_flight.is_empty() {
            process.child.kill().expect("kill -9");
            break in_flight;
        }
        assert!(Instant::now() < deadline, "no attempt ever in flight");
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    process.child.wait().expect("reaped");

    let delivered_at_kill = count(
        &db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
    )
    .await;
    let pending_at_kill = count(
        &db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'pending'",
    )
    .await;
    assert!(
        delivered_at_kill > 0 && pending_at_kill > 0,
        "killed while forwarding: {delivered_at_kill} delivered, {pending_at_kill} pending"
    );
    assert_eq!(delivered_at_kill + pending_at_kill, applied as i64);
    // The rows the dead process held a lease on, and when each lease ends.
    let leased: BTreeMap<String, i64> = ints(
        &db,
        &format!(
            "SELECT id, {} FROM forward_deliveries WHERE status = 'pending' AND lease_until IS NOT NULL",
            ms("lease_until")
        ),
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), r[1]))
    .collect();
    for id in &in_flight {
        assert!(leased.contains_key(id), "{id} was in flight, so leased");
    }
    let pending: BTreeSet<String> = ints(
        &db,
        "SELECT id FROM forward_deliveries WHERE status = 'pending'",
    )
    .await
    .into_iter()
    .map(|r| format!("fwd_{}", r[0]))
    .collect();
    let sent_before_restart = application.ids().len();

    let restarted = start(&url, &config).await;
    until(
        "every forward delivery delivered",
        Duration::from_secs(90),
        async || {
            count(
                &db,
                "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
            )
            .await
                == applied as i64
        },
    )
    .await;
    drop(restarted);

    assert_eq!(
        count(&db, "SELECT count(*) FROM forward_deliveries").await,
        applied as i64,
        "one forward delivery per applied event"
    );
    let rows = row_ids(&db).await;
    let ids = application.ids();
    let received: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(
        received, rows,
        "each row's webhook-id arrived, and no other"
    );
    let mut times = BTreeMap::<&str, usize>::new();
    for id in &ids {
        *times.entry(id.as_str()).or_default() += 1;
    }
    let twice: Vec<&str> = times
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| *id)
        .collect();
    for id in &in_flight {
        assert!(
            twice.contains(&id.as_str()),
            "{id} was answered after the kill, so it was sent again"
        );
    }
    for id in &twice {
        assert!(
            leased.contains_key(*id),
            "{id} was sent twice, so it was leased at the kill"
        );
    }
    // One recorded 2xx per row: the answers the dead process never recorded left nothing.
    assert_eq!(
        ints(
            &db,
            "SELECT count(*), count(DISTINCT delivery_id) FROM forward_attempts WHERE status_code = 200"
        )
        .await,
        [vec![applied as i64, applied as i64]]
    );
    // Rows unleased at the kill were taken at once; the leased ones only after their lease.
    let delivered: BTreeMap<String, i64> = ints(
        &db,
        &format!("SELECT id, {} FROM forward_deliveries", ms("delivered_at")),
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), r[1]))
    .collect();
    let first_lease_end = leased.values().min().copied().expect("a leased row");
    for id in &pending {
        let at = delivered[id];
        match leased.get(id) {
            Some(lease_end) => assert!(
                at > *lease_end,
                "{id} was attempted again before its lease ended"
            ),
            None => assert!(
                at < first_lease_end,
                "{id} was pending but not leased, yet waited for the leases to end"
            ),
        }
    }
    println!(
        "killed with {delivered_at_kill} delivered, {pending_at_kill} pending ({} leased, {} in flight); \
         {sent_before_restart} requests before the restart, {} in all; sent twice: {twice:?}; \
         {} pending rows unleased, delivered before the first lease ended",
        leased.len(),
        in_flight.len(),
        ids.len(),
        pending.len() - leased.len(),
    );
}

#[tokio::test]
async fn three_processes_deliver_300_events_with_no_webhook_id_sent_twice() {
    let (db, url) = fresh_postgres(&cluster_url()).await;
    let application = Application::start(Duration::from_millis(5)).await;
    let config = config(&application.url, 2, "[1, 1, 1]", "");
    let mut processes = [
        start(&url, &config).await,
        start(&url, &config).await,
        start(&url, &config).await,
    ];
    let addrs: Vec<SocketAddr> = processes.iter().map(|p| p.addr).collect();

    let applied = send_events(&addrs, 300).await;
    until(
        "300 deliveries delivered",
        Duration::from_secs(60),
        async || {
            count(
                &db,
                "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
            )
            .await
                == 300
        },
    )
    .await;
    // Each lets its attempts in flight finish and exits: a second send of a row would have come.
    for process in &mut processes {
        assert_eq!(process.terminate().await.code(), Some(0));
    }

    assert_eq!(applied, 300);
    assert_eq!(
        count(&db, "SELECT count(*) FROM forward_deliveries").await,
        300
    );
    let ids = application.ids();
    let distinct: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(ids.len(), 300, "300 requests");
    assert_eq!(distinct.len(), 300, "300 distinct webhook-ids");
    assert_eq!(distinct, row_ids(&db).await, "one per row");
    assert_eq!(
        ints(
            &db,
            "SELECT count(*), count(DISTINCT delivery_id), min(status_code)::bigint, max(status_code)::bigint
             FROM forward_attempts"
        )
        .await,
        [vec![300, 300, 200, 200]],
        "one attempt per row, answered 200"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries WHERE attempts <> 1 OR lease_until IS NOT NULL"
        )
        .await,
        0
    );
    let per_process: Vec<usize> = processes
        .iter()
        .map(|p| {
            p.logged("forward attempt")
                .iter()
                .filter(|f| f["result"] == "delivered")
                .count()
        })
        .collect();
    println!("attempts logged per process: {per_process:?}");
}

#[tokio::test]
async fn a_stopped_database_makes_the_forwarder_wait_and_resume_never_marking_delivered() {
    const ROWS: i64 = 6;
    let (cluster, db, url) = Cluster::start("hookbox-forward-outage").await;
    let application = Application::start(Duration::ZERO).await;
    application.set_down(true);
    // Waits of 1 s, enough of them that no row dies during the test; the lease is 5 + 30 s.
    let schedule = format!("[{}]", vec!["1"; 60].join(", "));
    let process = start(&url, &config(&application.url, 5, &schedule, "")).await;

    send_events(&[process.addr], ROWS as usize).await;
    // With the database up, the failed attempts are recorded.
    until(
        "a failed attempt of every row",
        Duration::from_secs(20),
        async || {
            count(
                &db,
                "SELECT count(DISTINCT delivery_id) FROM forward_attempts WHERE status_code = 500",
            )
            .await
                == ROWS
        },
    )
    .await;
    // The next attempts of half the rows wait in the application while the database stops; all
    // the others are recorded first and put off for 10 s (their waits are 1 s), so nothing else
    // is in flight or comes due while the database stops.
    let rows = row_ids(&db).await;
    let to_hold: BTreeSet<String> = rows.iter().take(ROWS as usize / 2).cloned().collect();
    let others: Vec<String> = rows
        .iter()
        .filter(|id| !to_hold.contains(*id))
        .map(|id| id.trim_start_matches("fwd_").to_string())
        .collect();
    let others = others.join(", ");
    application.hold(to_hold);
    until(
        "attempts held, the others recorded and put off",
        Duration::from_secs(20),
        async || {
            db.conn
                .execute_raw(Statement::from_string(
                    DatabaseBackend::Postgres,
                    format!(
                        "UPDATE forward_deliveries SET next_attempt_at = now() + interval '10 seconds'
                         WHERE id IN ({others}) AND lease_until IS NULL"
                    ),
                ))
                .await
                .unwrap();
            let (got, held) = application.got_and_held();
            held > 0
                && count(&db, "SELECT count(*) FROM forward_attempts").await == (got - held) as i64
                && count(
                    &db,
                    &format!(
                        "SELECT count(*) FROM forward_deliveries WHERE id IN ({others}) AND lease_until IS NOT NULL"
                    ),
                )
                .await
                    == 0
        },
    )
    .await;
    let recorded_before = ints(
        &db,
        "SELECT delivery_id, count(*) FROM forward_attempts GROUP BY delivery_id",
    )
    .await;
    let stopping = chrono::Utc::now();
    cluster.run("stop");
    let held = application.release();
    let sent_at_release = application.ids().len();
    let not_recorded = async || -> BTreeSet<String> {
        process
            .logged("forward attempt not recorded")
            .iter()
            .map(|f| format!("fwd_{}", f["delivery"]))
            .collect()
    };
    until(
        "the held attempts not recorded",
        Duration::from_secs(30),
        async || not_recorded().await.len() >= held.len(),
    )
    .await;
    assert_eq!(
        not_recorded().await,
        held.iter().cloned().collect::<BTreeSet<String>>(),
        "the attempts answered while the database was down are the ones not recorded"
    );
    // The forwarder keeps trying to claim, and sends nothing while it cannot.
    let failed_claims = process.logged("forwarder: cannot claim").len();
    until("claims failing", Duration::from_secs(30), async || {
        process.logged("forwarder: cannot claim").len() >= failed_claims + 2
    })
    .await;
    assert_eq!(
        application.ids().len(),
        sent_at_release,
        "nothing sent while the database is down"
    );

    let resuming = chrono::Utc::now();
    cluster.run("resume");
    // It resumes by itself: every row not leased is attempted again and its failure recorded (the
    // application is still down).
    until(
        "attempts recorded after the restart",
        Duration::from_secs(30),
        async || {
            scalar(
                &db,
                "SELECT count(DISTINCT delivery_id) FROM forward_attempts WHERE started_at > $1",
                vec![resuming.into()],
            )
            .await
            .unwrap_or(0)
                >= ROWS - held.len() as i64
        },
    )
    .await;
    assert_eq!(
        scalar(
            &db,
            "SELECT count(*) FROM forward_attempts WHERE started_at >= $1 AND started_at < $2",
            vec![stopping.into(), resuming.into()],
        )
        .await,
        Some(0),
        "nothing attempted while the database was down was recorded"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries WHERE status = 'pending'"
        )
        .await,
        ROWS,
        "none delivered (nor dead) while the application is down"
    );
    // The rows whose attempt went unrecorded keep their lease: not attempted again yet.
    let leases: BTreeMap<String, i64> = ints(
        &db,
        &format!(
            "SELECT id, {} FROM forward_deliveries WHERE lease_until > now()",
            ms("lease_until")
        ),
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), r[1]))
    .collect();
    for id in &held {
        assert!(leases.contains_key(id), "{id} is still leased: {leases:?}");
        assert_eq!(
            application.ids().iter().filter(|x| *x == id).count(),
            ids_before(&recorded_before, id) + 1,
            "{id} not sent again within its lease"
        );
    }

    application.set_down(false);
    until("every row delivered", Duration::from_secs(90), async || {
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        )
        .await
            == ROWS
    })
    .await;

    // Every request was recorded as an attempt, but the ones answered while the database was down.
    let recorded: BTreeMap<String, (i64, i64)> = ints(
        &db,
        "SELECT d.id, d.attempts::bigint, count(a.attempt) FROM forward_deliveries d
         JOIN forward_attempts a ON a.delivery_id = d.id GROUP BY d.id, d.attempts",
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), (r[1], r[2])))
    .collect();
    let ids = application.ids();
    assert_eq!(recorded.len() as i64, ROWS);
    for (id, (attempts, rows)) in &recorded {
        assert_eq!(
            attempts, rows,
            "{id}: its attempts column counts its attempts"
        );
        let sent = ids.iter().filter(|x| *x == id).count() as i64;
        let lost = i64::from(held.contains(id));
        assert_eq!(sent, rows + lost, "{id}: {sent} requests, {rows} recorded");
    }
    assert_eq!(
        ints(
            &db,
            "SELECT count(*), count(DISTINCT delivery_id) FROM forward_attempts WHERE status_code = 200"
        )
        .await,
        [vec![ROWS, ROWS]],
        "one 2xx per row, its last attempt"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries d WHERE last_status_code = 200
               AND attempts = (SELECT max(attempt) FROM forward_attempts a
                               WHERE a.delivery_id = d.id AND a.status_code = 200)"
        )
        .await,
        ROWS
    );
    let delivered_at: BTreeMap<String, i64> = ints(
        &db,
        &format!("SELECT id, {} FROM forward_deliveries", ms("delivered_at")),
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), r[1]))
    .collect();
    for id in &held {
        assert!(
            delivered_at[id] > leases[id],
            "{id} was sent again only after its lease"
        );
    }
    println!(
        "held while the database stopped: {held:?}; {} requests in all",
        ids.len()
    );
}

/// How many attempts of the row `id` were recorded before the database stopped.
fn ids_before(recorded: &[Vec<i64>], id: &str) -> usize {
    recorded
        .iter()
        .find(|r| format!("fwd_{}", r[0]) == id)
        .map_or(0, |r| r[1] as usize)
}
