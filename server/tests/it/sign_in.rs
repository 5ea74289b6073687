//! Sign-in under attack: what an unauthenticated caller can make hookbox spend is bounded, the
//! throttle keys on the real client behind a trusted proxy, the audit log is kept bounded, and
//! the dashboard cannot starve deliveries of database connections.

use crate::support::*;
use app::auth;
use app::model::Role;
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
use std::time::{Duration, Instant};

const PASSWORD: &str = "a long enough password";

/// Posts the sign-in form as a browser does; returns the status and the answer's text.
async fn attempt(
    app: &TestApp,
    name: &str,
    password: &str,
    forwarded_for: Option<&str>,
) -> (u16, String) {
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
    (status, response.text().await.unwrap_or_default())
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
    let failed = count(
        &app.db,
        "SELECT count(*) FROM audit_log WHERE action = 'sign_in' AND outcome = 'failed' AND actor = 'olga'",
    )
    .await;
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

    // Forty at once, each retried while the process is busy, until it gets its answer.
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let app = app.clone_handle();
            tokio::spawn(async move {
                loop {
                    let (status, text) = attempt(&app, "olga", "wrong password", None).await;
                    if status != 429 || !text.contains("at once") {
                        return status;
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.expect("task"));
    }

    let wrong = statuses.iter().filter(|s| **s == 401).count() as i64;
    let failed = count(
        &app.db,
        "SELECT count(*) FROM audit_log WHERE action = 'sign_in' AND outcome = 'failed'",
    )
    .await;
    assert!(
        (1..=auth::MAX_FAILURES_PER_USER).contains(&wrong),
        "{statuses:?}"
    );
    assert_eq!(failed, wrong, "every checked password is one failure row");
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE outcome = 'throttled'"
        )
        .await,
        40 - wrong
    );
    // And the right password is throttled too now.
    assert_eq!(attempt(&app, "olga", PASSWORD, None).await.0, 429);
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
    assert_eq!(
        texts(
            &app.db,
            "SELECT DISTINCT address FROM audit_log ORDER BY address",
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

    assert_eq!(
        texts(&app.db, "SELECT DISTINCT address FROM audit_log", vec![]).await,
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
                action: "sign_in",
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
