//! PostgreSQL, several processes: the feed's order is commit order. A delivery's transaction
//! held open keeps every reader before it until it commits; three `hookbox` processes ingest
//! 3,000 deliveries while a reader drains the feed, and every one arrives once, in an order
//! consistent with their commits; a long poll wakes within 100 ms of another process's commit.

use super::*;
use crate::concurrency::hold;

#[tokio::test]
async fn a_reader_never_gets_past_a_transaction_still_open_and_then_receives_it() {
    let app = spawn_app(Backend::Postgres).await;
    app.send("shop", &event("before", "o-0", 1, "{}")).await;
    let all = token(&app, "all", Role::Viewer, &[]).await;
    let (items, start) = drain(&app, &all, "", None).await;
    assert_eq!(ids(&items), ["before"]);

    let (status, _) = put(&app, &all, "/api/v1/feed/consumers/gap", "").await;
    assert_eq!(status, 201);
    let (status, _) = post(
        &app,
        &all,
        "/api/v1/feed/consumers/gap/seek",
        r#"{"to":"latest"}"#,
    )
    .await;
    assert_eq!(status, 200);

    // One delivery's transaction is open (it has written its archive row), and PostgreSQL says so.
    let (held, _, holder) = hold(&app.db, &event("held", "o-held", 1, "{}")).await;
    let state = scalar(
        &app.db,
        "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'idle in transaction'",
        vec![holder.into()],
    )
    .await;
    assert_eq!(state, Some(1), "the held delivery's transaction is open");
    // Later deliveries commit meanwhile.
    for i in 1..=5 {
        let answer = app
            .send(
                "shop",
                &event(&format!("later-{i}"), &format!("o-{i}"), 1, "{}"),
            )
            .await;
        assert_eq!(answer.outcome(), "applied");
    }
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE event_id LIKE 'later-%'"
        )
        .await,
        5,
        "the later ones are committed"
    );
    // No reader gets past the open transaction: not by reading, not by waiting.
    let (status, _, body) = get(
        &app,
        Some(&all),
        &format!("/api/v1/feed?after={start}&wait=1"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"].as_array().unwrap().len(), 0, "{body}");
    assert_eq!(body["next_cursor"], start.as_str());

    // The lag shows what is held back: a consumer's lag is what it has not read, served or not.
    let (_, _, consumer) = get(&app, Some(&all), "/api/v1/feed/consumers/gap").await;
    assert_eq!(consumer["lag_items"], 5, "{consumer}");

    // It commits: the reader receives it, and the later ones after it.
    held.commit().await.unwrap();
    let (items, _) = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        let mut items = Vec::new();
        let mut after = start.clone();
        while items.len() < 6 {
            let (status, _, body) = get(
                &app,
                Some(&all),
                &format!("/api/v1/feed?after={after}&wait=5"),
            )
            .await;
            assert_eq!(status, 200);
            items.extend(body["data"].as_array().unwrap().clone());
            after = body["next_cursor"].as_str().unwrap().to_string();
        }
        (items, after)
    })
    .await
    .unwrap();
    let received = ids(&items);
    assert_eq!(received[0], "held", "the held delivery first: {received:?}");
    let mut later = received[1..].to_vec();
    later.sort();
    assert_eq!(
        later,
        ["later-1", "later-2", "later-3", "later-4", "later-5"]
    );
}

/// The test configuration as the binary reads it.
fn config() -> String {
    CONFIG.to_string()
}

#[tokio::test]
async fn three_processes_ingest_while_a_reader_drains_every_delivery_once_in_commit_order() {
    let test_db = test_db(Backend::Postgres).await;
    let mut processes = Vec::new();
    for _ in 0..3 {
        processes.push(
            Binary::start(
                &test_db.url,
                &config(),
                &[
                    ("RUST_LOG", "warn"),
                    ("SHOP_SECRET_OLD", SHOP_SECRET_OLD),
                    ("SW_SECRET", SW_SECRET),
                ],
            )
            .await,
        );
    }
    let reader = spawn_app_on(test_db.db.clone()).await;
    let all = token(&reader, "all", Role::Viewer, &[]).await;
    let client = reqwest::Client::new();

    // 3 processes × 4 senders × 250 deliveries; each sender's deliveries commit in its order.
    let mut senders = Vec::new();
    for (p, process) in processes.iter().enumerate() {
        for s in 0..4 {
            let (client, addr) = (client.clone(), process.addr);
            senders.push(tokio::spawn(async move {
                for n in 0..250 {
                    let id = format!("p{p}-s{s}-{n:03}");
                    let body = event(&id, &id, 1, "{}");
                    let (status, outcome) = send_to(&client, addr, &body).await.expect("answered");
                    assert_eq!((status, outcome.as_str()), (200, "applied"), "{id}");
                }
            }));
        }
    }
    let mut items: Vec<Value> = Vec::new();
    let mut after: Option<String> = None;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(240);
    while items.len() < 3000 {
        // A sender that ended early failed: its panic is the test's.
        let mut i = 0;
        while i < senders.len() {
            if senders[i].is_finished() {
                senders.swap_remove(i).await.unwrap();
            } else {
                i += 1;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "drained {} of 3000",
            items.len()
        );
        let path = match &after {
            Some(c) => format!("/api/v1/feed?after={c}&limit=500&wait=2"),
            None => "/api/v1/feed?limit=500&wait=2".to_string(),
        };
        let (status, _, body) = get(&reader, Some(&all), &path).await;
        if status == 429 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        }
        assert_eq!(status, 200, "{body}");
        items.extend(body["data"].as_array().unwrap().clone());
        after = Some(body["next_cursor"].as_str().unwrap().to_string());
    }
    for sender in senders {
        sender.await.unwrap();
    }
    // Nothing more after the 3,000.
    let (rest, _) = drain(&reader, &all, "", after).await;
    assert_eq!(rest.len(), 0);

    let received = ids(&items);
    let unique: std::collections::BTreeSet<&String> = received.iter().collect();
    assert_eq!(
        (received.len(), unique.len()),
        (3000, 3000),
        "each exactly once"
    );
    // Each sender's deliveries in the order they were committed.
    for p in 0..3 {
        for s in 0..4 {
            let prefix = format!("p{p}-s{s}-");
            let sent: Vec<&String> = received
                .iter()
                .filter(|id| id.starts_with(&prefix))
                .collect();
            let mut sorted = sent.clone();
            sorted.sort();
            assert_eq!(sent, sorted, "{prefix}: in commit order");
        }
    }
    // The feed's order is the order of the cursors it gave out.
    let cursors: Vec<app::feed::Cursor> = items
        .iter()
        .map(|i| app::feed::Cursor::parse(i["cursor"].as_str().unwrap()).unwrap())
        .collect();
    assert!(cursors.windows(2).all(|w| w[0] < w[1]));
}

#[tokio::test]
async fn a_long_poll_wakes_within_100_ms_of_a_commit_in_another_process() {
    let test_db = test_db(Backend::Postgres).await;
    let other = Binary::start(
        &test_db.url,
        &config(),
        &[
            ("RUST_LOG", "warn"),
            ("SHOP_SECRET_OLD", SHOP_SECRET_OLD),
            ("SW_SECRET", SW_SECRET),
        ],
    )
    .await;
    let reader = spawn_app_on(test_db.db.clone()).await;
    let all = token(&reader, "all", Role::Viewer, &[]).await;
    let client = reqwest::Client::new();
    send_to(&client, other.addr, &event("first", "o-0", 1, "{}"))
        .await
        .unwrap();
    let (_, mut after) = drain(&reader, &all, "", None).await;
    // The reader's process listens before the rounds start.
    let listening = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN \"hookbox_feed\"'";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while count(&test_db.db, listening).await < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "both processes LISTEN"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let mut woken = Vec::new();
    for round in 0..7 {
        let poll = waiting_poll(&reader, &all, format!("/api/v1/feed?after={after}&wait=20")).await;
        let id = format!("r-{round}");
        let sent = std::time::Instant::now();
        let (status, _) = send_to(&client, other.addr, &event(&id, &id, 1, "{}"))
            .await
            .unwrap();
        assert_eq!(status, 200);
        let ((status, _, body), answered) = poll.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(ids(body["data"].as_array().unwrap()), [id]);
        after = body["next_cursor"].as_str().unwrap().to_string();
        woken.push(answered - sent);
    }
    woken.sort();
    eprintln!("woken after {woken:?} (from the start of the other process's delivery)");
    assert!(
        woken[3] < std::time::Duration::from_millis(100),
        "the median wake-up is within 100 ms of the commit: {woken:?}"
    );
}
