//! Faults of the real `hookbox` binary, each on a fresh PostgreSQL database: SIGTERM with a
//! delivery in flight, kill -9 under load, and three processes sharing one database. Waits are
//! proven (`pg_blocking_pids`, a refused connection, a counter), never assumed from a sleep.

use crate::support::*;
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement, TransactionTrait};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const CONFIG: &str = r#"
[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
"#;

/// The binary on `database_url`, serving [`CONFIG`].
async fn start(database_url: &str) -> Binary {
    Binary::start(database_url, CONFIG, &[]).await
}

/// An event id, its body and the answer (status, outcome), if one came.
type Sent = (String, String, Option<(u16, String)>);

#[tokio::test]
async fn sigterm_lets_a_delivery_in_flight_commit_and_answer_then_exits_0() {
    let (db, url) = fresh_postgres(&cluster_url()).await;
    let mut process = start(&url).await;
    let client = reqwest::Client::new();
    let first = send_to(&client, process.addr, &event("e1", "order-1", 1, "{}")).await;
    assert_eq!(first, Some((200, "applied".into())));

    // The test holds order-1's projection row, so the next delivery waits inside its transaction.
    let lock = db.dashboard.begin().await.expect("begin");
    lock.execute_raw(Statement::from_string(
        DatabaseBackend::Postgres,
        "SELECT revision FROM object_state WHERE object_id = 'order-1' FOR UPDATE",
    ))
    .await
    .expect("lock the row");
    let holder = crate::support::backend_pid(&lock).await;
    let addr = process.addr;
    let in_flight = tokio::spawn({
        let client = client.clone();
        async move { send_to(&client, addr, &event("e2", "order-1", 2, r#"{"v":2}"#)).await }
    });
    wait_until_blocked_by(&db, holder).await;

    process.signal("TERM");
    // Shutdown has begun when the listener is gone.
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(addr).is_ok() {
        assert!(
            Instant::now() < deadline,
            "hookbox kept accepting after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!in_flight.is_finished(), "the delivery is still waiting");
    lock.rollback().await.expect("release the row");

    assert_eq!(
        in_flight.await.expect("task"),
        Some((200, "applied".into()))
    );
    let status = tokio::task::spawn_blocking(move || process.child.wait())
        .await
        .expect("task")
        .expect("exit status");
    assert_eq!(status.code(), Some(0));
    assert_eq!(current_revision(&db, "shop", "order-1").await, Some(2));
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM webhook_inbox WHERE event_id = 'e2'"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn after_kill_9_under_load_every_delivery_answered_2xx_is_in_the_inbox() {
    let (db, url) = fresh_postgres(&cluster_url()).await;
    let mut process = start(&url).await;
    let client = reqwest::Client::new();
    let answered = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let senders = (0..8).map(|worker| {
        let client = client.clone();
        let answered = answered.clone();
        let addr = process.addr;
        tokio::spawn(async move {
            let mut results = Vec::new();
            for i in 0..60 {
                let event_id = format!("w{worker}-{i}");
                let body = event(&event_id, &format!("order-{worker}"), i + 1, "{}");
                let answer = send_to(&client, addr, &body).await;
                if answer.as_ref().is_some_and(|(status, _)| *status == 200) {
                    answered.add_permits(1);
                }
                let stop = answer.is_none();
                results.push((event_id, body, answer));
                if stop {
                    break;
                }
            }
            results
        })
    });
    let senders: Vec<_> = senders.collect();
    // Kill once 100 deliveries were answered, with the others still sending.
    let _ = answered.acquire_many(100).await.expect("semaphore");
    process.child.kill().expect("kill -9");
    process.child.wait().expect("reaped");
    let results: Vec<Sent> = futures::future::join_all(senders)
        .await
        .into_iter()
        .flat_map(|r| r.expect("task"))
        .collect();

    let restarted = start(&url).await;
    let acknowledged: Vec<&String> = results
        .iter()
        .filter(|(_, _, a)| a.as_ref().is_some_and(|(s, _)| *s == 200))
        .map(|(id, _, _)| id)
        .collect();
    assert!(acknowledged.len() >= 100);
    for event_id in &acknowledged {
        assert_eq!(
            scalar(
                &db,
                "SELECT count(*) FROM webhook_inbox WHERE event_id = $1",
                vec![event_id.as_str().into()]
            )
            .await,
            Some(1),
            "{event_id} was answered 2xx, so it is in the inbox"
        );
    }
    // The sender retries what got no answer: each is either new or a duplicate of a commit the
    // answer of which was lost; never a conflict.
    for (event_id, body, _) in results.iter().filter(|(_, _, a)| a.is_none()) {
        let retry = send_to(&client, restarted.addr, body).await;
        assert!(
            matches!(
                retry.as_ref().map(|(s, o)| (*s, o.as_str())),
                Some((200, "applied" | "stale" | "duplicate"))
            ),
            "{event_id}: {retry:?}"
        );
    }
    let sent = results.len() as i64;
    assert_eq!(count(&db, "SELECT count(*) FROM webhook_inbox").await, sent);
}

#[tokio::test]
async fn three_processes_under_shuffled_duplicated_load_accept_each_event_once() {
    use rand::seq::SliceRandom;
    let (db, url) = fresh_postgres(&cluster_url()).await;
    let processes = [start(&url).await, start(&url).await, start(&url).await];
    let client = reqwest::Client::new();
    let mut sends = Vec::new();
    for object in 0..20 {
        for revision in 1..=5_i64 {
            for copy in 0..3 {
                sends.push((format!("o{object}-r{revision}"), object, revision, copy));
            }
        }
    }
    sends.shuffle(&mut rand::rng());
    let tasks = sends.into_iter().map(|(event_id, object, revision, copy)| {
        let client = client.clone();
        let addr = processes[(object + revision as usize + copy) % 3].addr;
        tokio::spawn(async move {
            let body = event(
                &event_id,
                &format!("o{object}"),
                revision,
                &format!(r#"{{"r":{revision}}}"#),
            );
            (event_id, send_to(&client, addr, &body).await)
        })
    });
    let answers: Vec<(String, Option<(u16, String)>)> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .collect();

    let mut accepted = std::collections::BTreeMap::<String, usize>::new();
    for (event_id, answer) in &answers {
        let (status, outcome) = answer.clone().expect("an answer");
        assert_eq!(status, 200, "{event_id}: {outcome}");
        assert!(
            matches!(outcome.as_str(), "applied" | "stale" | "duplicate"),
            "{outcome}"
        );
        if outcome != "duplicate" {
            *accepted.entry(event_id.clone()).or_default() += 1;
        }
    }
    assert_eq!(accepted.len(), 100);
    assert!(accepted.values().all(|n| *n == 1), "{accepted:?}");
    assert_eq!(count(&db, "SELECT count(*) FROM webhook_inbox").await, 100);
    assert_eq!(count(&db, "SELECT count(*) FROM webhook_events").await, 300);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM object_state WHERE revision = 5 AND snapshot = '{\"r\":5}'::jsonb"
        )
        .await,
        20
    );
}
