//! Races between deliveries. Waits are proven with `pg_blocking_pids`, never assumed from a sleep.

use crate::support::*;
use app::db::Db;
use app::envelope::{Envelope, Mapping, parse_envelope};
use app::ingest::{self, Outcome, Received};
use sea_orm::{ConnectionTrait, DatabaseTransaction, Statement, TransactionTrait};

fn envelope(body: &str) -> Envelope {
    parse_envelope(
        &Mapping::snapshot_envelope(),
        &http::HeaderMap::new(),
        body.as_bytes(),
    )
    .expect("valid envelope")
}

fn received(body: &str) -> Received<'_> {
    Received {
        source: "shop",
        headers_json: "{}",
        body: body.as_bytes(),
        body_fields: None,
        received_at: chrono::Utc::now(),
        replay_of: None,
        replayed_by: None,
        signed_body_digest: None,
        forward_to: &[],
    }
}

/// Runs a delivery's transaction up to, not including, its commit.
pub(crate) async fn hold(db: &Db, body: &str) -> (DatabaseTransaction, Outcome, i32) {
    let txn = ingest::begin(db).await.expect("begin");
    let recorded = ingest::apply_in(
        &txn,
        app::envelope::Mode::Snapshot,
        &received(body),
        &envelope(body),
    )
    .await
    .expect("apply");
    let pid = crate::support::backend_pid(&txn).await;
    (txn, recorded.outcome, pid)
}

async fn lock_order_case(held_revision: i64, waiting_revision: i64) -> (Outcome, Option<i64>) {
    let test_db = test_db(Backend::Postgres).await;
    let db = test_db.db.clone();
    let held_body = event(
        &format!("e{held_revision}"),
        "order-1",
        held_revision,
        &format!(r#"{{"r":{held_revision}}}"#),
    );
    let (txn, held_outcome, holder) = hold(&db, &held_body).await;
    assert_eq!(
        held_outcome,
        Outcome::Applied {
            revision: held_revision
        }
    );

    let waiting_db = db.clone();
    let waiting = tokio::spawn(async move {
        let body = event(
            &format!("e{waiting_revision}"),
            "order-1",
            waiting_revision,
            &format!(r#"{{"r":{waiting_revision}}}"#),
        );
        ingest::apply_delivery(
            &waiting_db,
            app::envelope::Mode::Snapshot,
            &received(&body),
            &envelope(&body),
        )
        .await
        .expect("waiting delivery")
        .outcome
    });
    wait_until_blocked_by(&db, holder).await;
    assert!(
        !waiting.is_finished(),
        "the second delivery is waiting on the first one's row"
    );
    txn.commit().await.expect("commit the holder");

    let outcome = waiting.await.expect("task");
    (outcome, current_revision(&db, "shop", "order-1").await)
}

#[tokio::test]
async fn a_lower_revision_waiting_on_a_higher_one_ends_stale() {
    let (outcome, current) = lock_order_case(2, 1).await;
    assert_eq!(
        outcome,
        Outcome::Stale {
            revision: 1,
            current_revision: 2
        }
    );
    assert_eq!(current, Some(2));
}

#[tokio::test]
async fn a_higher_revision_waiting_on_a_lower_one_is_applied() {
    let (outcome, current) = lock_order_case(3, 4).await;
    assert_eq!(outcome, Outcome::Applied { revision: 4 });
    assert_eq!(current, Some(4));
}

/// Delivers `body` while `txn` (PostgreSQL backend `holder`) holds what it needs; `txn` commits
/// once a statement starting with `statement` is seen waiting for it.
async fn deliver_once_blocked(
    db: &Db,
    body: &str,
    txn: DatabaseTransaction,
    holder: i32,
    statement: &str,
) -> Result<ingest::Recorded, sea_orm::DbErr> {
    let (received, envelope) = (received(body), envelope(body));
    let (delivered, ()) = tokio::join!(
        ingest::apply_delivery(db, app::envelope::Mode::Snapshot, &received, &envelope),
        async {
            wait_until_statement_blocked_by(db, holder, statement).await;
            txn.commit().await.expect("the holder commits");
        }
    );
    delivered
}

/// A delivery whose claim waits for another delivery of its event id, then finds it committed:
/// the classification, a statement of its own with a snapshot taken after the claim, sees the
/// row the claim met.
async fn waiting_case(retry_body: &str) -> (Outcome, Vec<Vec<Option<String>>>) {
    let test_db = test_db(Backend::Postgres).await;
    let db = test_db.db.clone();
    let first = event("e1", "order-1", 1, r#"{"a":1}"#);
    let (txn, held, holder) = hold(&db, &first).await;
    assert_eq!(held, Outcome::Applied { revision: 1 });
    let retry = deliver_once_blocked(&db, retry_body, txn, holder, "WITH claim AS").await;
    let rows = texts(
        &db,
        "SELECT status, outcome, error_message, (body_of IS NOT NULL)::text
           FROM webhook_events WHERE event_id = 'e1' ORDER BY id",
        vec![],
    )
    .await;
    (retry.expect("the retry is recorded").outcome, rows)
}

#[tokio::test]
async fn a_copy_that_waited_for_its_events_commit_is_a_duplicate_referring_to_its_body() {
    let (outcome, rows) = waiting_case(&event("e1", "order-1", 1, r#"{"a":1}"#)).await;
    assert_eq!(outcome, Outcome::Duplicate);
    let row = |status: &str, outcome: &str, error: Option<&str>, refers: &str| {
        vec![
            Some(status.to_string()),
            Some(outcome.to_string()),
            error.map(str::to_string),
            Some(refers.to_string()),
        ]
    };
    assert_eq!(
        rows,
        vec![
            row("processed", "applied", None, "false"),
            row("skipped", "duplicate", None, "true"),
        ]
    );
}

/// A retry of the event delivered at `first_at`, while the first delivery's archive row is held
/// `FOR UPDATE`: the statement that archives the retry waits for it (it locks the row whose
/// body it refers to), and `archiving` names that statement. The retry is a duplicate that
/// refers to the first delivery's body.
async fn retry_case(first_at: chrono::DateTime<chrono::Utc>, archiving: &str) {
    let test_db = test_db(Backend::Postgres).await;
    let db = test_db.db.clone();
    let day = app::maintenance::partitions::day_number(first_at);
    app::maintenance::partitions::make_days(&db, day, day)
        .await
        .expect("the first delivery's day");
    let body = event("e1", "order-1", 1, r#"{"a":1}"#);
    let mut first = received(&body);
    first.received_at = first_at;
    let first =
        ingest::apply_delivery(&db, app::envelope::Mode::Snapshot, &first, &envelope(&body))
            .await
            .expect("the first delivery");
    assert_eq!(first.outcome, Outcome::Applied { revision: 1 });

    let txn = ingest::begin(&db).await.expect("begin");
    txn.execute_raw(Statement::from_sql_and_values(
        sea_orm::DatabaseBackend::Postgres,
        "SELECT id FROM webhook_events WHERE id = $1 FOR UPDATE",
        vec![first.archive_id.into()],
    ))
    .await
    .expect("the first delivery's row held");
    let holder = backend_pid(&txn).await;
    let retry = deliver_once_blocked(&db, &body, txn, holder, archiving)
        .await
        .expect("the retry is recorded");
    assert_eq!(retry.outcome, Outcome::Duplicate);
    assert_eq!(
        texts(
            &db,
            "SELECT status, outcome, CAST(body_of AS text), CAST(length(body) AS text)
               FROM webhook_events WHERE id = $1",
            vec![retry.archive_id.into()],
        )
        .await,
        vec![vec![
            Some("skipped".into()),
            Some("duplicate".into()),
            Some(first.archive_id.to_string()),
            Some("0".into()),
        ]],
        "the retry refers to the first delivery's body"
    );
}

#[tokio::test]
async fn a_retry_of_an_event_received_today_is_classified_and_archived_in_one_statement() {
    retry_case(chrono::Utc::now(), "WITH met AS").await;
}

#[tokio::test]
async fn a_retry_of_an_event_received_on_an_earlier_day_refers_to_its_body_in_that_days_table() {
    retry_case(
        chrono::Utc::now() - chrono::Duration::days(1),
        "INSERT INTO webhook_events",
    )
    .await;
}

#[tokio::test]
async fn other_content_that_waited_for_its_events_commit_is_a_reused_event_id() {
    let (outcome, rows) = waiting_case(&event("e1", "order-1", 1, r#"{"a":2}"#)).await;
    assert_eq!(outcome, Outcome::ReusedEventId);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        rows[1],
        vec![
            Some("failed".to_string()),
            Some("reused_event_id".to_string()),
            Some("event id was accepted before with other content".to_string()),
            Some("false".to_string()),
        ]
    );
}

#[tokio::test]
async fn a_connection_closed_before_commit_leaves_the_event_unclaimed() {
    let test_db = test_db(Backend::Postgres).await;
    let body = event("e1", "order-1", 1, "{}");
    let doomed = Db::connect(&test_db.url).await.expect("second pool");
    let (txn, _, pid) = hold(&doomed, &body).await;

    // The server ends that connection with its writes uncommitted, as when a process dies.
    let terminated = scalar(
        &test_db.db,
        "SELECT count(*) FROM (SELECT pg_terminate_backend($1)) t",
        vec![pid.into()],
    )
    .await;
    assert_eq!(terminated, Some(1));
    let retry = ingest::apply_delivery(
        &test_db.db,
        app::envelope::Mode::Snapshot,
        &received(&body),
        &envelope(&body),
    )
    .await
    .expect("retry");

    assert_eq!(retry.outcome, Outcome::Applied { revision: 1 });
    assert!(
        txn.commit().await.is_err(),
        "the closed transaction cannot commit any more"
    );
    assert_eq!(
        count(&test_db.db, "SELECT count(*) FROM webhook_inbox").await,
        1
    );
}

#[tokio::test]
async fn a_delivery_committed_before_its_connection_closed_is_a_duplicate_on_retry() {
    let test_db = test_db(Backend::Postgres).await;
    let body = event("e1", "order-1", 1, "{}");
    let first_pool = Db::connect(&test_db.url).await.expect("second pool");
    let first = ingest::apply_delivery(
        &first_pool,
        app::envelope::Mode::Snapshot,
        &received(&body),
        &envelope(&body),
    )
    .await
    .expect("first");
    first_pool.dashboard.close().await.expect("close");

    let retry = ingest::apply_delivery(
        &test_db.db,
        app::envelope::Mode::Snapshot,
        &received(&body),
        &envelope(&body),
    )
    .await
    .expect("retry");

    assert_eq!(
        (first.outcome, retry.outcome),
        (Outcome::Applied { revision: 1 }, Outcome::Duplicate)
    );
}

/// 24 copies of one event at once: exactly one is applied, every other is a recorded duplicate.
async fn concurrent_copies(app: &TestApp, round: usize) {
    let event_id = format!("copy-{round}");
    let body = event(&event_id, &format!("object-{round}"), 1, r#"{"a":1}"#);
    let copies = (0..24).map(|_| {
        let client = app.clone_handle();
        let body = body.clone();
        tokio::spawn(async move { client.send("shop", &body).await })
    });
    let answers: Vec<Answer> = futures::future::join_all(copies)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .collect();
    let applied = answers.iter().filter(|a| a.outcome() == "applied").count();
    let duplicates = answers
        .iter()
        .filter(|a| a.outcome() == "duplicate")
        .count();
    assert_eq!(
        (applied, duplicates),
        (1, 23),
        "round {round}: {:?}",
        answers.iter().map(|a| &a.body).collect::<Vec<_>>()
    );
    assert_eq!(archived(&app.db, "shop", &event_id).await.len(), 24);
}

/// Revisions 1..=12 of one object, shuffled and sent at once: the projection ends at 12.
async fn shuffled_revisions(app: &TestApp, round: usize) {
    use rand::seq::SliceRandom;
    let object_id = format!("shuffled-{round}");
    let mut revisions: Vec<i64> = (1..=12).collect();
    revisions.shuffle(&mut rand::rng());
    let sends = revisions.into_iter().map(|revision| {
        let client = app.clone_handle();
        let body = event(
            &format!("{object_id}-r{revision}"),
            &object_id,
            revision,
            &format!(r#"{{"r":{revision}}}"#),
        );
        tokio::spawn(async move { client.send("shop", &body).await })
    });
    let answers: Vec<Answer> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .collect();
    assert!(
        answers
            .iter()
            .all(|a| matches!(a.outcome(), "applied" | "stale")),
        "round {round}: {answers:?}"
    );
    assert_eq!(
        current_revision(&app.db, "shop", &object_id).await,
        Some(12),
        "round {round}"
    );
    let snapshot_sql = if app.db.backend() == sea_orm::DatabaseBackend::Postgres {
        "SELECT snapshot::text FROM object_state WHERE object_id = $1"
    } else {
        "SELECT snapshot FROM object_state WHERE object_id = $1"
    };
    let snapshot = texts(&app.db, snapshot_sql, vec![object_id.as_str().into()]).await;
    assert_eq!(
        snapshot[0][0].as_deref().map(|s| s.replace(' ', "")),
        Some(r#"{"r":12}"#.to_string())
    );
    assert_eq!(
        count(
            &app.db,
            &format!("SELECT count(*) FROM webhook_inbox WHERE object_id = '{object_id}'")
        )
        .await,
        12
    );
}

both_backends!(concurrent_deliveries_converge_repeated_30_times);
async fn concurrent_deliveries_converge_repeated_30_times(backend: Backend) {
    let app = spawn_app(backend).await;
    for round in 0..30 {
        concurrent_copies(&app, round).await;
        shuffled_revisions(&app, round).await;
    }
}

#[tokio::test]
async fn sqlite_is_never_locked_under_concurrent_writers() {
    let app = spawn_app(Backend::Sqlite).await;
    let sends = (0..64).map(|i| {
        let client = app.clone_handle();
        tokio::spawn(async move {
            client
                .send(
                    "shop",
                    &event(&format!("e{i}"), &format!("o{}", i % 8), i + 1, "{}"),
                )
                .await
        })
    });
    let answers: Vec<Answer> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .collect();
    assert!(
        answers.iter().all(|a| a.status == 200),
        "{:?}",
        answers
            .iter()
            .filter(|a| a.status != 200)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        64
    );
    let _ = app
        .db
        .dashboard
        .begin()
        .await
        .expect("the pool is still usable");
}

/// The lock-order reasoning above assumes READ COMMITTED. hookbox asks for it on every connection,
/// so a database whose default is SERIALIZABLE still runs ingest transactions READ COMMITTED.
#[tokio::test]
async fn ingest_transactions_are_read_committed_whatever_the_database_default() {
    let test_db = test_db(Backend::Postgres).await;
    let name: String = test_db
        .db
        .dashboard
        .query_one_raw(Statement::from_string(
            test_db.db.backend(),
            "SELECT current_database()",
        ))
        .await
        .expect("query")
        .expect("a row")
        .try_get_by_index(0)
        .expect("a name");
    test_db
        .db
        .dashboard
        .execute_unprepared(&format!(
            "ALTER DATABASE \"{name}\" SET default_transaction_isolation = 'serializable'"
        ))
        .await
        .expect("alter the database default");

    let isolation = |db: Db, with_hookbox: bool| async move {
        let txn = if with_hookbox {
            ingest::begin(&db).await.expect("begin")
        } else {
            db.dashboard.begin().await.expect("begin")
        };
        let level: String = txn
            .query_one_raw(Statement::from_string(
                db.backend(),
                "SHOW transaction_isolation",
            ))
            .await
            .expect("query")
            .expect("a row")
            .try_get_by_index(0)
            .expect("a level");
        level
    };
    // A plain connection sees the new default (so the check below can fail)...
    let plain = sea_orm::Database::connect(test_db.url.as_str())
        .await
        .expect("connect without hookbox's options");
    assert_eq!(
        isolation(
            Db {
                writer: plain.clone(),
                dashboard: plain,
                warm: None,
            },
            false
        )
        .await,
        "serializable"
    );
    // ...and hookbox's connections do not.
    let hookbox = Db::connect(&test_db.url).await.expect("connect");
    assert_eq!(isolation(hookbox, true).await, "read committed");
}

#[tokio::test]
async fn a_sqlite_delivery_cut_off_inside_its_transaction_leaves_the_writer_ready_for_the_next() {
    use sea_orm::sqlx::{self, Connection};
    let test_db = test_db(Backend::Sqlite).await;
    let db = test_db.db.clone();
    // Another process holds SQLite's write lock, so the delivery's script stops in its
    // `BEGIN IMMEDIATE`, inside the call, when the request is cut off.
    let mut other = sqlx::SqliteConnection::connect(&test_db.url)
        .await
        .expect("a second connection");
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut other)
        .await
        .expect("take the write lock");
    let writer = db.writer.get_sqlite_connection_pool().clone();
    let cut_db = db.clone();
    let cut = tokio::spawn(async move {
        let body = event("cut", "order-1", 1, "{}");
        ingest::apply_delivery(
            &cut_db,
            app::envelope::Mode::Snapshot,
            &received(&body),
            &envelope(&body),
        )
        .await
    });
    // Proven, not assumed: the delivery holds the pool's one writer connection (nothing else
    // uses it here), and it cannot finish while the lock is held.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !(writer.size() == 1 && writer.num_idle() == 0) {
        assert!(
            std::time::Instant::now() < deadline,
            "the delivery never took the writer"
        );
        tokio::task::yield_now().await;
    }
    assert!(!cut.is_finished());
    cut.abort();
    assert!(cut.await.expect_err("cut off").is_cancelled());
    sqlx::query("COMMIT")
        .execute(&mut other)
        .await
        .expect("release the lock");

    let body = event("next", "order-1", 1, "{}");
    let next = ingest::apply_delivery(
        &db,
        app::envelope::Mode::Snapshot,
        &received(&body),
        &envelope(&body),
    )
    .await
    .expect("the next delivery is recorded, not refused for a transaction left open");
    assert_eq!(next.outcome, Outcome::Applied { revision: 1 });
    assert_eq!(
        texts(
            &db,
            "SELECT event_id FROM webhook_inbox ORDER BY event_id",
            vec![]
        )
        .await,
        [[Some("next".to_string())]],
        "the cut-off delivery committed nothing"
    );
}
