//! Three processes claiming forward deliveries from one database: 300 events delivered, no
//! `webhook-id` sent twice.

use super::*;

#[tokio::test]
async fn three_processes_deliver_300_events_with_no_webhook_id_sent_twice() {
    let (db, url) = fresh_postgres(&cluster_url()).await;
    let application = Application::start(Duration::from_millis(5)).await;
    let config = config(&application.url, 2, "[1, 1, 1]", "");
    let mut processes = [
        start(&url, &config).await,
        start(&url, &config).await,
        start(&url, &config).await,
    ];
    let addrs: Vec<SocketAddr> = processes.iter().map(|p| p.addr).collect();

    let applied = send_events(&addrs, 300).await;
    until(
        "300 deliveries delivered",
        Duration::from_secs(60),
        async || {
            count(
                &db,
                "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
            )
            .await
                == 300
        },
    )
    .await;
    // Each lets its attempts in flight finish and exits: a second send of a row would have come.
    for process in &mut processes {
        assert_eq!(process.terminate().await.code(), Some(0));
    }

    assert_eq!(applied, 300);
    assert_eq!(
        count(&db, "SELECT count(*) FROM forward_deliveries").await,
        300
    );
    let ids = application.ids();
    let distinct: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(ids.len(), 300, "300 requests");
    assert_eq!(distinct.len(), 300, "300 distinct webhook-ids");
    assert_eq!(distinct, row_ids(&db).await, "one per row");
    assert_eq!(
        ints(
            &db,
            "SELECT count(*), count(DISTINCT delivery_id), min(status_code)::bigint, max(status_code)::bigint
             FROM forward_attempts"
        )
        .await,
        [vec![300, 300, 200, 200]],
        "one attempt per row, answered 200"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries WHERE attempts <> 1 OR lease_until IS NOT NULL"
        )
        .await,
        0
    );
    let per_process: Vec<usize> = processes
        .iter()
        .map(|p| {
            p.logged("forward attempt")
                .iter()
                .filter(|f| f["result"] == "delivered")
                .count()
        })
        .collect();
    println!("attempts logged per process: {per_process:?}");
}
