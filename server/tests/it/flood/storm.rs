//! A storm of failures of one cause with a notification channel configured, on the real binary
//! and PostgreSQL: 20 s of signed failing deliveries from 8 senders at once beside paced good
//! ones. The storm is one `problem.opened`, one message; every paced delivery is applied and none
//! waits more than 5 s (a starved delivery, not a speed target: the latencies are printed beside
//! those of the same deliveries without the storm).
#![allow(clippy::unwrap_used)]

use crate::forwarder::Receiver;
use crate::notifications::{CHANNEL_SECRET, webhook_channel};
use crate::support::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Paced good deliveries (`prefix`), 50 a second for `secs`: their latencies, sorted.
async fn paced(
    client: &reqwest::Client,
    addr: std::net::SocketAddr,
    prefix: &str,
    secs: u64,
) -> Vec<Duration> {
    let mut ticker = tokio::time::interval(Duration::from_millis(20));
    let mut sent = Vec::new();
    for i in 0..secs * 50 {
        ticker.tick().await;
        let (client, body) = (
            client.clone(),
            event(&format!("{prefix}-{i}"), &format!("{prefix}-o{i}"), 1, "{}"),
        );
        sent.push(tokio::spawn(async move {
            let at = Instant::now();
            let answer = send_to(&client, addr, &body).await;
            (answer, at.elapsed())
        }));
    }
    let mut latencies = Vec::new();
    for task in sent {
        let (answer, took) = task.await.unwrap();
        assert_eq!(
            answer,
            Some((200, "applied".to_string())),
            "a paced delivery"
        );
        latencies.push(took);
    }
    latencies.sort();
    latencies
}

fn figures(latencies: &[Duration]) -> String {
    let at = |q: usize| latencies[(latencies.len() * q / 100).min(latencies.len() - 1)];
    format!(
        "p50 {:?} p99 {:?} max {:?}",
        at(50),
        at(99),
        latencies[latencies.len() - 1]
    )
}

#[tokio::test]
async fn a_storm_of_failures_of_one_cause_is_one_message_and_paced_deliveries_are_served() {
    let (receiver, url) = Receiver::start(vec![]).await;
    let (db, database_url) = fresh_postgres(&cluster_url()).await;
    let config = format!(
        "[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"SHOP_SECRET\"]\n{}",
        webhook_channel(300)
    );
    let process = Binary::start(
        &database_url,
        &config,
        &[
            ("OPS_URL", url.as_str()),
            ("OPS_SECRET", CHANNEL_SECRET),
            ("RUST_LOG", "warn"),
        ],
    )
    .await;
    let addr = process.addr;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let quiet = paced(&client, addr, "quiet", 5).await;

    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let mut storm = Vec::new();
    for sender in 0..8 {
        let (client, stop, failed) = (client.clone(), stop.clone(), failed.clone());
        storm.push(tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // No revision: invalid, one cause however many.
                let body = format!(
                    r#"{{"event_id":"storm-{sender}-{i}","object_id":"o","snapshot":{{}}}}"#
                );
                if send_to(&client, addr, &body).await.map(|a| a.0) == Some(422) {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
            }
        }));
    }
    let during = paced(&client, addr, "paced", 20).await;
    stop.store(true, Ordering::Relaxed);
    for task in storm {
        task.await.unwrap();
    }
    receiver.wait_for(1).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while count(
        &db,
        "SELECT count(*) FROM notification_sends WHERE status = 'sent'",
    )
    .await
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the message was never recorded sent"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;

    let failed = failed.load(Ordering::Relaxed);
    println!(
        "storm: {failed} failures of one cause in 20 s; paced deliveries without it {}, during it {}",
        figures(&quiet),
        figures(&during)
    );
    assert!(failed > 1000, "the storm stormed: {failed} failures");
    assert_eq!(receiver.got().len(), 1, "one message for the storm");
    assert_eq!(count(&db, "SELECT count(*) FROM notifications").await, 1);
    assert_eq!(count(&db, "SELECT count(*) FROM problems").await, 1);
    assert_eq!(count(&db, "SELECT changes FROM problems").await, 1);
    assert!(
        during[during.len() - 1] < Duration::from_secs(5),
        "a paced delivery waited {:?} during the storm",
        during[during.len() - 1]
    );
}
