//! kill -9 under forwarding load: every forward delivery ends delivered, its lease waited out,
//! once a new process takes over.

use super::*;

#[tokio::test]
async fn after_kill_9_under_forwarding_load_every_forward_delivery_ends_delivered() {
    let (db, url) = fresh_postgres(&cluster_url()).await;
    // Each answer takes 50 ms, so attempts are in flight; 25 attempts a second, so 200 rows take
    // 8 s and the kill finds some delivered, some pending.
    let application = Application::start(Duration::from_millis(50)).await;
    let config = config(&application.url, 2, "[1, 1, 1]", "rate_limit_per_sec = 25");
    let mut process = start(&url, &config).await;

    let applied = send_events(&[process.addr], 200).await;
    until(
        "forwarding in progress",
        Duration::from_secs(30),
        async || {
            count(
                &db,
                "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
            )
            .await
                >= 10
        },
    )
    .await;
    // Killed while the application has requests in flight: from here on it answers none, so
    // those that arrived are unanswered at the kill, whatever the machine's pace.
    application.hold_every();
    until(
        "an attempt in flight",
        Duration::from_secs(30),
        async || application.got_and_held().1 > 0,
    )
    .await;
    process.child.kill().expect("kill -9");
    process.child.wait().expect("reaped");
    // The requests held at the kill; released, they answer a connection that is gone.
    let in_flight = application.release();
    assert!(!in_flight.is_empty(), "requests were in flight at the kill");

    let delivered_at_kill = count(
        &db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
    )
    .await;
    let pending_at_kill = count(
        &db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'pending'",
    )
    .await;
    assert!(
        delivered_at_kill > 0 && pending_at_kill > 0,
        "killed while forwarding: {delivered_at_kill} delivered, {pending_at_kill} pending"
    );
    assert_eq!(delivered_at_kill + pending_at_kill, applied as i64);
    // The rows the dead process held a lease on, and when each lease ends.
    let leased: BTreeMap<String, i64> = ints(
        &db,
        &format!(
            "SELECT id, {} FROM forward_deliveries WHERE status = 'pending' AND lease_until IS NOT NULL",
            ms("lease_until")
        ),
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), r[1]))
    .collect();
    for id in &in_flight {
        assert!(leased.contains_key(id), "{id} was in flight, so leased");
    }
    let pending: BTreeSet<String> = ints(
        &db,
        "SELECT id FROM forward_deliveries WHERE status = 'pending'",
    )
    .await
    .into_iter()
    .map(|r| format!("fwd_{}", r[0]))
    .collect();
    let sent_before_restart = application.ids().len();

    let restarted = start(&url, &config).await;
    until(
        "every forward delivery delivered",
        Duration::from_secs(90),
        async || {
            count(
                &db,
                "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
            )
            .await
                == applied as i64
        },
    )
    .await;
    drop(restarted);

    assert_eq!(
        count(&db, "SELECT count(*) FROM forward_deliveries").await,
        applied as i64,
        "one forward delivery per applied event"
    );
    let rows = row_ids(&db).await;
    let ids = application.ids();
    let received: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(
        received, rows,
        "each row's webhook-id arrived, and no other"
    );
    let mut times = BTreeMap::<&str, usize>::new();
    for id in &ids {
        *times.entry(id.as_str()).or_default() += 1;
    }
    let twice: Vec<&str> = times
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| *id)
        .collect();
    for id in &in_flight {
        assert!(
            twice.contains(&id.as_str()),
            "{id} was answered after the kill, so it was sent again"
        );
    }
    for id in &twice {
        assert!(
            leased.contains_key(*id),
            "{id} was sent twice, so it was leased at the kill"
        );
    }
    // One recorded 2xx per row: the answers the dead process never recorded left nothing.
    assert_eq!(
        ints(
            &db,
            "SELECT count(*), count(DISTINCT delivery_id) FROM forward_attempts WHERE status_code = 200"
        )
        .await,
        [vec![applied as i64, applied as i64]]
    );
    // Rows unleased at the kill were taken at once; the leased ones only after their lease.
    let delivered: BTreeMap<String, i64> = ints(
        &db,
        &format!("SELECT id, {} FROM forward_deliveries", ms("delivered_at")),
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), r[1]))
    .collect();
    let first_lease_end = leased.values().min().copied().expect("a leased row");
    for id in &pending {
        let at = delivered[id];
        match leased.get(id) {
            Some(lease_end) => assert!(
                at > *lease_end,
                "{id} was attempted again before its lease ended"
            ),
            None => assert!(
                at < first_lease_end,
                "{id} was pending but not leased, yet waited for the leases to end"
            ),
        }
    }
    println!(
        "killed with {delivered_at_kill} delivered, {pending_at_kill} pending ({} leased, {} in flight); \
         {sent_before_restart} requests before the restart, {} in all; sent twice: {twice:?}; \
         {} pending rows unleased, delivered before the first lease ended",
        leased.len(),
        in_flight.len(),
        ids.len(),
        pending.len() - leased.len(),
    );
}
