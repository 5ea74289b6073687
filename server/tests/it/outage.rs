//! The database goes away and comes back: 503 with Retry-After in bounded time, then recovery
//! without restarting hookbox. Uses a cluster of its own, so stopping it disturbs no other test.

use crate::support::*;
use std::time::{Duration, Instant};

#[tokio::test]
async fn an_unreachable_database_is_503_and_hookbox_recovers_by_itself() {
    let (cluster, db, _) = Cluster::start("hookbox-outage").await;
    let app = spawn_app_on(db.clone()).await;
    assert_eq!(
        app.send("shop", &event("before", "order-1", 1, "{}"))
            .await
            .outcome(),
        "applied"
    );

    cluster.run("stop");
    let started = Instant::now();
    let during = app.send("shop", &event("during", "order-1", 2, "{}")).await;
    let waited = started.elapsed();

    assert_eq!(
        (during.status, during.body["status"].as_str()),
        (503, Some("unavailable"))
    );
    let request_id = during
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("a request id");
    assert_eq!(
        during.body["request_id"], request_id,
        "the 5xx body names the request id of the logs"
    );
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("readyz answers");
    assert_eq!(
        ready.status().as_u16(),
        503,
        "/readyz says the database is gone"
    );
    assert_eq!(
        during
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("5")
    );
    assert!(
        waited < Duration::from_secs(15),
        "answered after {waited:?}, bounded by the pool's acquire timeout"
    );

    cluster.run("resume");
    let after = app.send("shop", &event("during", "order-1", 2, "{}")).await;

    assert_eq!(after.outcome(), "applied", "{:?}", after.body);
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("readyz answers");
    assert_eq!(ready.status().as_u16(), 200);
    assert_eq!(current_revision(&db, "shop", "order-1").await, Some(2));
    assert!(
        archived(&db, "shop", "during").await.len() == 1,
        "the 503 left nothing behind"
    );
}

/// Polls `condition` until it holds (progress of the load, not an ordering assumption).
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn under_load_a_stopped_database_gives_only_503s_and_every_2xx_is_recorded() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let (cluster, db, _) = Cluster::start("hookbox-outage").await;
    let app = spawn_app_on(db.clone()).await;
    let answers: Arc<Mutex<Vec<(String, u16)>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let senders: Vec<_> = (0..8)
        .map(|sender| {
            let (client, answers, done) = (app.clone_handle(), answers.clone(), done.clone());
            tokio::spawn(async move {
                let mut revision = 0;
                while !done.load(Ordering::SeqCst) {
                    revision += 1;
                    let event_id = format!("s{sender}-r{revision}");
                    let answer = client
                        .send(
                            "shop",
                            &event(&event_id, &format!("o{sender}"), revision, "{}"),
                        )
                        .await;
                    answers
                        .lock()
                        .expect("answers")
                        .push((event_id, answer.status));
                }
            })
        })
        .collect();
    let count_of = |status: u16| {
        answers
            .lock()
            .expect("answers")
            .iter()
            .filter(|(_, s)| *s == status)
            .count()
    };

    until("deliveries before the outage", || count_of(200) >= 40).await;
    cluster.run("stop");
    until("503s during the outage", || count_of(503) >= 16).await;
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("readyz answers");
    assert_eq!(ready.status().as_u16(), 503);
    cluster.run("resume");
    let ok_before = count_of(200);
    until("deliveries after recovery", || {
        count_of(200) >= ok_before + 40
    })
    .await;
    done.store(true, Ordering::SeqCst);
    for sender in senders {
        sender.await.expect("sender");
    }

    let answers = answers.lock().expect("answers").clone();
    assert!(
        answers.iter().all(|(_, s)| *s == 200 || *s == 503),
        "only 200 or 503: {answers:?}"
    );
    let stored: std::collections::HashSet<String> =
        texts(&db, "SELECT event_id FROM webhook_inbox", vec![])
            .await
            .into_iter()
            .filter_map(|mut row| row.remove(0))
            .collect();
    for (event_id, status) in &answers {
        if *status == 200 {
            assert!(
                stored.contains(event_id),
                "{event_id} was answered 200 but is not in the inbox"
            );
        }
    }
    // Senders retry what got 503: each is recorded once, never a conflict.
    for (event_id, _) in answers.iter().filter(|(_, s)| *s == 503) {
        let (sender, revision) = event_id
            .trim_start_matches('s')
            .split_once("-r")
            .expect("id shape");
        let revision: i64 = revision.parse().expect("revision");
        let retry = app
            .send(
                "shop",
                &event(event_id, &format!("o{sender}"), revision, "{}"),
            )
            .await;
        assert!(
            matches!(retry.outcome(), "applied" | "stale" | "duplicate"),
            "{event_id}: {:?}",
            retry.body
        );
    }
}
