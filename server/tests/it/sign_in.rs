//! Sign-in under attack: what an unauthenticated caller can make hookbox spend is bounded, the
//! throttle keys on the real client behind a trusted proxy and never locks a user out from
//! another client, one client cannot take every password check, failed sign-ins are bounded
//! counts instead of a row each, the dashboard's writes on SQLite queue for the single writer
//! (bounded) instead of taking its lock from the read pool, and the dashboard cannot starve
//! deliveries of database connections.

use crate::support::*;
use app::auth;
use app::model::Role;
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const PASSWORD: &str = "a long enough password";

/// What a sign-in answered.
#[derive(Debug, Clone)]
struct SignedIn {
    status: u16,
    text: String,
    /// `Retry-After`, in seconds.
    retry_after: Option<u64>,
    /// Whether it set a session cookie.
    session: bool,
}

impl SignedIn {
    fn succeeded(&self) -> bool {
        self.session && self.status < 400
    }

    /// 429 from the throttle (not for want of a password check slot).
    fn throttled(&self) -> bool {
        self.status == 429 && self.text.contains("Too many failed sign-ins")
    }

    /// 429 because no password check slot was free.
    fn busy(&self) -> bool {
        self.status == 429 && self.text.contains("at once")
    }
}

/// Posts the sign-in form as a browser does, from `forwarded_for` when given (behind a trusted
/// proxy: the client's address).
async fn sign_in_as(
    app: &TestApp,
    name: &str,
    password: &str,
    forwarded_for: Option<&str>,
) -> SignedIn {
    let mut request = app
        .client
        .post(app.url("/api/login"))
        .header("Accept", "application/json")
        .form(&[("name", name), ("password", password), ("next", "/")]);
    if let Some(address) = forwarded_for {
        request = request.header("X-Forwarded-For", address);
    }
    let response = request.send().await.expect("sign-in answers");
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect::<Vec<_>>()
    };
    let retry_after = header("retry-after").first().and_then(|v| v.parse().ok());
    let session = header("set-cookie")
        .iter()
        .any(|c| c.starts_with("hookbox_session=") && !c.starts_with("hookbox_session=;"));
    SignedIn {
        status,
        text: response.text().await.unwrap_or_default(),
        retry_after,
        session,
    }
}

/// Posts the sign-in form as a browser does; returns the status and the answer's text.
async fn attempt(
    app: &TestApp,
    name: &str,
    password: &str,
    forwarded_for: Option<&str>,
) -> (u16, String) {
    let answer = sign_in_as(app, name, password, forwarded_for).await;
    (answer.status, answer.text)
}

/// The server on a fresh database behind a trusted proxy on 127.0.0.1, so each test client
/// names its address in `X-Forwarded-For`.
async fn behind_a_proxy(backend: Backend) -> TestApp {
    let trusted_proxies = app::config::TrustedProxies::parse("127.0.0.1/32").expect("valid");
    spawn_app_with_state(backend, test_config(), |state| {
        state.settings = Arc::new(app::config::Settings {
            trusted_proxies,
            ..Default::default()
        });
    })
    .await
}

/// The sum of a column of `sign_in_failures` over the rows `condition` selects, once this
/// process's refused attempts counted in memory are written.
async fn recorded(db: &app::db::Db, column: &str, condition: &str) -> i64 {
    auth::write_sign_in_records(db)
        .await
        .expect("write the sign-in records");
    count(
        db,
        &format!(
            "SELECT CAST(COALESCE(SUM({column}), 0) AS BIGINT) FROM sign_in_failures {condition}"
        ),
    )
    .await
}

/// A figure of this process's memory from /proc (kB): `VmRSS` now, `VmHWM` its peak.
fn memory_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status")
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .expect("a memory figure")
}

#[tokio::test]
async fn two_hundred_parallel_failed_sign_ins_keep_memory_bounded_and_deliveries_answered() {
    let app = spawn_app(Backend::Postgres).await;
    auth::add_user(&app.db, "olga", PASSWORD, Role::Operator)
        .await
        .expect("add user");
    // Warm up (the first hash, the pools), then measure from here.
    attempt(&app, "olga", "wrong password", None).await;
    let before = memory_kb("VmRSS");

    let burst: Vec<_> = (0..200)
        .map(|i| {
            let app = app.clone_handle();
            tokio::spawn(async move {
                attempt(
                    &app,
                    if i % 2 == 0 { "olga" } else { "nobody" },
                    "wrong password",
                    None,
                )
                .await
                .0
            })
        })
        .collect();
    let started = Instant::now();
    let delivery = app
        .send("shop", &event("during-burst", "o1", 1, "{}"))
        .await;
    let delivery_took = started.elapsed();
    let mut statuses = Vec::new();
    for task in burst {
        statuses.push(task.await.expect("task"));
    }
    let peak_growth_mb = memory_kb("VmHWM").saturating_sub(before) / 1024;
    eprintln!(
        "peak memory growth over the burst: {peak_growth_mb} MB; a delivery took {delivery_took:?}"
    );

    assert_eq!(delivery.outcome(), "applied", "{:?}", delivery.body);
    assert!(delivery_took < Duration::from_secs(1), "{delivery_took:?}");
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "only refusals, never a 5xx: {statuses:?}"
    );
    assert!(statuses.contains(&429), "the excess is refused at once");
    // Each Argon2 check holds ~19 MiB; unbounded, 200 of them took 3.3 GB.
    assert!(peak_growth_mb < 150, "grew by {peak_growth_mb} MB");
    // Every password checked was counted, before it was checked: never more than the throttle.
    let failed = recorded(&app.db, "failed", "WHERE name = 'olga'").await;
    assert!(
        failed <= auth::MAX_FAILURES_PER_USER + 1,
        "{failed} olga failures counted"
    );
}

#[tokio::test]
async fn parallel_wrong_passwords_never_check_more_than_the_throttle_allows() {
    let app = spawn_app(Backend::Postgres).await;
    auth::add_user(&app.db, "olga", PASSWORD, Role::Operator)
        .await
        .expect("add user");

    // Forty at once from one client, each retried while the client is busy, until it gets its
    // answer.
    let busy = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let app = app.clone_handle();
            let busy = busy.clone();
            tokio::spawn(async move {
                loop {
                    let answer = sign_in_as(&app, "olga", "wrong password", None).await;
                    if !answer.busy() {
                        return answer;
                    }
                    busy.fetch_add(1, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("task"));
    }

    let wrong = answers.iter().filter(|a| a.status == 401).count() as i64;
    let throttled = answers.iter().filter(|a| a.throttled()).count() as i64;
    assert_eq!(wrong + throttled, 40, "{answers:?}");
    assert!(
        (1..=auth::MAX_FAILURES_PER_USER).contains(&wrong),
        "{answers:?}"
    );
    assert!(
        answers
            .iter()
            .filter(|a| a.throttled())
            .all(|a| a.retry_after.is_some())
    );
    // Every checked password is one failure, every refusal counted: in bounded rows, no audit row.
    assert_eq!(recorded(&app.db, "failed", "").await, wrong);
    assert_eq!(recorded(&app.db, "throttled", "").await, throttled);
    assert_eq!(
        recorded(&app.db, "busy", "").await,
        busy.load(Ordering::SeqCst) as i64
    );
    assert_eq!(count(&app.db, "SELECT count(*) FROM audit_log").await, 0);
    // And the right password from the same client waits out the delay too.
    let right = sign_in_as(&app, "olga", PASSWORD, None).await;
    assert!(right.throttled(), "{right:?}");
}

both_backends!(a_user_name_that_cannot_exist_is_refused_without_touching_the_audit_log);
async fn a_user_name_that_cannot_exist_is_refused_without_touching_the_audit_log(backend: Backend) {
    let app = spawn_app(backend).await;
    for name in [
        "x".repeat(5_000),
        "olga; DROP TABLE users".into(),
        "名前".into(),
        String::new(),
    ] {
        let (status, _) = attempt(&app, &name, "wrong password", None).await;
        assert_eq!(status, 401, "{backend:?} {:.20}", name);
    }
    let (status, _) = attempt(&app, "olga", &"p".repeat(100_000), None).await;
    assert_eq!(status, 401, "{backend:?}: an absurd password");

    assert_eq!(
        count(&app.db, "SELECT count(*) FROM audit_log").await,
        0,
        "{backend:?}: nothing recorded"
    );
    assert_eq!(
        recorded(&app.db, "failed + throttled + busy", "").await,
        0,
        "{backend:?}: nothing counted"
    );
}

#[tokio::test]
async fn behind_a_trusted_proxy_the_throttle_and_audit_log_use_the_forwarded_client() {
    let trusted_proxies = app::config::TrustedProxies::parse("127.0.0.1/32").expect("valid");
    let app = spawn_app_with_state(Backend::Postgres, test_config(), |state| {
        state.settings = std::sync::Arc::new(app::config::Settings {
            trusted_proxies,
            ..Default::default()
        });
    })
    .await;

    // One client behind the balancer fails 20 times under different names...
    for i in 0..auth::MAX_FAILURES_PER_ADDRESS {
        let (status, _) = attempt(
            &app,
            &format!("user{i}"),
            "wrong",
            Some("198.51.100.1, 203.0.113.7"),
        )
        .await;
        assert_eq!(status, 401, "attempt {i}");
    }
    let throttled = attempt(&app, "someone", "wrong", Some("203.0.113.7"))
        .await
        .0;
    // ...and another client behind the same balancer is not locked out with it.
    let other = attempt(&app, "someone", "wrong", Some("203.0.113.8"))
        .await
        .0;

    assert_eq!(throttled, 429);
    assert_eq!(other, 401);
    auth::write_sign_in_records(&app.db).await.expect("write");
    assert_eq!(
        texts(
            &app.db,
            "SELECT DISTINCT client FROM sign_in_failures ORDER BY client",
            vec![]
        )
        .await,
        [
            vec![Some("203.0.113.7".to_string())],
            vec![Some("203.0.113.8".to_string())]
        ],
        "the right-most untrusted address, never the balancer's or a forged one"
    );
}

#[tokio::test]
async fn a_peer_that_is_not_a_trusted_proxy_cannot_choose_its_address() {
    let app = spawn_app(Backend::Sqlite).await;

    for i in 0..3 {
        attempt(&app, "olga", "wrong", Some(&format!("203.0.113.{i}"))).await;
    }

    auth::write_sign_in_records(&app.db).await.expect("write");
    assert_eq!(
        texts(
            &app.db,
            "SELECT DISTINCT client FROM sign_in_failures",
            vec![]
        )
        .await,
        [vec![Some("127.0.0.1".to_string())]]
    );
}

both_backends!(audit_rows_older_than_the_audit_retention_are_purged);
async fn audit_rows_older_than_the_audit_retention_are_purged(backend: Backend) {
    let db = test_db(backend).await;
    let at = |days: i64| chrono::Utc::now() - chrono::Duration::days(days);
    for (actor, days) in [("old", 400), ("older", 800), ("recent", 10)] {
        auth::audit_on(
            &db.db.conn,
            auth::AuditEntry {
                actor,
                action: app::model::AuditAction::SignIn,
                target: None,
                outcome: "failed",
                detail: None,
                address: Some("127.0.0.1"),
            },
        )
        .await
        .expect("audit");
        db.db
            .conn
            .execute_raw(Statement::from_sql_and_values(
                db.db.backend(),
                "UPDATE audit_log SET at = $1 WHERE actor = $2",
                vec![at(days).into(), actor.into()],
            ))
            .await
            .expect("age it");
    }

    let purged = app::maintenance::purge::purge_audit(&db.db, at(365), 1)
        .await
        .expect("purge");

    assert_eq!(purged, 2, "{backend:?}");
    assert_eq!(
        texts(&db.db, "SELECT actor FROM audit_log", vec![]).await,
        [vec![Some("recent".to_string())]],
        "{backend:?}"
    );
}

#[tokio::test]
async fn the_dashboards_connections_cannot_starve_deliveries_and_give_up_on_locks() {
    let app = spawn_app(Backend::Postgres).await;
    assert_eq!(
        app.send("shop", &event("e1", "o1", 1, "{}"))
            .await
            .outcome(),
        "applied"
    );

    // Every dashboard connection taken, as a flood of sign-ins or heavy pages would.
    let max = app
        .db
        .conn
        .get_postgres_connection_pool()
        .options()
        .get_max_connections();
    let mut held = Vec::new();
    for _ in 0..max {
        held.push(app.db.conn.begin().await.expect("a dashboard connection"));
    }
    let started = Instant::now();
    let delivery = app.send("shop", &event("e2", "o1", 2, "{}")).await;
    assert_eq!(delivery.outcome(), "applied", "{:?}", delivery.body);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    drop(held);

    // A dashboard statement waiting for a row a delivery holds gives up instead of piling up.
    let ingest = app.db.writer.begin().await.expect("begin");
    ingest
        .execute_raw(Statement::from_string(
            app.db.backend(),
            "SELECT revision FROM object_state WHERE object_id = 'o1' FOR UPDATE",
        ))
        .await
        .expect("lock");
    let started = Instant::now();
    let waited = app
        .db
        .conn
        .execute_raw(Statement::from_string(
            app.db.backend(),
            "UPDATE object_state SET updated_at = updated_at WHERE object_id = 'o1'",
        ))
        .await
        .expect_err("the lock timeout ends the wait");
    assert!(waited.to_string().contains("lock timeout"), "{waited}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let timeout: String = app
        .db
        .conn
        .query_one_raw(Statement::from_string(
            app.db.backend(),
            "SHOW statement_timeout",
        ))
        .await
        .expect("show")
        .expect("a row")
        .try_get("", "statement_timeout")
        .expect("text");
    assert_eq!(timeout, "10s");
    ingest.rollback().await.expect("rollback");
}

#[tokio::test]
async fn dashboard_pages_carry_security_headers_and_a_policy_with_their_scripts_nonce() {
    let app = spawn_app(Backend::Sqlite).await;
    let response = app
        .client
        .get(app.url("/login"))
        .send()
        .await
        .expect("the login page");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let policy = header("content-security-policy");
    let (frame, sniff, referrer) = (
        header("x-frame-options"),
        header("x-content-type-options"),
        header("referrer-policy"),
    );
    let html = response.text().await.expect("html");

    assert_eq!(frame, "DENY");
    assert_eq!(sniff, "nosniff");
    assert_eq!(referrer, "same-origin");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(policy.contains("object-src 'none'"), "{policy}");
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a nonce in the policy");
    assert!(
        html.contains(&format!("nonce=\"{nonce}\"")),
        "the page's scripts carry the policy's nonce"
    );
    // Another page view, another nonce.
    let again = app
        .client
        .get(app.url("/login"))
        .send()
        .await
        .expect("again");
    let second = again
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(!second.contains(nonce));
}

/// Runs `loops` tasks that sign in as `name` with `password` from `client` again and again until
/// `stop`; returns their answers.
fn flood(
    app: &TestApp,
    loops: usize,
    name: &'static str,
    password: &'static str,
    client: &'static str,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<SignedIn>>> {
    (0..loops)
        .map(|_| {
            let app = app.clone_handle();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    answers.push(sign_in_as(&app, name, password, Some(client)).await);
                    tokio::task::yield_now().await;
                }
                answers
            })
        })
        .collect()
}

async fn answers_of(tasks: Vec<tokio::task::JoinHandle<Vec<SignedIn>>>) -> Vec<SignedIn> {
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("flood task"));
    }
    all
}

both_backends!(a_stranger_flooding_wrong_passwords_for_a_name_never_locks_out_its_user);
async fn a_stranger_flooding_wrong_passwords_for_a_name_never_locks_out_its_user(backend: Backend) {
    let app = behind_a_proxy(backend).await;
    auth::add_user(&app.db, "admin", PASSWORD, Role::Operator)
        .await
        .expect("add user");

    // A stranger floods wrong passwords for `admin` until the throttle refuses them...
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let stranger = flood(&app, 8, "admin", "wrong password", "198.51.100.66", &stop);
    let deadline = Instant::now() + Duration::from_secs(60);
    while recorded(&app.db, "throttled", "WHERE client = '198.51.100.66'").await == 0 {
        assert!(Instant::now() < deadline, "{backend:?}: never throttled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // ...and meanwhile the operator signs in from their own address, with the right password.
    let mut operator = Vec::new();
    for _ in 0..2 {
        operator.push(sign_in_as(&app, "admin", PASSWORD, Some("203.0.113.10")).await);
    }
    stop.store(true, Ordering::SeqCst);
    let stranger = answers_of(stranger).await;
    let flooded = started.elapsed().as_secs_f64();

    assert!(
        operator.iter().all(SignedIn::succeeded),
        "{backend:?}: the operator got in every time: {operator:?}"
    );
    let checked = stranger.iter().filter(|a| a.status == 401).count() as i64;
    let throttled: Vec<_> = stranger.iter().filter(|a| a.throttled()).collect();
    assert!(!throttled.is_empty(), "{backend:?}");
    assert!(
        throttled
            .iter()
            .all(|a| a.retry_after.is_some_and(|s| s >= 1)),
        "{backend:?}: every throttled answer says when to come back"
    );
    // The stranger's passwords checked: the free ones, then one after each delay (2, 4, 8 …
    // s after the one before), so however long the flood, only a few (and one in flight).
    let mut delays = 0;
    while f64::from((2u32 << (delays + 1)) - 2) <= flooded {
        delays += 1;
    }
    assert!(
        (auth::MAX_FAILURES_PER_USER..=auth::MAX_FAILURES_PER_USER + delays + 1).contains(&checked),
        "{backend:?}: {checked} checked in {flooded:.1} s"
    );
    assert!(
        stranger.iter().all(|a| a.status == 401 || a.status == 429),
        "{backend:?}"
    );
    // The operator's success is an audit row; the stranger's failures are counted, not rows.
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'sign_in' AND outcome = 'succeeded'"
        )
        .await,
        2,
        "{backend:?}"
    );
    assert_eq!(
        recorded(&app.db, "failed", "WHERE client = '198.51.100.66'").await,
        checked,
        "{backend:?}"
    );
}

both_backends!(the_delay_after_the_limit_doubles_with_each_failure);
async fn the_delay_after_the_limit_doubles_with_each_failure(backend: Backend) {
    let app = behind_a_proxy(backend).await;
    auth::add_user(&app.db, "olga", PASSWORD, Role::Operator)
        .await
        .expect("add user");
    let client = Some("198.51.100.7");

    for i in 0..auth::MAX_FAILURES_PER_USER {
        let answer = sign_in_as(&app, "olga", "wrong", client).await;
        assert_eq!(answer.status, 401, "{backend:?}: attempt {i}");
    }
    // What is left of the delay: a little less than 2 s.
    let first = sign_in_as(&app, "olga", PASSWORD, client).await;
    assert!(first.throttled(), "{backend:?}: {first:?}");
    let r1 = first.retry_after.expect("Retry-After");
    assert!((1..=2).contains(&r1), "{backend:?}: {first:?}");
    assert!(first.text.contains("second"), "{backend:?}: {first:?}");

    // Once the delay is over, one more password is checked, and the next delay is twice as long.
    tokio::time::sleep(Duration::from_secs(r1) + Duration::from_millis(100)).await;
    let checked = sign_in_as(&app, "olga", "wrong", client).await;
    assert_eq!(checked.status, 401, "{backend:?}: {checked:?}");
    let second = sign_in_as(&app, "olga", "wrong", client).await;
    assert!(second.throttled(), "{backend:?}: {second:?}");
    let r2 = second.retry_after.expect("Retry-After");
    assert_eq!(
        r2,
        r1 + 2,
        "{backend:?}: 4 s rather than 2, as much less: {second:?}"
    );

    // Another name from that client, and that name from another client, are not delayed.
    assert_eq!(sign_in_as(&app, "vera", "wrong", client).await.status, 401);
    assert!(
        sign_in_as(&app, "olga", PASSWORD, Some("203.0.113.1"))
            .await
            .succeeded(),
        "{backend:?}"
    );
    // The right password, once the delay is over, gets in and clears the count of its client.
    tokio::time::sleep(Duration::from_secs(r2) + Duration::from_millis(100)).await;
    assert!(
        sign_in_as(&app, "olga", PASSWORD, client).await.succeeded(),
        "{backend:?}"
    );
    assert_eq!(
        recorded(
            &app.db,
            "counted",
            "WHERE client = '198.51.100.7' AND name = 'olga'"
        )
        .await,
        0,
        "{backend:?}"
    );
    assert_eq!(
        recorded(
            &app.db,
            "failed",
            "WHERE client = '198.51.100.7' AND name = 'olga'"
        )
        .await,
        auth::MAX_FAILURES_PER_USER + 1,
        "{backend:?}: the failures stay counted for the audit page"
    );
}

both_backends!(while_one_client_floods_a_rightful_user_from_another_client_gets_in);
async fn while_one_client_floods_a_rightful_user_from_another_client_gets_in(backend: Backend) {
    let app = behind_a_proxy(backend).await;
    for name in ["script", "vera"] {
        auth::add_user(&app.db, name, PASSWORD, Role::Viewer)
            .await
            .expect("add user");
    }

    // One client signs in as fast as it can, many at once (right passwords: it is never
    // throttled, every attempt wants a password check)...
    let stop = Arc::new(AtomicBool::new(false));
    let flooding = flood(&app, 12, "script", PASSWORD, "198.51.100.1", &stop);
    let deadline = Instant::now() + Duration::from_secs(60);
    while recorded(&app.db, "busy", "WHERE client = '198.51.100.1'").await == 0 {
        assert!(Instant::now() < deadline, "{backend:?}: never busy");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // ...while a user signs in from another.
    let mut vera = Vec::new();
    for _ in 0..4 {
        vera.push(sign_in_as(&app, "vera", PASSWORD, Some("203.0.113.20")).await);
    }
    stop.store(true, Ordering::SeqCst);
    let flooding = answers_of(flooding).await;

    assert!(
        vera.iter().all(SignedIn::succeeded),
        "{backend:?}: no 429 for the other client: {vera:?}"
    );
    let busy = flooding.iter().filter(|a| a.busy()).count();
    assert!(
        busy > 0,
        "{backend:?}: the flood's extra attempts are refused"
    );
    assert!(
        flooding
            .iter()
            .filter(|a| a.busy())
            .all(|a| a.retry_after == Some(1)),
        "{backend:?}"
    );
    assert!(
        flooding.iter().all(|a| a.succeeded() || a.busy()),
        "{backend:?}"
    );
    assert_eq!(
        recorded(&app.db, "busy", "WHERE client = '198.51.100.1'").await,
        busy as i64,
        "{backend:?}: every refusal counted"
    );
}

both_backends!(failed_sign_ins_from_one_client_are_bounded_counts_not_a_row_each);
async fn failed_sign_ins_from_one_client_are_bounded_counts_not_a_row_each(backend: Backend) {
    let app = behind_a_proxy(backend).await;
    auth::add_user(&app.db, "olga", PASSWORD, Role::Operator)
        .await
        .expect("add user");
    let minute = || chrono::Utc::now().timestamp().div_euclid(60);

    // 300 wrong passwords for one name from one client, 30 at once.
    let first_minute = minute();
    let tasks: Vec<_> = (0..30)
        .map(|_| {
            let app = app.clone_handle();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for _ in 0..10 {
                    answers.push(sign_in_as(&app, "olga", "wrong", Some("198.51.100.9")).await);
                }
                answers
            })
        })
        .collect();
    let answers = answers_of(tasks).await;
    let minutes = minute() - first_minute + 1;

    assert_eq!(answers.len(), 300);
    let of = |f: fn(&SignedIn) -> bool| answers.iter().filter(|a| f(a)).count() as i64;
    let (checked, throttled, busy) = (
        of(|a| a.status == 401),
        of(SignedIn::throttled),
        of(SignedIn::busy),
    );
    assert_eq!(checked + throttled + busy, 300, "{backend:?}");
    let client = "WHERE client = '198.51.100.9'";
    assert_eq!(
        recorded(&app.db, "failed", client).await,
        checked,
        "{backend:?}"
    );
    assert_eq!(
        recorded(&app.db, "throttled", client).await,
        throttled,
        "{backend:?}"
    );
    assert_eq!(recorded(&app.db, "busy", client).await, busy, "{backend:?}");
    let rows = count(
        &app.db,
        "SELECT count(*) FROM sign_in_failures WHERE client = '198.51.100.9'",
    )
    .await;
    assert!(
        rows <= minutes,
        "{backend:?}: one row per minute, {rows} rows in {minutes}"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM audit_log").await,
        0,
        "{backend:?}: no audit row per attempt"
    );

    // Names made up by the hundred from one client: a bounded number of rows too.
    let first_minute = minute();
    let tasks: Vec<_> = (0..10)
        .map(|t| {
            let app = app.clone_handle();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for i in 0..20 {
                    let name = format!("user{t}-{i}");
                    answers.push(sign_in_as(&app, &name, "wrong", Some("198.51.100.10")).await);
                }
                answers
            })
        })
        .collect();
    let answers = answers_of(tasks).await;
    let minutes = minute() - first_minute + 1;
    let names = count(
        &app.db,
        "SELECT count(*) FROM sign_in_failures WHERE client = '198.51.100.10'",
    )
    .await;
    assert_eq!(
        recorded(
            &app.db,
            "failed + throttled + busy",
            "WHERE client = '198.51.100.10'"
        )
        .await,
        answers.len() as i64,
        "{backend:?}"
    );
    let bound =
        (auth::MAX_FAILURES_PER_ADDRESS + auth::MAX_REFUSED_NAMES_PER_CLIENT as i64 + 1) * minutes;
    assert!(
        names <= bound,
        "{backend:?}: {names} rows for 200 names (at most {bound})"
    );

    // The audit page shows the counts, a row per minute.
    let page = app::db::audit::audit_entries(&app.db, Some("sign_in"), Some("olga"))
        .await
        .expect("audit entries");
    let failed: Vec<String> = page
        .iter()
        .filter(|row| row.outcome == "failed")
        .filter_map(|row| row.detail.clone())
        .collect();
    assert!(
        failed
            .iter()
            .all(|d| d.contains("failed sign-ins as olga from 198.51.100.9 in the minute of")),
        "{backend:?}: {failed:?}"
    );
    let shown: i64 = failed
        .iter()
        .filter_map(|d| d.split(' ').next()?.parse::<i64>().ok())
        .sum();
    assert_eq!(shown, checked, "{backend:?}: {page:?}");
}

/// Sign-ins from `clients` distinct addresses at once, each with `password` for `name`.
fn sign_ins_from_many(
    app: &TestApp,
    clients: usize,
    name: &'static str,
    password: &'static str,
) -> Vec<tokio::task::JoinHandle<SignedIn>> {
    (0..clients)
        .map(|i| {
            let app = app.clone_handle();
            tokio::spawn(async move {
                let client = format!("198.51.100.{}", 100 + i);
                sign_in_as(&app, name, password, Some(&client)).await
            })
        })
        .collect()
}

#[tokio::test]
async fn on_sqlite_sign_in_writes_queue_for_the_single_writer_a_bounded_few_at_a_time() {
    let app = behind_a_proxy(Backend::Sqlite).await;
    auth::add_user(&app.db, "vera", PASSWORD, Role::Viewer)
        .await
        .expect("add user");
    assert_eq!(
        app.send("shop", &event("e1", "o1", 1, "{}"))
            .await
            .outcome(),
        "applied"
    );

    // The writer connection taken (as a delivery holds it), without SQLite's write lock: a write
    // through the read pool would go through at once.
    let held = app.db.writer.begin().await.expect("the writer connection");
    held.execute_raw(Statement::from_string(
        app.db.backend(),
        "SELECT count(*) FROM object_state",
    ))
    .await
    .expect("read");
    let first = {
        let app = app.clone_handle();
        tokio::spawn(async move { sign_in_as(&app, "vera", PASSWORD, Some("203.0.113.5")).await })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while app::db::dashboard_writes_in_flight() == 0 {
        assert!(Instant::now() < deadline, "the sign-in never wrote");
        tokio::task::yield_now().await;
    }
    assert!(!first.is_finished(), "the sign-in waits for the writer");

    // More dashboard writes pile up: at most DASHBOARD_WRITES wait at the writer, the rest
    // before it, behind no delivery.
    let revokes: Vec<_> = (0..10)
        .map(|i| {
            let db = app.db.clone();
            tokio::spawn(async move { auth::revoke_session(&db, &format!("token-{i}")).await })
        })
        .collect();
    let flood = sign_ins_from_many(&app, 10, "vera", "wrong password");
    while app::db::dashboard_writes_in_flight() < app::db::DASHBOARD_WRITES {
        assert!(Instant::now() < deadline, "the writes never queued");
        tokio::task::yield_now().await;
    }
    let delivery = {
        let app = app.clone_handle();
        tokio::spawn(async move {
            let answer = app.send("shop", &event("e2", "o1", 2, "{}")).await;
            (answer, Instant::now())
        })
    };
    for _ in 0..100 {
        assert!(app::db::dashboard_writes_in_flight() <= app::db::DASHBOARD_WRITES);
        tokio::task::yield_now().await;
    }
    assert!(!first.is_finished() && !delivery.is_finished());

    let released = Instant::now();
    held.commit().await.expect("release the writer");
    let (answer, applied_at) = delivery.await.expect("delivery");
    assert_eq!(answer.outcome(), "applied", "{:?}", answer.body);
    let waited = applied_at - released;
    assert!(first.await.expect("sign-in").succeeded());
    for revoke in revokes {
        revoke.await.expect("task").expect("revoked");
    }
    for task in flood {
        let answer = task.await.expect("task");
        assert!(answer.status == 401 || answer.busy(), "{answer:?}");
    }
    eprintln!("the delivery waited {waited:?} once the writer was free");
    assert!(waited < Duration::from_secs(1), "{waited:?}");
}

both_backends!(deliveries_keep_their_latency_during_a_sign_in_flood);
async fn deliveries_keep_their_latency_during_a_sign_in_flood(backend: Backend) {
    let app = behind_a_proxy(backend).await;
    for name in ["olga", "vera"] {
        auth::add_user(&app.db, name, PASSWORD, Role::Operator)
            .await
            .expect("add user");
    }
    assert_eq!(
        app.send("shop", &event("warm", "o0", 1, "{}"))
            .await
            .outcome(),
        "applied"
    );

    // Wrong passwords from many clients and right ones from others (each a session and an audit
    // row), all at once, while deliveries arrive one after another.
    let stop = Arc::new(AtomicBool::new(false));
    let mut floods = Vec::new();
    for (i, client) in ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
        .into_iter()
        .enumerate()
    {
        let (name, password) = if i == 0 {
            ("olga", PASSWORD)
        } else {
            ("olga", "wrong")
        };
        floods.extend(flood(&app, 4, name, password, client, &stop));
    }
    floods.extend(flood(&app, 4, "vera", PASSWORD, "198.51.100.4", &stop));
    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        let started = Instant::now();
        let answer = app
            .send("shop", &event(&format!("e{i}"), "o1", i + 1, "{}"))
            .await;
        slowest = slowest.max(started.elapsed());
        assert_eq!(
            answer.outcome(),
            "applied",
            "{backend:?}: {:?}",
            answer.body
        );
    }
    stop.store(true, Ordering::SeqCst);
    let answers = answers_of(floods).await;

    eprintln!(
        "{backend:?}: {} sign-ins during 20 deliveries, the slowest {slowest:?}",
        answers.len()
    );
    assert!(
        answers.iter().any(SignedIn::succeeded),
        "{backend:?}: sign-ins went through"
    );
    assert!(
        answers.iter().all(|a| a.status < 500),
        "{backend:?}: never a 5xx"
    );
    assert!(slowest < Duration::from_secs(1), "{backend:?}: {slowest:?}");
}
