//! The forwarder against a real HTTP receiver on loopback: what the application receives, retries
//! on the schedule with the same `webhook-id`, `Retry-After`, dead deliveries, and per-object
//! order with superseding while the destination fails.
#![allow(clippy::unwrap_used)]

use crate::support::*;
use axum::http::{HeaderMap, StatusCode};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

/// Answers to give, in order: (status, Retry-After seconds).
pub(crate) type Script = Vec<(u16, Option<u64>)>;

/// The operator's application: records every request and answers from a script (then 200).
#[derive(Clone, Default)]
pub(crate) struct Receiver {
    pub(crate) got: Arc<Mutex<Vec<Received>>>,
    pub(crate) script: Arc<Mutex<Script>>,
    /// While set, every request is answered 500 (the application is down).
    pub(crate) down: Arc<Mutex<bool>>,
    /// How long each request waits before it is answered.
    pub(crate) delay: Arc<Mutex<Duration>>,
}

impl Receiver {
    pub(crate) async fn start(script: Script) -> (Receiver, String) {
        let receiver = Receiver {
            script: Arc::new(Mutex::new(script)),
            ..Receiver::default()
        };
        let state = receiver.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: String| {
                let state = state.clone();
                async move {
                    state.got.lock().unwrap().push(Received { headers, body });
                    let delay = *state.delay.lock().unwrap();
                    tokio::time::sleep(delay).await;
                    let scripted = {
                        let mut script = state.script.lock().unwrap();
                        (!script.is_empty()).then(|| script.remove(0))
                    };
                    let (status, retry_after) = match scripted {
                        Some(answer) => answer,
                        None if *state.down.lock().unwrap() => (500, None),
                        None => (200, None),
                    };
                    let mut response = axum::response::IntoResponse::into_response((
                        StatusCode::from_u16(status).unwrap(),
                        "the application's answer",
                    ));
                    if let Some(secs) = retry_after {
                        response
                            .headers_mut()
                            .insert("retry-after", secs.to_string().parse().unwrap());
                    }
                    response
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (receiver, url)
    }

    pub(crate) fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Waits (at most 20 s) until the receiver has got `n` requests.
    pub(crate) async fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.got();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "only {} of {n} requests arrived",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub(crate) fn config(url: &str, schedule: &str) -> app::config::Config {
    config_with(url, schedule, "")
}

pub(crate) fn config_with(url: &str, schedule: &str, extra: &str) -> app::config::Config {
    let text = format!(
        r#"
[[destinations]]
name = "orders-app"
url = "{url}"
secret_env = "DESTINATION_SECRET"
timeout_secs = 5
retry_schedule_secs = {schedule}
{extra}

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
forward = ["orders-app"]
"#
    );
    app::config::Config::parse(&text, Path::new("forwarder.toml"), &test_env).expect("valid")
}

/// Waits (at most 20 s) until `sql` counts `n`.
pub(crate) async fn wait_for_count(db: &app::db::Db, sql: &str, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = count(db, sql).await;
        if found == n {
            return;
        }
        assert!(Instant::now() < deadline, "{sql}: {found}, not {n}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) fn header<'a>(received: &'a Received, name: &str) -> &'a str {
    received
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

both_backends!(a_forwarded_event_arrives_exactly_as_sent_and_signed_for_its_destination);
async fn a_forwarded_event_arrives_exactly_as_sent_and_signed_for_its_destination(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let app = spawn_app_with(backend, config(&url, "[5]")).await;
    let snapshot = r#"{"total": 12345678901234567890, "rate": 0.1}"#;

    let answer = app.send("shop", &event("e1", "order-1", 7, snapshot)).await;
    let got = receiver.wait_for(1).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;

    assert_eq!(answer.outcome(), "applied");
    let request = &got[0];
    let body: serde_json::Value = serde_json::from_str(&request.body).expect("JSON");
    assert_eq!(body["type"], "object.updated");
    assert_eq!(body["source"], "shop");
    assert_eq!(body["event_id"], "e1");
    assert_eq!(body["object_id"], "order-1");
    assert_eq!(body["revision"], 7);
    assert!(
        request
            .body
            .contains(r#""snapshot":{"total": 12345678901234567890, "rate": 0.1}"#),
        "the snapshot is the bytes sent: {}",
        request.body
    );
    assert_eq!(header(request, "content-type"), "application/json");
    // The Standard Webhooks project's own library verifies it with the destination's secret,
    // and refuses it once a byte of the body changed.
    let verifier = standardwebhooks::Webhook::new(DESTINATION_SECRET).expect("secret");
    verifier
        .verify(request.body.as_bytes(), &request.headers)
        .expect("the application's library verifies the request");
    let tampered = request.body.replace("0.1", "0.2");
    assert!(
        verifier
            .verify(tampered.as_bytes(), &request.headers)
            .is_err()
    );
    let id = scalar(&app.db, "SELECT id FROM forward_deliveries", vec![])
        .await
        .expect("a row");
    assert_eq!(header(request, "webhook-id"), format!("fwd_{id}"));
    assert_eq!(
        texts(
            &app.db,
            "SELECT CAST(attempts AS TEXT), CAST(last_status_code AS TEXT) FROM forward_deliveries",
            vec![]
        )
        .await,
        [vec![Some("1".into()), Some("200".into())]]
    );
    assert_eq!(got.len(), 1, "sent once");
}

both_backends!(
    a_failed_attempt_is_retried_with_the_same_webhook_id_after_the_wait_or_a_larger_retry_after
);
async fn a_failed_attempt_is_retried_with_the_same_webhook_id_after_the_wait_or_a_larger_retry_after(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(vec![(503, Some(2)), (500, None)]).await;
    let app = spawn_app_with(backend, config(&url, "[0, 0, 0]")).await;

    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    let got = receiver.wait_for(3).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered' AND attempts = 3",
        1,
    )
    .await;

    let ids: Vec<&str> = got.iter().map(|r| header(r, "webhook-id")).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    let attempts = texts(
        &app.db,
        "SELECT CAST(attempt AS TEXT), CAST(status_code AS TEXT), response_excerpt FROM forward_attempts ORDER BY attempt",
        vec![],
    )
    .await;
    let codes: Vec<Option<String>> = attempts.iter().map(|a| a[1].clone()).collect();
    assert_eq!(
        codes,
        [Some("503".into()), Some("500".into()), Some("200".into())]
    );
    assert_eq!(attempts[0][2].as_deref(), Some("the application's answer"));
    // The 503's Retry-After (2 s) outweighed the schedule's 0 s.
    let gap = scalar(
        &app.db,
        match backend {
            Backend::Postgres => {
                "SELECT CAST(EXTRACT(EPOCH FROM (b.started_at - a.started_at)) * 1000 AS bigint)
                 FROM forward_attempts a JOIN forward_attempts b ON b.delivery_id = a.delivery_id
                 WHERE a.attempt = 1 AND b.attempt = 2"
            }
            Backend::Sqlite => {
                "SELECT CAST((julianday(b.started_at) - julianday(a.started_at)) * 86400000 AS INTEGER)
                 FROM forward_attempts a JOIN forward_attempts b ON b.delivery_id = a.delivery_id
                 WHERE a.attempt = 1 AND b.attempt = 2"
            }
        },
        vec![],
    )
    .await
    .expect("two attempts");
    assert!(gap >= 1900, "{gap} ms between the 503 and the next attempt");
}

both_backends!(after_the_last_wait_of_the_schedule_a_delivery_is_dead);
async fn after_the_last_wait_of_the_schedule_a_delivery_is_dead(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.down.lock().unwrap() = true;
    let app = spawn_app_with(backend, config(&url, "[0]")).await;

    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'dead' AND attempts = 2",
        1,
    )
    .await;
    // Nothing more is attempted.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    assert_eq!(receiver.got().len(), 2);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM forward_attempts").await,
        2
    );
}

both_backends!(
    while_the_destination_fails_older_revisions_are_superseded_and_never_sent_after_a_newer_one
);
async fn while_the_destination_fails_older_revisions_are_superseded_and_never_sent_after_a_newer_one(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.down.lock().unwrap() = true;
    let app = spawn_app_with(backend, config(&url, "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1]")).await;

    app.send("shop", &event("e1", "order-1", 1, r#"{"v":1}"#))
        .await;
    receiver.wait_for(1).await;
    app.send("shop", &event("e2", "order-1", 2, r#"{"v":2}"#))
        .await;
    app.send("shop", &event("e3", "order-1", 3, r#"{"v":3}"#))
        .await;
    // The application comes back only once revision 3 has been tried (and failed).
    let revision_of = |r: &Received| {
        serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["revision"]
            .as_i64()
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !receiver.got().iter().any(|r| revision_of(r) == 3) {
        assert!(Instant::now() < deadline, "revision 3 was never tried");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    *receiver.down.lock().unwrap() = false;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;

    let revisions: Vec<i64> = receiver.got().iter().map(revision_of).collect();
    assert!(
        revisions.windows(2).all(|w| w[0] <= w[1]),
        "never a step back: {revisions:?}"
    );
    assert_eq!(revisions.last(), Some(&3), "{revisions:?}");
    // The older revisions are superseded when they next come due (a claim supersedes them, never
    // sends them): revision 3 may be delivered before that.
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'pending'",
        0,
    )
    .await;
    assert_eq!(
        receiver.got().iter().map(revision_of).next_back(),
        Some(3),
        "nothing was sent after revision 3"
    );
    assert_eq!(
        texts(
            &app.db,
            "SELECT event_id, status FROM forward_deliveries ORDER BY id",
            vec![]
        )
        .await,
        [
            vec![Some("e1".into()), Some("superseded".into())],
            vec![Some("e2".into()), Some("superseded".into())],
            vec![Some("e3".into()), Some("delivered".into())],
        ]
    );
}

both_backends!(a_destinations_rate_limit_spreads_its_attempts);
async fn a_destinations_rate_limit_spreads_its_attempts(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let app = spawn_app_with(backend, config_with(&url, "[5]", "rate_limit_per_sec = 2")).await;

    for i in 1..=6 {
        app.send(
            "shop",
            &event(&format!("e{i}"), &format!("order-{i}"), 1, "{}"),
        )
        .await;
    }
    receiver.wait_for(6).await;
    wait_for_count(&app.db, "SELECT count(*) FROM forward_attempts", 6).await;

    // A burst of 2, then 2 a second: the sixth attempt starts at least 1.5 s after the first.
    let span = scalar(
        &app.db,
        match backend {
            Backend::Postgres => {
                "SELECT CAST(EXTRACT(EPOCH FROM (max(started_at) - min(started_at))) * 1000 AS bigint)
                 FROM forward_attempts"
            }
            Backend::Sqlite => {
                "SELECT CAST((julianday(max(started_at)) - julianday(min(started_at))) * 86400000 AS INTEGER)
                 FROM forward_attempts"
            }
        },
        vec![],
    )
    .await
    .expect("attempts");
    assert!(span >= 1500, "six attempts within {span} ms");
}

both_backends!(the_metrics_show_each_destinations_backlog_and_its_oldest_age);
async fn the_metrics_show_each_destinations_backlog_and_its_oldest_age(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.down.lock().unwrap() = true;
    // Long waits: what failed once stays pending while the metrics are read.
    let app = spawn_app_with(backend, config(&url, "[3600]")).await;
    let metrics = || async {
        app.client
            .get(app.url("/metrics"))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text")
    };

    let before = metrics().await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    app.send("shop", &event("e2", "order-2", 1, "{}")).await;
    receiver.wait_for(2).await;
    wait_for_count(&app.db, "SELECT count(*) FROM forward_attempts", 2).await;
    // The attempt counter is counted just after the attempt's row commits.
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        let text = metrics().await;
        if text.contains(r#"result="failed"} 2"#) || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    assert!(
        before.contains(r#"hookbox_forward_pending{destination="orders-app"} 0"#),
        "{before}"
    );
    assert!(
        after.contains(r#"hookbox_forward_pending{destination="orders-app"} 2"#),
        "{after}"
    );
    assert!(
        after.contains(r#"hookbox_forward_oldest_pending_seconds{destination="orders-app"}"#),
        "{after}"
    );
    assert!(
        after.contains(
            r#"hookbox_forward_attempts_total{destination="orders-app",result="failed"} 2"#
        ),
        "{after}"
    );
}

/// A source `shop` forwarding to `orders-app` at `url` with the given attempt timeout.
fn config_timeout(url: &str, timeout_secs: u64, schedule: &str) -> app::config::Config {
    let text = format!(
        r#"
[[destinations]]
name = "orders-app"
url = "{url}"
secret_env = "DESTINATION_SECRET"
timeout_secs = {timeout_secs}
retry_schedule_secs = {schedule}

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
forward = ["orders-app"]
"#
    );
    app::config::Config::parse(&text, Path::new("forwarder.toml"), &test_env).expect("valid")
}

both_backends!(an_attempt_not_answered_within_the_timeout_fails_and_is_retried);
async fn an_attempt_not_answered_within_the_timeout_fails_and_is_retried(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.delay.lock().unwrap() = Duration::from_secs(3);
    let app = spawn_app_with(backend, config_timeout(&url, 1, "[1]")).await;

    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    wait_for_count(&app.db, "SELECT count(*) FROM forward_attempts", 1).await;
    *receiver.delay.lock().unwrap() = Duration::ZERO;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;

    let attempts = texts(
        &app.db,
        "SELECT CAST(attempt AS TEXT), CAST(status_code AS TEXT), error, CAST(duration_ms AS TEXT)
         FROM forward_attempts ORDER BY attempt",
        vec![],
    )
    .await;
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0][1], None, "no answer came");
    assert_eq!(attempts[0][2].as_deref(), Some("no answer within 1 s"));
    let waited: i64 = attempts[0][3].as_deref().unwrap().parse().unwrap();
    assert!(
        (1000..3000).contains(&waited),
        "the attempt gave up after its timeout, not the answer: {waited} ms"
    );
    assert_eq!(attempts[1][1].as_deref(), Some("200"));
    let got = receiver.got();
    assert_eq!(got.len(), 2);
    assert_eq!(header(&got[0], "webhook-id"), header(&got[1], "webhook-id"));
}

/// A destination that accepts connections and never answers.
async fn silent_destination() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (url, task)
}

both_backends!(ingest_answers_at_once_while_the_destination_never_answers);
async fn ingest_answers_at_once_while_the_destination_never_answers(backend: Backend) {
    let (url, _destination) = silent_destination().await;
    let app = spawn_app_with(backend, config_timeout(&url, 30, "[60]")).await;

    let mut slowest = Duration::ZERO;
    for n in 0..60 {
        let started = Instant::now();
        let answer = app
            .send(
                "shop",
                &event(&format!("e{n}"), &format!("order-{n}"), 1, "{}"),
            )
            .await;
        slowest = slowest.max(started.elapsed());
        assert_eq!(answer.status, 200);
        assert_eq!(answer.outcome(), "applied");
    }

    // Every delivery answered while the forwarder's attempts hang: ingest never waits for a
    // destination (its 30 s timeout would show in the answers).
    assert!(
        slowest < Duration::from_secs(5),
        "the slowest answer took {slowest:?}"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE status = 'pending'"
        )
        .await,
        60
    );
    // Attempts are in flight (claimed: more than half a batch, at most a batch), and none has
    // finished.
    let deadline = Instant::now() + Duration::from_secs(20);
    let in_flight = loop {
        let claimed = count(
            &app.db,
            "SELECT count(*) FROM forward_deliveries WHERE lease_until IS NOT NULL",
        )
        .await;
        if claimed > 16 || Instant::now() > deadline {
            break claimed;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        (17..=32).contains(&in_flight),
        "{in_flight} attempts in flight"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM forward_attempts").await,
        0
    );
}

both_backends!(a_replay_that_applies_is_forwarded_like_a_first_delivery);
async fn a_replay_that_applies_is_forwarded_like_a_first_delivery(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    // The source first reads the revision from the wrong place, so the delivery is invalid.
    let text = format!(
        r#"
[[destinations]]
name = "orders-app"
url = "{url}"
secret_env = "DESTINATION_SECRET"
retry_schedule_secs = [1]

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
revision = "/rev"
forward = ["orders-app"]
"#
    );
    let wrong_config =
        app::config::Config::parse(&text, Path::new("wrong.toml"), &test_env).expect("valid");
    let app = spawn_app_with(backend, wrong_config).await;
    let answer = app
        .send("shop", &event("e1", "order-1", 4, r#"{"v":4}"#))
        .await;
    assert_eq!(answer.outcome(), "invalid");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM forward_deliveries").await,
        0
    );

    // Replayed under the corrected mapping it applies, and is forwarded.
    let original = scalar(&app.db, "SELECT id FROM webhook_events", vec![])
        .await
        .unwrap();
    let stored = app::db::events::stored_delivery(&app.db, original)
        .await
        .unwrap()
        .unwrap();
    let recorded =
        app::ingest::replay::replay(&app.db, &config(&url, "[1]"), &stored, "olga", false)
            .await
            .unwrap();
    assert_eq!(recorded.outcome.name(), "applied");
    let got = receiver.wait_for(1).await;

    let body: serde_json::Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(body["event_id"], "e1");
    assert_eq!(body["revision"], 4);
    assert_eq!(
        texts(
            &app.db,
            "SELECT CAST(archive_id AS TEXT) FROM forward_deliveries",
            vec![]
        )
        .await,
        [vec![Some(recorded.archive_id.to_string())]]
    );
}

#[tokio::test]
async fn on_postgresql_a_commit_in_one_process_wakes_the_forwarder_of_another() {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let (db, _) = fresh_postgres(&cluster_url()).await;
    // The forwarder polls every ten minutes: only the notification can wake it in time.
    let forwarding = spawn_app_on_with_state(db.clone(), config(&url, "[1]"), |state| {
        let mut settings = (*state.settings).clone();
        settings.forward_poll = Duration::from_secs(600);
        state.settings = Arc::new(settings);
    })
    .await;
    // The other process ingests and forwards nothing itself (no destination of its own).
    let mut ingest_only = config(&url, "[1]");
    ingest_only.destinations.clear();
    let ingesting = spawn_app_on_with_state(db.clone(), ingest_only, |_| {}).await;
    // The forwarding process listens before anything is sent.
    wait_for_count(
        &db,
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND query = 'LISTEN \"hookbox_forward\"'",
        1,
    )
    .await;

    let answer = ingesting
        .send("shop", &event("e1", "order-1", 1, "{}"))
        .await;
    assert_eq!(answer.outcome(), "applied");
    let got = receiver.wait_for(1).await;

    assert!(header(&got[0], "webhook-id").starts_with("fwd_"));
    wait_for_count(
        &forwarding.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        1,
    )
    .await;
}

/// A connection of the test's own to the app's database (the server closes its pools when it
/// stops).
async fn own_connection(app: &TestApp) -> app::db::Db {
    let url = &app.test_db.as_ref().expect("a test database").url;
    app::db::Db::connect(url).await.expect("connect")
}

/// Waits until nothing listens at `addr`: the server stopped accepting.
async fn until_refused(addr: std::net::SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(addr).is_ok() {
        assert!(Instant::now() < deadline, "still accepting");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

both_backends!(at_shutdown_an_attempt_in_flight_finishes_and_is_recorded);
async fn at_shutdown_an_attempt_in_flight_finishes_and_is_recorded(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.delay.lock().unwrap() = Duration::from_secs(2);
    let mut app = spawn_app_with(backend, config_timeout(&url, 10, "[60]")).await;
    let db = own_connection(&app).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    receiver.wait_for(1).await;

    app.shut_down();
    until_refused(app.addr).await;
    // Shutdown is under way and the attempt still waits for its answer.
    assert_eq!(count(&db, "SELECT count(*) FROM forward_attempts").await, 0);

    wait_for_count(
        &db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered' AND lease_until IS NULL",
        1,
    )
    .await;
    assert_eq!(
        texts(
            &db,
            "SELECT CAST(status_code AS TEXT), error FROM forward_attempts",
            vec![]
        )
        .await,
        [vec![Some("200".into()), None]]
    );
    assert_eq!(receiver.got().len(), 1);
}

both_backends!(an_attempt_longer_than_the_grace_period_is_abandoned_and_its_delivery_stays_due);
async fn an_attempt_longer_than_the_grace_period_is_abandoned_and_its_delivery_stays_due(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.delay.lock().unwrap() = Duration::from_secs(30);
    let mut app = spawn_app_with_state(backend, config_timeout(&url, 60, "[60]"), |state| {
        let mut settings = (*state.settings).clone();
        settings.shutdown_grace = Duration::from_millis(300);
        state.settings = Arc::new(settings);
    })
    .await;
    let db = own_connection(&app).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    receiver.wait_for(1).await;
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries WHERE lease_until IS NOT NULL"
        )
        .await,
        1,
        "claimed"
    );

    app.shut_down();

    // The claim is given up: the delivery is due again at once, for another process or the
    // next start, and nothing was recorded as answered.
    wait_for_count(
        &db,
        "SELECT count(*) FROM forward_deliveries WHERE lease_until IS NULL",
        1,
    )
    .await;
    assert_eq!(
        texts(
            &db,
            "SELECT status, CAST(attempts AS TEXT) FROM forward_deliveries",
            vec![]
        )
        .await,
        [vec![Some("pending".into()), Some("0".into())]]
    );
    assert_eq!(count(&db, "SELECT count(*) FROM forward_attempts").await, 0);
}

both_backends!(a_retry_after_of_any_size_is_recorded_and_cut_to_a_day);
async fn a_retry_after_of_any_size_is_recorded_and_cut_to_a_day(backend: Backend) {
    // u64::MAX seconds: a wait no clock can hold (it used to panic the attempt, unrecorded).
    let (receiver, url) = Receiver::start(vec![(503, Some(u64::MAX))]).await;
    let app = spawn_app_with(backend, config(&url, "[0, 0, 0]")).await;

    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    receiver.wait_for(1).await;
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_attempts WHERE status_code = 503",
        1,
    )
    .await;
    let wait = scalar(
        &app.db,
        match backend {
            Backend::Postgres => {
                "SELECT CAST(EXTRACT(EPOCH FROM (d.next_attempt_at - a.started_at)) AS bigint)
                 FROM forward_deliveries d JOIN forward_attempts a ON a.delivery_id = d.id
                 WHERE d.status = 'pending' AND d.attempts = 1"
            }
            Backend::Sqlite => {
                "SELECT CAST((julianday(d.next_attempt_at) - julianday(a.started_at)) * 86400 AS INTEGER)
                 FROM forward_deliveries d JOIN forward_attempts a ON a.delivery_id = d.id
                 WHERE d.status = 'pending' AND d.attempts = 1"
            }
        },
        vec![],
    )
    .await
    .expect("the delivery waits, pending, after one recorded attempt");
    let day = i64::try_from(app::forward::MAX_RETRY_AFTER_SECS).unwrap();
    assert!(
        (day - 60..=day + 60).contains(&wait),
        "waits {wait} s, not a day"
    );
}
