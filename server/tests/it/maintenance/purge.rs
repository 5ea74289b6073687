//! Archive retention: a purge deletes only rows older than the retention, in batches, and
//! deliveries are applied while it runs.

use super::*;

both_backends!(purge_deletes_only_archive_rows_older_than_the_retention_in_batches);
async fn purge_deletes_only_archive_rows_older_than_the_retention_in_batches(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let long_ago = Utc::now() - Duration::days(100);
    let mut first_old_archive_id = None;
    for i in 0..250_i64 {
        let body = event(
            &format!("old-{i}"),
            &format!("order-{}", i % 10),
            i / 10 + 1,
            &format!(r#"{{"i":{i}}}"#),
        );
        let recorded = deliver(db, &body, long_ago + Duration::seconds(i), None).await;
        first_old_archive_id.get_or_insert(recorded.archive_id);
    }
    for i in 0..5_i64 {
        let body = event(&format!("new-{i}"), "order-new", i + 1, "{}");
        deliver(db, &body, Utc::now(), None).await;
    }
    // A replay today of a delivery about to be purged.
    let replay = deliver(
        db,
        &event("old-0", "order-0", 1, r#"{"i":0}"#),
        Utc::now(),
        first_old_archive_id,
    )
    .await;
    assert_eq!(replay.outcome, Outcome::Duplicate);

    let one_batch = purge_batch(&db.dashboard, cutoff(), 40)
        .await
        .expect("one batch");
    let rest = purge_archive(db, cutoff(), 40).await.expect("purge");
    let again = purge_archive(db, cutoff(), 40).await.expect("purge again");

    assert_eq!((one_batch, rest, again), (40, 210, 0), "{backend:?}");
    assert_eq!(
        count(db, "SELECT count(*) FROM webhook_events").await,
        6,
        "{backend:?}: the five recent deliveries and the replay stay"
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM webhook_events WHERE event_id LIKE 'old-%' AND replay_of IS NULL"
        )
        .await,
        1,
        "{backend:?}: the replay stays, its replay_of cleared"
    );
    assert_eq!(
        count(db, "SELECT count(*) FROM webhook_inbox").await,
        255,
        "{backend:?}: the inbox is never purged"
    );
    assert_eq!(
        count(db, "SELECT count(*) FROM object_state").await,
        11,
        "{backend:?}: the projection is never purged"
    );
    assert_eq!(current_revision(db, "shop", "order-9").await, Some(25));
}

/// `n` archive rows received 100 days ago, written directly (PostgreSQL).
async fn seed_old_archive_rows(db: &Db, n: i64) {
    execute(
        db,
        &format!(
            "INSERT INTO webhook_events (source, event_id, object_id, revision, status, outcome,
                                         headers, body, received_at)
             SELECT 'shop', 'seed-' || g, 'seed-object-' || (g % 100), g, 'processed', 'applied',
                    '{{}}', convert_to(repeat('x', 200), 'UTF8'),
                    now() - interval '100 days' + g * interval '1 millisecond'
             FROM generate_series(1, {n}) AS g"
        ),
    )
    .await;
}

#[tokio::test]
async fn deliveries_are_applied_while_a_purge_runs_and_never_wait_for_its_batch() {
    let app = spawn_app(Backend::Postgres).await;
    let db = app.db.clone();
    seed_old_archive_rows(&db, 3000).await;

    // A purge batch held open: its row locks are on old archive rows only, so a delivery about an
    // object whose old rows it holds is answered while it is still open.
    let held = ingest::begin(&db).await.expect("begin");
    assert_eq!(purge_batch(&held, cutoff(), 100).await.expect("batch"), 100);
    let during_batch = app
        .send("shop", &event("fresh-0", "seed-object-0", 1, "{}"))
        .await;
    assert_eq!(during_batch.outcome(), "applied", "{:?}", during_batch.body);
    held.commit().await.expect("commit the batch");

    let purge_db = db.clone();
    let purge = tokio::spawn(async move {
        purge_archive(&purge_db, cutoff(), 100)
            .await
            .expect("purge")
    });
    let sends = (1..=40).map(|i| {
        let client = app.clone_handle();
        tokio::spawn(async move {
            client
                .send(
                    "shop",
                    &event(&format!("fresh-{i}"), &format!("seed-object-{i}"), 1, "{}"),
                )
                .await
        })
    });
    let answers: Vec<Answer> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .collect();
    let purged = purge.await.expect("purge task");

    assert!(
        answers.iter().all(|a| a.outcome() == "applied"),
        "{answers:?}"
    );
    assert_eq!(purged, 2900);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM webhook_events WHERE event_id LIKE 'seed-%'"
        )
        .await,
        0
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM webhook_events WHERE event_id LIKE 'fresh-%'"
        )
        .await,
        41
    );
    assert_eq!(count(&db, "SELECT count(*) FROM webhook_inbox").await, 41);
    assert_eq!(count(&db, "SELECT count(*) FROM object_state").await, 41);
}

/// Measures a batched purge of 500,000 of 1,000,000 archive rows and the latency of deliveries
/// sent meanwhile. Run by hand:
/// `cargo nextest run -p server --test it --run-ignored only --no-capture maintenance::purge::measure`.
#[tokio::test]
#[ignore = "a measurement, minutes long"]
async fn measure_a_batched_purge_of_half_a_million_rows_under_ingest() {
    let app = spawn_app(Backend::Postgres).await;
    let db = app.db.clone();
    let seeding = Instant::now();
    execute(
        &db,
        "INSERT INTO webhook_events (source, event_id, object_id, revision, status, outcome,
                                     headers, body, received_at)
         SELECT 'shop', 'seed-' || g, 'seed-object-' || (g % 10000), g, 'processed', 'applied',
                '{\"content-type\":\"application/json\"}', convert_to(repeat('x', 300), 'UTF8'),
                CASE WHEN g % 2 = 0 THEN now() - interval '100 days' - g * interval '1 second'
                     ELSE now() - g * interval '1 second' END
         FROM generate_series(1, 1000000) AS g",
    )
    .await;
    execute(&db, "VACUUM ANALYZE webhook_events").await;
    println!("seeded 1,000,000 archive rows in {:?}", seeding.elapsed());

    let latencies = |n: usize, prefix: &'static str, app: TestApp| async move {
        let mut took = Vec::with_capacity(n);
        for i in 0..n {
            let started = Instant::now();
            let answer = app
                .send(
                    "shop",
                    &event(
                        &format!("{prefix}-{i}"),
                        &format!("{prefix}-{}", i % 50),
                        (i / 50 + 1) as i64,
                        "{}",
                    ),
                )
                .await;
            took.push(started.elapsed());
            assert_eq!(answer.outcome(), "applied", "{:?}", answer.body);
        }
        took
    };
    let baseline = latencies(300, "baseline", app.clone_handle()).await;

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = {
        let app = app.clone_handle();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut took = Vec::new();
            let mut i = 0_usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let started = Instant::now();
                let answer = app
                    .send(
                        "shop",
                        &event(
                            &format!("during-{i}"),
                            &format!("during-{}", i % 50),
                            (i / 50 + 1) as i64,
                            "{}",
                        ),
                    )
                    .await;
                took.push(started.elapsed());
                assert_eq!(answer.outcome(), "applied", "{:?}", answer.body);
                i += 1;
            }
            took
        })
    };
    let purging = Instant::now();
    let purged = purge_archive(&db, cutoff(), 1000).await.expect("purge");
    let purge_took = purging.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let during = sender.await.expect("sender");

    let summary = |name: &str, mut took: Vec<std::time::Duration>| {
        took.sort();
        let at = |q: f64| took[((took.len() as f64 - 1.0) * q) as usize];
        println!(
            "{name}: {} deliveries, p50 {:?}, p95 {:?}, p99 {:?}, max {:?}",
            took.len(),
            at(0.5),
            at(0.95),
            at(0.99),
            at(1.0)
        );
    };
    println!("purged {purged} rows in batches of 1000 in {purge_took:?}");
    summary("ingest before the purge", baseline);
    summary("ingest during the purge", during);
    assert_eq!(purged, 500_000);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM webhook_events WHERE event_id LIKE 'seed-%'"
        )
        .await,
        500_000
    );
}

both_backends!(purge_deletes_old_forward_deliveries_that_are_done_and_keeps_pending_and_dead_ones);
async fn purge_deletes_old_forward_deliveries_that_are_done_and_keeps_pending_and_dead_ones(
    backend: Backend,
) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let long_ago = Utc::now() - Duration::days(100);
    let mut ids = Vec::new();
    for (status, created_at) in [
        ("delivered", long_ago),
        ("superseded", long_ago),
        ("pending", long_ago),
        ("dead", long_ago),
        ("delivered", Utc::now()),
    ] {
        let row = db
            .writer
            .query_one_raw(sea_orm::Statement::from_sql_and_values(
                db.backend(),
                "INSERT INTO forward_deliveries (destination, source, event_id, status, attempts,
                     next_attempt_at, created_at, received_at, payload)
                 VALUES ('orders-app', 'shop', $1, $2, 1, $3, $3, $3, '{}') RETURNING id",
                vec![status.into(), status.into(), created_at.into()],
            ))
            .await
            .expect("insert")
            .expect("a row");
        let id: i64 = row.try_get("", "id").expect("id");
        db.writer
            .execute_raw(sea_orm::Statement::from_sql_and_values(
                db.backend(),
                "INSERT INTO forward_attempts (delivery_id, attempt, started_at, duration_ms)
                 VALUES ($1, 1, $2, 5)",
                vec![id.into(), created_at.into()],
            ))
            .await
            .expect("attempt");
        ids.push(id);
    }

    let purged = app::maintenance::purge::purge_forwarded(db, cutoff(), 1)
        .await
        .expect("purge");

    assert_eq!(purged, 2, "{backend:?}");
    let kept = texts(
        db,
        "SELECT status FROM forward_deliveries ORDER BY id",
        vec![],
    )
    .await;
    assert_eq!(
        kept,
        [
            vec![Some("pending".to_string())],
            vec![Some("dead".to_string())],
            vec![Some("delivered".to_string())]
        ],
        "{backend:?}"
    );
    assert_eq!(
        count(db, "SELECT count(*) FROM forward_attempts").await,
        3,
        "{backend:?}: the purged rows' attempts went with them"
    );
}
