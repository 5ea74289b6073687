//! The database stopped under the forwarder: it waits and resumes, never marking a delivery
//! delivered that it could not record.

use super::*;

#[tokio::test]
async fn a_stopped_database_makes_the_forwarder_wait_and_resume_never_marking_delivered() {
    const ROWS: i64 = 6;
    let (cluster, db, url) = Cluster::start("hookbox-forward-outage").await;
    let application = Application::start(Duration::ZERO).await;
    application.set_down(true);
    // Waits of 1 s, enough of them that no row dies during the test; the lease is 5 + 30 s.
    let schedule = format!("[{}]", vec!["1"; 60].join(", "));
    let process = start(&url, &config(&application.url, 5, &schedule, "")).await;

    send_events(&[process.addr], ROWS as usize).await;
    // With the database up, the failed attempts are recorded.
    until(
        "a failed attempt of every row",
        Duration::from_secs(20),
        async || {
            count(
                &db,
                "SELECT count(DISTINCT delivery_id) FROM forward_attempts WHERE status_code = 500",
            )
            .await
                == ROWS
        },
    )
    .await;
    // The next attempts of half the rows wait in the application while the database stops; all
    // the others are recorded first and put off for 10 s (their waits are 1 s), so nothing else
    // is in flight or comes due while the database stops.
    let rows = row_ids(&db).await;
    let to_hold: BTreeSet<String> = rows.iter().take(ROWS as usize / 2).cloned().collect();
    let others: Vec<String> = rows
        .iter()
        .filter(|id| !to_hold.contains(*id))
        .map(|id| id.trim_start_matches("fwd_").to_string())
        .collect();
    let others = others.join(", ");
    application.hold(to_hold);
    until(
        "attempts held, the others recorded and put off",
        Duration::from_secs(20),
        async || {
            db.dashboard
                .execute_raw(Statement::from_string(
                    DatabaseBackend::Postgres,
                    format!(
                        "UPDATE forward_deliveries SET next_attempt_at = now() + interval '10 seconds'
                         WHERE id IN ({others}) AND lease_until IS NULL"
                    ),
                ))
                .await
                .unwrap();
            let (got, held) = application.got_and_held();
            held > 0
                && count(&db, "SELECT count(*) FROM forward_attempts").await == (got - held) as i64
                && count(
                    &db,
                    &format!(
                        "SELECT count(*) FROM forward_deliveries WHERE id IN ({others}) AND lease_until IS NOT NULL"
                    ),
                )
                .await
                    == 0
        },
    )
    .await;
    let recorded_before = ints(
        &db,
        "SELECT delivery_id, count(*) FROM forward_attempts GROUP BY delivery_id",
    )
    .await;
    let stopping = chrono::Utc::now();
    cluster.run("stop");
    let held = application.release();
    let sent_at_release = application.ids().len();
    let not_recorded = async || -> BTreeSet<String> {
        process
            .logged("forward attempt not recorded")
            .iter()
            .map(|f| format!("fwd_{}", f["delivery"]))
            .collect()
    };
    until(
        "the held attempts not recorded",
        Duration::from_secs(30),
        async || not_recorded().await.len() >= held.len(),
    )
    .await;
    assert_eq!(
        not_recorded().await,
        held.iter().cloned().collect::<BTreeSet<String>>(),
        "the attempts answered while the database was down are the ones not recorded"
    );
    // The forwarder keeps trying to claim, and sends nothing while it cannot.
    let failed_claims = process.logged("forwarder: cannot claim").len();
    until("claims failing", Duration::from_secs(30), async || {
        process.logged("forwarder: cannot claim").len() >= failed_claims + 2
    })
    .await;
    assert_eq!(
        application.ids().len(),
        sent_at_release,
        "nothing sent while the database is down"
    );

    let resuming = chrono::Utc::now();
    cluster.run("resume");
    // It resumes by itself: every row not leased is attempted again and its failure recorded (the
    // application is still down).
    until(
        "attempts recorded after the restart",
        Duration::from_secs(30),
        async || {
            scalar(
                &db,
                "SELECT count(DISTINCT delivery_id) FROM forward_attempts WHERE started_at > $1",
                vec![resuming.into()],
            )
            .await
            .unwrap_or(0)
                >= ROWS - held.len() as i64
        },
    )
    .await;
    assert_eq!(
        scalar(
            &db,
            "SELECT count(*) FROM forward_attempts WHERE started_at >= $1 AND started_at < $2",
            vec![stopping.into(), resuming.into()],
        )
        .await,
        Some(0),
        "nothing attempted while the database was down was recorded"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries WHERE status = 'pending'"
        )
        .await,
        ROWS,
        "none delivered (nor dead) while the application is down"
    );
    // The rows whose attempt went unrecorded keep their lease: not attempted again yet.
    let leases: BTreeMap<String, i64> = ints(
        &db,
        &format!(
            "SELECT id, {} FROM forward_deliveries WHERE lease_until > now()",
            ms("lease_until")
        ),
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), r[1]))
    .collect();
    for id in &held {
        assert!(leases.contains_key(id), "{id} is still leased: {leases:?}");
        assert_eq!(
            application.ids().iter().filter(|x| *x == id).count(),
            ids_before(&recorded_before, id) + 1,
            "{id} not sent again within its lease"
        );
    }

    application.set_down(false);
    until("every row delivered", Duration::from_secs(90), async || {
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        )
        .await
            == ROWS
    })
    .await;

    // Every request was recorded as an attempt, but the ones answered while the database was down.
    let recorded: BTreeMap<String, (i64, i64)> = ints(
        &db,
        "SELECT d.id, d.attempts::bigint, count(a.attempt) FROM forward_deliveries d
         JOIN forward_attempts a ON a.delivery_id = d.id GROUP BY d.id, d.attempts",
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), (r[1], r[2])))
    .collect();
    let ids = application.ids();
    assert_eq!(recorded.len() as i64, ROWS);
    for (id, (attempts, rows)) in &recorded {
        assert_eq!(
            attempts, rows,
            "{id}: its attempts column counts its attempts"
        );
        let sent = ids.iter().filter(|x| *x == id).count() as i64;
        let lost = i64::from(held.contains(id));
        assert_eq!(sent, rows + lost, "{id}: {sent} requests, {rows} recorded");
    }
    assert_eq!(
        ints(
            &db,
            "SELECT count(*), count(DISTINCT delivery_id) FROM forward_attempts WHERE status_code = 200"
        )
        .await,
        [vec![ROWS, ROWS]],
        "one 2xx per row, its last attempt"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM forward_deliveries d WHERE last_status_code = 200
               AND attempts = (SELECT max(attempt) FROM forward_attempts a
                               WHERE a.delivery_id = d.id AND a.status_code = 200)"
        )
        .await,
        ROWS
    );
    let delivered_at: BTreeMap<String, i64> = ints(
        &db,
        &format!("SELECT id, {} FROM forward_deliveries", ms("delivered_at")),
    )
    .await
    .into_iter()
    .map(|r| (format!("fwd_{}", r[0]), r[1]))
    .collect();
    for id in &held {
        assert!(
            delivered_at[id] > leases[id],
            "{id} was sent again only after its lease"
        );
    }
    println!(
        "held while the database stopped: {held:?}; {} requests in all",
        ids.len()
    );
}

/// How many attempts of the row `id` were recorded before the database stopped.
fn ids_before(recorded: &[Vec<i64>], id: &str) -> usize {
    recorded
        .iter()
        .find(|r| format!("fwd_{}", r[0]) == id)
        .map_or(0, |r| r[1] as usize)
}
