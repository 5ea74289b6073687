//! What an unauthenticated caller can make hookbox spend: a burst of failed sign-ins keeps memory
//! bounded and deliveries answered, parallel wrong passwords are checked no more often than the
//! throttle allows, and names that cannot exist are refused without a trace.

use super::*;
use app::model::Role;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

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
