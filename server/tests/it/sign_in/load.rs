//! The dashboard under load beside deliveries: its connections cannot starve deliveries and give
//! up on locks, its writes on SQLite queue for the single writer a bounded few at a time, and
//! deliveries keep their latency during a sign-in flood.

use super::*;
use app::model::Role;
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
use std::time::{Duration, Instant};

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
        .dashboard
        .get_postgres_connection_pool()
        .options()
        .get_max_connections();
    let mut held = Vec::new();
    for _ in 0..max {
        held.push(
            app.db
                .dashboard
                .begin()
                .await
                .expect("a dashboard connection"),
        );
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
        .dashboard
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
        .dashboard
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
