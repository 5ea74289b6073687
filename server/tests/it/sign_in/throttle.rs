//! The throttle: it keys on the real client behind a trusted proxy (and on the peer otherwise),
//! its delay doubles with each failure, and one client flooding a name or the password checks
//! never locks out a user signing in from another client.

use super::*;
use app::model::Role;
use std::time::{Duration, Instant};

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
    app::clock::advance(Duration::from_secs(r1) + Duration::from_millis(100));
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
    app::clock::advance(Duration::from_secs(r2) + Duration::from_millis(100));
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
