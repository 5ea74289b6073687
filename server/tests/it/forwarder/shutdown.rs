//! Forwarding at shutdown: an attempt in flight finishes and is recorded, and one longer than the
//! grace period is abandoned with its delivery still due.

use super::*;

/// A connection of the test's own to the app's database (the server closes its pools when it
/// stops).
async fn own_connection(app: &TestApp) -> app::db::Db {
    let url = &app.test_db.as_ref().expect("a test database").url;
    app::db::Db::connect(url).await.expect("connect")
}

/// Waits until nothing listens at `addr`: the server stopped accepting.
async fn until_refused(addr: std::net::SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(addr).is_ok() {
        assert!(Instant::now() < deadline, "still accepting");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

both_backends!(at_shutdown_an_attempt_in_flight_finishes_and_is_recorded);
async fn at_shutdown_an_attempt_in_flight_finishes_and_is_recorded(backend: Backend) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.delay.lock().unwrap() = Duration::from_secs(2);
    let mut app = spawn_app_with(backend, config_timeout(&url, 10, "[60]")).await;
    let db = own_connection(&app).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    receiver.wait_for(1).await;

    app.shut_down();
    until_refused(app.addr).await;
    // Shutdown is under way and the attempt still waits for its answer.
    assert_eq!(count(&db, "SELECT count(*) FROM forward_attempts").await, 0);

    wait_for_count(
        &db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered' AND lease_until IS NULL",
        1,
    )
    .await;
    assert_eq!(
        texts(
            &db,
            "SELECT CAST(status_code AS TEXT), error FROM forward_attempts",
            vec![]
        )
        .await,
        [vec![Some("200".into()), None]]
    );
    assert_eq!(receiver.got().len(), 1);
}

both_backends!(an_attempt_longer_than_the_grace_period_is_abandoned_and_its_delivery_stays_due);
async fn an_attempt_longer_than_the_grace_period_is_abandoned_and_its_delivery_stays_due(
    backend: Backend,
) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    *receiver.delay.lock().unwrap() = Duration::from_secs(30);
    let mut app = spawn_app_with_state(backend, config_timeout(&url, 60, "[60]"), |state| {
        let mut settings = (*state.settings).clone();
        settings.shutdown_grace = Duration::from_millis(300);
        state.settings = Arc::new(settings);
    })
    .await;
    let db = own_connection(&app).await;
    app.send("shop", &event("e1", "order-1", 1, "{}")).await;
    receiver.wait_for(1).await;
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries WHERE lease_until IS NOT NULL"
        )
        .await,
        1,
        "claimed"
    );

    app.shut_down();

    // The claim is given up: the delivery is due again at once, for another process or the
    // next start, and nothing was recorded as answered.
    wait_for_count(
        &db,
        "SELECT count(*) FROM forward_deliveries WHERE lease_until IS NULL",
        1,
    )
    .await;
    assert_eq!(
        texts(
            &db,
            "SELECT status, CAST(attempts AS TEXT) FROM forward_deliveries",
            vec![]
        )
        .await,
        [vec![Some("pending".into()), Some("0".into())]]
    );
    assert_eq!(count(&db, "SELECT count(*) FROM forward_attempts").await, 0);
}
