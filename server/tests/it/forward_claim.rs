//! The forwarder's claim (`app::forward::claim_due`) on rows written here: a round of claims
//! leases each object's greatest pending revision once nothing of the object is in flight,
//! supersedes what a greater revision makes pointless, and leaves alone an object another worker
//! is deciding about.

use crate::support::*;
use app::db::Db;
use chrono::{Duration, Utc};
use sea_orm::{ConnectionTrait, Statement, TransactionTrait, Value};

const DESTINATION: &str = "orders-app";
const LEASE: std::time::Duration = std::time::Duration::from_secs(60);

/// A forward row of `object` (none: a dedup source's event) at `revision`, in `status`, due a
/// second ago (`lease` seconds from now: leased by another worker); returns its id.
async fn forward_row(
    db: &Db,
    object: Option<&str>,
    revision: Option<i64>,
    status: &str,
    lease: Option<i64>,
) -> i64 {
    let now = Utc::now();
    let lease_until = lease.map(|secs| now + Duration::seconds(secs));
    let event_id = format!("e-{}-{}", object.unwrap_or("none"), rand::random::<u32>());
    let values: Vec<Value> = vec![
        DESTINATION.into(),
        event_id.into(),
        object.into(),
        revision.into(),
        status.into(),
        (now - Duration::seconds(1)).into(),
        lease_until.into(),
        lease_until.map(|_| "another-worker").into(),
    ];
    db.writer
        .query_one_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO forward_deliveries (destination, source, event_id, object_id, revision,
                 status, attempts, next_attempt_at, created_at, received_at, payload, lease_until, leased_by)
             VALUES ($1, 'shop', $2, $3, $4, $5, 0, $6, $6, $6, '{}', $7, $8)
             RETURNING id",
            values,
        ))
        .await
        .expect("insert")
        .expect("a row")
        .try_get::<i64>("", "id")
        .expect("id")
}

/// (status, leased by) of the row `id`.
async fn state(db: &Db, id: i64) -> (String, Option<String>) {
    let row = texts(
        db,
        "SELECT status, leased_by FROM forward_deliveries WHERE id = $1",
        vec![id.into()],
    )
    .await;
    let row = row.first().expect("the row exists");
    (row[0].clone().expect("status"), row[1].clone())
}

async fn claim(db: &Db, limit: usize) -> Vec<i64> {
    app::forward::claim_due(db, &[DESTINATION], "this-worker", LEASE, limit)
        .await
        .expect("claim")
        .iter()
        .map(|c| c.id)
        .collect()
}

fn leased() -> (String, Option<String>) {
    ("pending".into(), Some("this-worker".into()))
}

fn waiting() -> (String, Option<String>) {
    ("pending".into(), None)
}

fn superseded() -> (String, Option<String>) {
    ("superseded".into(), None)
}

both_backends!(
    one_round_leases_each_objects_greatest_revision_and_supersedes_what_a_greater_one_makes_pointless
);
async fn one_round_leases_each_objects_greatest_revision_and_supersedes_what_a_greater_one_makes_pointless(
    backend: Backend,
) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    // order-a: three pending revisions.
    let a1 = forward_row(db, Some("order-a"), Some(1), "pending", None).await;
    let a3 = forward_row(db, Some("order-a"), Some(3), "pending", None).await;
    let a2 = forward_row(db, Some("order-a"), Some(2), "pending", None).await;
    // order-b: a greater revision was delivered already, another is dead.
    let b2 = forward_row(db, Some("order-b"), Some(2), "pending", None).await;
    forward_row(db, Some("order-b"), Some(3), "delivered", None).await;
    let c1 = forward_row(db, Some("order-c"), Some(1), "pending", None).await;
    forward_row(db, Some("order-c"), Some(2), "dead", None).await;
    // order-d: an attempt of revision 1 is in flight (another worker's lease).
    let d1 = forward_row(db, Some("order-d"), Some(1), "pending", Some(30)).await;
    let d2 = forward_row(db, Some("order-d"), Some(2), "pending", None).await;
    // order-e: the same revision twice (replayed): one is sent, the other waits its turn.
    let e7 = forward_row(db, Some("order-e"), Some(7), "pending", None).await;
    let e7_again = forward_row(db, Some("order-e"), Some(7), "pending", None).await;
    // A dedup source's events: no order between them, all sent.
    let x = forward_row(db, None, None, "pending", None).await;
    let y = forward_row(db, None, None, "pending", None).await;

    let mut claimed = claim(db, 32).await;
    claimed.sort();
    let mut expected = vec![a3, e7, x, y];
    expected.sort();
    assert_eq!(claimed, expected, "the rows one round may send");

    for (id, expected) in [
        (a1, superseded()),
        (a2, superseded()),
        (a3, leased()),
        (b2, superseded()),
        (c1, superseded()),
        (d1, ("pending".into(), Some("another-worker".into()))),
        (d2, waiting()),
        (e7, leased()),
        (e7_again, waiting()),
        (x, leased()),
        (y, leased()),
    ] {
        assert_eq!(state(db, id).await, expected, "row {id}");
    }

    // The next round: order-e's second row waits for the first's attempt, order-d's for the
    // other worker's; nothing is claimed twice.
    assert_eq!(claim(db, 32).await, Vec::<i64>::new());
}

both_backends!(a_round_claims_at_most_its_limit_in_the_order_rows_came_due);
async fn a_round_claims_at_most_its_limit_in_the_order_rows_came_due(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(forward_row(db, Some(&format!("order-{n}")), Some(1), "pending", None).await);
    }
    assert_eq!(claim(db, 2).await, ids[..2].to_vec());
    assert_eq!(claim(db, 2).await, ids[2..4].to_vec());
    assert_eq!(claim(db, 2).await, ids[4..].to_vec());
    assert_eq!(claim(db, 2).await, Vec::<i64>::new());
}

#[tokio::test]
async fn on_postgresql_an_object_another_worker_is_deciding_about_is_left_for_the_next_round() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let busy = forward_row(db, Some("order-busy"), Some(1), "pending", None).await;
    let free = forward_row(db, Some("order-free"), Some(1), "pending", None).await;
    let locked_row = forward_row(db, Some("order-row"), Some(1), "pending", None).await;

    // Another worker mid-claim: it holds order-busy's object lock and order-row's row lock.
    let other = db.writer.begin().await.expect("begin");
    other
        .execute_raw(Statement::from_string(
            db.backend(),
            "SELECT pg_advisory_xact_lock(hashtextextended('orders-app/shop/order-busy', 0))",
        ))
        .await
        .expect("object lock");
    other
        .execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "SELECT id FROM forward_deliveries WHERE id = $1 FOR UPDATE",
            vec![locked_row.into()],
        ))
        .await
        .expect("row lock");

    // The round neither waits for it nor takes what it holds.
    let round = tokio::time::timeout(std::time::Duration::from_secs(10), claim(db, 32))
        .await
        .expect("the claim does not wait for the other worker");
    assert_eq!(round, vec![free]);
    assert_eq!(state(db, busy).await, waiting());
    assert_eq!(state(db, locked_row).await, waiting());

    // Once the other worker is done, the next round takes them.
    other.commit().await.expect("commit");
    assert_eq!(claim(db, 32).await, vec![busy, locked_row]);
}

#[tokio::test]
async fn a_recorded_attempt_on_postgresql_writes_the_attempt_the_row_and_the_destinations_error_together()
 {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let id = forward_row(db, Some("order-a"), Some(1), "pending", None).await;
    let claimed = app::forward::claim_due(db, &[DESTINATION], "this-worker", LEASE, 1)
        .await
        .expect("claim")
        .pop()
        .expect("claimed");
    let destination = app::config::Config::parse(
        &format!(
            "[[destinations]]\nname = \"{DESTINATION}\"\nurl = \"http://127.0.0.1:9/\"\nsecret_env = \"DESTINATION_SECRET\"\nretry_schedule_secs = [5]\n"
        ),
        std::path::Path::new("claim.toml"),
        &test_env,
    )
    .expect("config")
    .destinations
    .remove(0);
    let result = app::forward::AttemptResult {
        started_at: Utc::now(),
        duration_ms: 12,
        status_code: Some(503),
        error: Some("answered 503".into()),
        response_excerpt: Some("busy".into()),
        retry_after_secs: Some(30),
    };
    let after = app::forward::record_attempt(db, &destination, &claimed, &result)
        .await
        .expect("recorded");
    assert!(matches!(after, app::forward::AfterAttempt::Retry(_)));
    assert_eq!(
        texts(
            db,
            "SELECT status, attempts::text, last_status_code::text, last_error, leased_by,
                    (next_attempt_at > now() + interval '25 seconds')::text
             FROM forward_deliveries WHERE id = $1",
            vec![id.into()],
        )
        .await,
        vec![vec![
            Some("pending".into()),
            Some("1".into()),
            Some("503".into()),
            Some("answered 503".into()),
            None,
            Some("true".into()),
        ]]
    );
    assert_eq!(
        texts(
            db,
            "SELECT attempt::text, status_code::text, error, response_excerpt, duration_ms::text
             FROM forward_attempts WHERE delivery_id = $1",
            vec![id.into()],
        )
        .await,
        vec![vec![
            Some("1".into()),
            Some("503".into()),
            Some("answered 503".into()),
            Some("busy".into()),
            Some("12".into()),
        ]]
    );
    assert_eq!(
        texts(
            db,
            "SELECT last_error, last_status_code::text FROM forward_destinations WHERE destination = $1",
            vec![DESTINATION.into()],
        )
        .await,
        vec![vec![Some("answered 503".into()), Some("503".into())]]
    );
}

#[tokio::test]
async fn on_postgresql_a_round_looks_for_greater_revisions_in_each_candidates_object_whatever_the_days_table_holds()
 {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    // Today's table grew by thousands of rows since it was last analyzed (never, here): each
    // row a delivered revision 2 of its own object.
    db.writer
        .execute_unprepared(
            "INSERT INTO forward_deliveries (destination, source, event_id, object_id, revision,
                 status, attempts, next_attempt_at, created_at, received_at, payload)
             SELECT 'orders-app', 'shop', 'e-old-' || n, 'order-' || n, 2, 'delivered', 1,
                    now(), now(), now(), '{}'
             FROM generate_series(1, 5000) AS n",
        )
        .await
        .expect("a day of delivered rows");
    let mut beaten = Vec::new();
    let mut newest = Vec::new();
    for n in 1..=8 {
        let object = format!("order-{n}");
        beaten.push(forward_row(db, Some(&object), Some(1), "pending", None).await);
        let object = format!("order-new-{n}");
        newest.push(forward_row(db, Some(&object), Some(1), "pending", None).await);
    }

    // Each candidate's greater revisions are looked for by its object in each day's index, a
    // subquery per candidate: never a join that reads today's table whole.
    let dialect = app::db::dialect::Dialect::Postgres;
    let candidates: Vec<i64> = beaten.iter().chain(&newest).copied().collect();
    let plan: Vec<String> = db
        .writer
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            format!(
                "EXPLAIN {}",
                app::forward::claim::supersede_statement(dialect)
            ),
            vec![dialect.id_list(&candidates).into()],
        ))
        .await
        .expect("explain")
        .iter()
        .map(|r| r.try_get_by_index::<String>(0).expect("a plan line"))
        .collect();
    let plan = plan.join("\n");
    let today = format!("forward_deliveries_d{}", Utc::now().format("%Y%m%d"));
    assert!(plan.contains("SubPlan"), "{plan}");
    assert!(!plan.contains("Hash"), "{plan}");
    assert!(!plan.contains(&format!("Seq Scan on {today}")), "{plan}");
    let on_today: Vec<&str> = plan
        .lines()
        .filter(|line| line.contains(&format!(" on {today} ")))
        .collect();
    assert!(
        on_today
            .iter()
            .any(|line| line.contains("object_id_r_idx on")),
        "{plan}"
    );
    assert!(
        on_today.iter().all(|line| !line.contains("event_id")),
        "{plan}"
    );

    // And the round decides as it did: the beaten revisions superseded, the others leased.
    let mut round = claim(db, 32).await;
    round.sort();
    assert_eq!(round, newest);
    for id in beaten {
        assert_eq!(state(db, id).await, superseded());
    }
}
