//! Archive retention (`hookbox purge`) and the invariant check (`hookbox verify [--repair]`), on
//! PostgreSQL and SQLite. Waits are proven with `pg_blocking_pids`, never assumed from a sleep.

use crate::support::*;
use app::db::Db;
use app::envelope::{Mode, parse_envelope};
use app::ingest::{self, Outcome, Received, Recorded};
use app::maintenance::purge::{purge_archive, purge_batch, retention_cutoff};
use app::maintenance::verify::{Drift, repair_projection, verify};
use chrono::{DateTime, Duration, SubsecRound, Utc};
use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
use std::time::Instant;

const RETENTION_DAYS: u32 = 90;

/// One snapshot delivery of the `shop` source through the ingest transaction, received at `at`.
async fn deliver(db: &Db, body: &str, at: DateTime<Utc>, replay_of: Option<i64>) -> Recorded {
    let envelope = parse_envelope(
        &app::envelope::Mapping::snapshot_envelope(),
        &http::HeaderMap::new(),
        body.as_bytes(),
    )
    .expect("valid envelope");
    let received = Received {
        source: "shop",
        headers_json: "{}",
        body: body.as_bytes(),
        received_at: at,
        replay_of,
        replayed_by: replay_of.map(|_| "admin"),
        signed_body_digest: None,
    };
    ingest::apply_delivery(db, Mode::Snapshot, &received, &envelope)
        .await
        .expect("delivery recorded")
}

async fn execute(db: &Db, sql: &str) {
    db.conn.execute_unprepared(sql).await.expect("statement");
}

fn cutoff() -> DateTime<Utc> {
    retention_cutoff(Utc::now(), RETENTION_DAYS)
}

/// The projection of an object as (revision, snapshot text without white space).
async fn projection(db: &Db, object_id: &str) -> Option<(i64, String)> {
    let snapshot = if db.backend() == DatabaseBackend::Postgres {
        "snapshot::text"
    } else {
        "snapshot"
    };
    let revision = current_revision(db, "shop", object_id).await?;
    let text = texts(
        db,
        &format!("SELECT {snapshot} FROM object_state WHERE source = 'shop' AND object_id = $1"),
        vec![object_id.into()],
    )
    .await;
    let snapshot = text[0][0].clone().unwrap_or_default().replace(' ', "");
    Some((revision, snapshot))
}

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

    let one_batch = purge_batch(&db.conn, cutoff(), 40)
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

/// Objects A (revisions 1-3), B (1), C (1-2) and D (1, a snapshot with two keys).
async fn four_objects(db: &Db) {
    for (object_id, revisions) in [("A", 3), ("B", 1), ("C", 2)] {
        for revision in 1..=revisions {
            let body = event(
                &format!("{object_id}{revision}"),
                object_id,
                revision,
                &format!(r#"{{"r":{revision}}}"#),
            );
            deliver(db, &body, Utc::now(), None).await;
        }
    }
    deliver(
        db,
        &event("D1", "D", 1, r#"{"a":1,"b":[true,"x"]}"#),
        Utc::now(),
        None,
    )
    .await;
}

both_backends!(verify_reports_corrupted_and_missing_projection_rows_and_repair_rederives_them);
async fn verify_reports_corrupted_and_missing_projection_rows_and_repair_rederives_them(
    backend: Backend,
) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    four_objects(db).await;
    let clean = verify(db, cutoff(), false).await.expect("verify");
    assert_eq!(clean.drifts, vec![], "{backend:?}");

    execute(
        db,
        r#"UPDATE object_state SET revision = 7, snapshot = '{"r":7}' WHERE object_id = 'A'"#,
    )
    .await;
    execute(db, "DELETE FROM object_state WHERE object_id = 'B'").await;
    execute(
        db,
        r#"UPDATE object_state SET snapshot = '{"r":99}' WHERE object_id = 'C'"#,
    )
    .await;
    // The same JSON value written differently is no drift (jsonb equality on both backends).
    execute(
            db,
            r#"UPDATE object_state SET snapshot = '{ "b": [true, "x"], "a": 1.0 }' WHERE object_id = 'D'"#,
        )
        .await;

    let found = verify(db, cutoff(), false).await.expect("verify");
    let expected = vec![
        Drift::ProjectionDiffers {
            source: "shop".into(),
            object_id: "A".into(),
            projected_revision: 7,
            greatest_revision: 3,
        },
        Drift::ProjectionMissing {
            source: "shop".into(),
            object_id: "B".into(),
            greatest_revision: 1,
        },
        Drift::ProjectionDiffers {
            source: "shop".into(),
            object_id: "C".into(),
            projected_revision: 2,
            greatest_revision: 2,
        },
    ];
    assert_eq!(found.drifts, expected, "{backend:?}");
    assert_eq!((found.repaired, found.remaining()), (0, 3));
    assert_eq!(
        projection(db, "A").await,
        Some((7, r#"{"r":7}"#.into())),
        "{backend:?}: without --repair nothing changes"
    );
    assert!(found.drifts[0].to_string().contains("shop/A"));
    assert!(found.drifts[0].to_string().contains("--repair"));

    let repaired = verify(db, cutoff(), true).await.expect("repair");
    assert_eq!(repaired.drifts, expected, "{backend:?}");
    assert_eq!((repaired.repaired, repaired.remaining()), (3, 0));
    assert_eq!(projection(db, "A").await, Some((3, r#"{"r":3}"#.into())));
    assert_eq!(projection(db, "B").await, Some((1, r#"{"r":1}"#.into())));
    assert_eq!(projection(db, "C").await, Some((2, r#"{"r":2}"#.into())));

    let after = verify(db, cutoff(), false).await.expect("verify again");
    assert_eq!(after.drifts, vec![], "{backend:?}");
    assert_eq!(count(db, "SELECT count(*) FROM verify_runs").await, 4);
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM verify_runs WHERE drift_count = 3 AND repaired = 3"
        )
        .await,
        1
    );
    let overview = app::db::overview::overview(db, 1).await.expect("overview");
    let last = overview.last_verify.expect("a recorded run");
    assert_eq!(
        (last.drift_count, last.repaired, last.summary.as_str()),
        (0, 0, "no drift"),
        "{backend:?}"
    );
}

both_backends!(verify_reports_archive_drift_and_repair_leaves_the_records_alone);
async fn verify_reports_archive_drift_and_repair_leaves_the_records_alone(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    deliver(db, &event("e1", "X", 1, "{}"), Utc::now(), None).await;
    deliver(db, &event("e2", "X", 2, "{}"), Utc::now(), None).await;
    deliver(db, &event("e3", "Y", 1, "{}"), Utc::now(), None).await;
    let long_ago = Utc::now() - Duration::days(100);
    deliver(db, &event("purged", "Z", 1, "{}"), long_ago, None).await;
    assert_eq!(purge_archive(db, cutoff(), 10).await.expect("purge"), 1);

    execute(db, "DELETE FROM webhook_events WHERE event_id = 'e1'").await;
    execute(
        db,
        "UPDATE webhook_events SET revision = 5 WHERE event_id = 'e2'",
    )
    .await;
    execute(db, "DELETE FROM webhook_inbox WHERE event_id = 'e3'").await;

    let report = verify(db, cutoff(), true).await.expect("verify");
    let archive_id = |event_id: &str| {
        let db = db.clone();
        let event_id = event_id.to_string();
        async move {
            scalar(
                &db,
                "SELECT id FROM webhook_events WHERE event_id = $1",
                vec![event_id.into()],
            )
            .await
            .expect("archive row")
        }
    };
    assert_eq!(
        report.drifts,
        vec![
            Drift::ProjectionWithoutInbox {
                source: "shop".into(),
                object_id: "Y".into(),
                projected_revision: 1,
            },
            Drift::ArchiveMissing {
                source: "shop".into(),
                event_id: "e1".into(),
            },
            Drift::ArchiveContradicts {
                archive_id: archive_id("e2").await,
                source: "shop".into(),
                event_id: Some("e2".into()),
                outcome: "applied".into(),
                problem: "claims applied at revision 5 but the inbox row holds revision 2".into(),
            },
            Drift::ArchiveContradicts {
                archive_id: archive_id("e3").await,
                source: "shop".into(),
                event_id: Some("e3".into()),
                outcome: "applied".into(),
                problem: "claims applied but the inbox has no row of this event".into(),
            },
        ],
        "{backend:?}: the purged archive row of an old inbox row is no drift"
    );
    assert_eq!((report.repaired, report.remaining()), (0, 4));
    assert_eq!(
        scalar(
            db,
            "SELECT revision FROM webhook_events WHERE event_id = 'e2'",
            vec![]
        )
        .await,
        Some(5),
        "{backend:?}: archive rows are never rewritten"
    );
    assert_eq!(current_revision(db, "shop", "Y").await, Some(1));
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM verify_runs WHERE drift_count = 4 AND repaired = 0"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_repair_waits_for_a_delivery_holding_the_row_and_derives_from_what_it_committed() {
    let test_db = test_db(Backend::Postgres).await;
    let db = test_db.db.clone();
    four_objects(&db).await;
    execute(
        &db,
        r#"UPDATE object_state SET revision = 7, snapshot = '{"r":7}' WHERE object_id = 'A'"#,
    )
    .await;

    // Revision 4 of A, its transaction open: it holds A's projection row (and is stale against
    // the corrupted 7).
    let body = event("A4", "A", 4, r#"{"r":4}"#);
    let envelope = parse_envelope(
        &app::envelope::Mapping::snapshot_envelope(),
        &http::HeaderMap::new(),
        body.as_bytes(),
    )
    .expect("valid envelope");
    let received = Received {
        source: "shop",
        headers_json: "{}",
        body: body.as_bytes(),
        received_at: Utc::now(),
        replay_of: None,
        replayed_by: None,
        signed_body_digest: None,
    };
    let txn = ingest::begin(&db).await.expect("begin");
    let held = ingest::apply_in(&txn, Mode::Snapshot, &received, &envelope)
        .await
        .expect("apply");
    assert_eq!(
        held.outcome,
        Outcome::Stale {
            revision: 4,
            current_revision: 7
        }
    );
    let holder = txn
        .query_one_raw(Statement::from_string(
            DatabaseBackend::Postgres,
            "SELECT pg_backend_pid()",
        ))
        .await
        .expect("pid")
        .expect("row")
        .try_get_by_index::<i32>(0)
        .expect("int");

    let repair_db = db.clone();
    let repair = tokio::spawn(async move {
        repair_projection(&repair_db, "shop", "A")
            .await
            .expect("repair")
    });
    wait_until_blocked_by(&db, holder).await;
    assert!(!repair.is_finished(), "the repair waits on the row lock");
    txn.commit().await.expect("commit the delivery");
    repair.await.expect("repair task");

    assert_eq!(projection(&db, "A").await, Some((4, r#"{"r":4}"#.into())));
    assert_eq!(
        verify(&db, cutoff(), false).await.expect("verify").drifts,
        vec![]
    );
}

/// Measures a batched purge of 500,000 of 1,000,000 archive rows and the latency of deliveries
/// sent meanwhile. Run by hand:
/// `cargo nextest run -p server --test it --run-ignored only --no-capture maintenance::measure`.
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

/// Signs in a new viewer; returns the session cookie.
async fn viewer_cookie(app: &TestApp) -> String {
    let password = "a long enough password";
    app::auth::add_user(&app.db, "vera", password, app::model::Role::Viewer)
        .await
        .expect("add user");
    let login = app
        .client
        .post(app.url("/api/login"))
        .header("Accept", "application/json")
        .form(&[("name", "vera"), ("password", password), ("next", "/")])
        .send()
        .await
        .expect("login answers");
    login
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("hookbox_session="))
        .and_then(|v| v.split(';').next())
        .expect("a session cookie")
        .to_string()
}

/// The overview page as a signed-in viewer sees it.
async fn overview_html(app: &TestApp, cookie: &str) -> String {
    let page = app
        .client
        .get(app.url("/"))
        .header("Cookie", cookie)
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), reqwest::StatusCode::OK);
    page.text().await.expect("html")
}

#[tokio::test]
async fn the_overview_shows_the_last_invariant_check() {
    let app = spawn_app(Backend::Postgres).await;
    deliver(&app.db, &event("e1", "X", 1, "{}"), Utc::now(), None).await;
    let cookie = viewer_cookie(&app).await;
    let before = overview_html(&app, &cookie).await;
    assert!(before.contains("data-testid=\"invariant-check\""));
    assert!(before.contains("never run"), "{before}");

    execute(&app.db, "DELETE FROM object_state WHERE object_id = 'X'").await;
    let report = verify(&app.db, cutoff(), false).await.expect("verify");
    assert_eq!(report.remaining(), 1);
    let after = overview_html(&app, &cookie).await;

    assert!(!after.contains("never run"));
    assert!(after.contains("1 drift"), "{after}");
    assert!(
        after.contains("objects missing from object_state: 1; repaired: 0"),
        "{after}"
    );
}

/// Runs `hookbox ARGS` on a database in the folder `dir`, with `HOOKBOX_CONFIG` unset unless
/// `config_var` gives it; returns (exit code, standard output, standard error).
fn hookbox_in(
    dir: &std::path::Path,
    config_var: Option<&std::path::Path>,
    url: &str,
    args: &[&str],
) -> (Option<i32>, String, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"));
    command
        .args(args)
        .env("DATABASE_URL", url)
        .env_remove("HOOKBOX_CONFIG")
        .current_dir(dir);
    if let Some(path) = config_var {
        command.env("HOOKBOX_CONFIG", path);
    }
    let output = command.output().expect("run hookbox");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `hookbox ARGS` on a database in an empty folder, without a config file.
fn hookbox(url: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().expect("temporary folder");
    hookbox_in(dir.path(), None, url, args)
}

/// The instant after `prefix` in `out`, up to the next white space or the end of its line.
fn printed_time(out: &str, prefix: &str) -> DateTime<Utc> {
    let start = out
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix:?} in {out}"))
        + prefix.len();
    let text = out[start..]
        .split(|c: char| c.is_whitespace())
        .next()
        .unwrap_or_default();
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text:?} is not RFC 3339: {e}"))
        .with_timezone(&Utc)
}

/// Archive rows received 100, 40 and 5 days ago; the ids of those rows, oldest first.
async fn three_ages_of_archive(db: &Db) -> [i64; 3] {
    let mut ids = [0; 3];
    for (i, days) in [100, 40, 5].into_iter().enumerate() {
        let event_id = format!("aged-{days}");
        let body = event(&event_id, &format!("O{days}"), 1, "{}");
        ids[i] = deliver(db, &body, Utc::now() - Duration::days(days), None)
            .await
            .archive_id;
    }
    ids
}

async fn archive_ids(db: &Db) -> Vec<i64> {
    let rows = texts(
        db,
        "SELECT CAST(id AS TEXT) FROM webhook_events ORDER BY id",
        vec![],
    )
    .await;
    rows.iter()
        .map(|row| row[0].as_deref().expect("id").parse().expect("integer id"))
        .collect()
}

#[tokio::test]
async fn purge_without_a_config_or_retention_flag_refuses_and_deletes_nothing() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let ids = three_ages_of_archive(db).await;
    let dir = tempfile::tempdir().expect("temporary folder");

    let (code, out, err) = hookbox_in(dir.path(), None, &test_db.url, &["purge"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(out, "", "nothing purged, nothing to report");
    let looked_at = std::path::absolute(dir.path().join("hookbox.toml")).expect("absolute path");
    assert!(err.contains("HOOKBOX_CONFIG is unset"), "{err}");
    assert!(
        err.contains(&format!("there is no {}", looked_at.display())),
        "{err}"
    );
    assert!(err.contains("--retention-days"), "{err}");
    assert_eq!(
        archive_ids(db).await,
        ids.to_vec(),
        "every row is still there"
    );
}

#[tokio::test]
async fn verify_without_a_config_or_retention_flag_refuses_and_records_no_run() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let (code, out, err) = hookbox(&test_db.url, &["verify", "--repair"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("HOOKBOX_CONFIG is unset"), "{err}");
    assert!(err.contains("--retention-days"), "{err}");
    assert_eq!(count(db, "SELECT count(*) FROM verify_runs").await, 0);
}

#[tokio::test]
async fn purge_refuses_when_hookbox_config_names_a_missing_file() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let ids = three_ages_of_archive(db).await;
    let dir = tempfile::tempdir().expect("temporary folder");
    let missing = dir.path().join("etc-hookbox.toml");

    let (code, out, err) = hookbox_in(dir.path(), Some(&missing), &test_db.url, &["purge"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains(&format!("{}: cannot be read", missing.display())),
        "{err}"
    );
    assert_eq!(archive_ids(db).await, ids.to_vec());
}

#[tokio::test]
async fn purge_prints_the_cutoff_it_uses() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let [_, forty_days_ago, five_days_ago] = three_ages_of_archive(db).await;
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = dir.path().join("hookbox.toml");
    std::fs::write(&file, "[server]\nretention_days = 60\n").expect("write config");

    // ./hookbox.toml in the working directory, as `hookbox serve` finds it.
    let before = Utc::now();
    let (code, out, err) = hookbox_in(dir.path(), None, &test_db.url, &["purge"]);
    let after = Utc::now();
    assert_eq!(code, Some(0), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    let announced = format!(
        "retention 60 days (from {}): purging archive rows received before ",
        std::path::absolute(&file).expect("absolute path").display()
    );
    assert!(lines[0].starts_with(&announced), "{out}");
    let cutoff = printed_time(&out, &announced);
    assert!(
        cutoff >= (before - Duration::days(60)).trunc_subsecs(0)
            && cutoff <= after - Duration::days(60),
        "{cutoff} is not 60 days before the run"
    );
    assert_eq!(lines[1], "purged 1 archive rows", "{out}");
    assert!(
        lines[2].starts_with("audit retention 365 days (from ")
            && lines[2].contains("): purged 0 audit rows from before "),
        "{out}"
    );
    assert_eq!(archive_ids(db).await, vec![forty_days_ago, five_days_ago]);

    // The flag wins over the file.
    let (code, out, err) = hookbox_in(
        dir.path(),
        None,
        &test_db.url,
        &["purge", "--retention-days", "10"],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.starts_with(
            "retention 10 days (from --retention-days): purging archive rows received before "
        ),
        "{out}"
    );
    assert!(out.contains("\npurged 1 archive rows\n"), "{out}");
    assert_eq!(archive_ids(db).await, vec![five_days_ago]);
}

#[tokio::test]
async fn purge_with_a_retention_flag_needs_no_config_file() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let [_, _, five_days_ago] = three_ages_of_archive(db).await;

    let (code, out, err) = hookbox(&test_db.url, &["purge", "--retention-days", "7"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let cutoff = printed_time(
        &out,
        "retention 7 days (from --retention-days): purging archive rows received before ",
    );
    assert!(
        (Utc::now() - Duration::days(7) - cutoff)
            .num_seconds()
            .abs()
            < 60
    );
    assert!(
        out.ends_with(
            "purged 2 archive rows\naudit log left as it is: its retention comes from the config file\n"
        ),
        "{out}"
    );
    assert_eq!(archive_ids(db).await, vec![five_days_ago]);

    let (code, _, err) = hookbox(&test_db.url, &["purge", "--retention-days", "0"]);
    assert_eq!(code, Some(2), "clap refuses 0: {err}");
    assert_eq!(archive_ids(db).await, vec![five_days_ago]);
}

#[tokio::test]
async fn the_purge_and_verify_commands_print_what_they_did_and_exit_1_on_drift() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let long_ago = Utc::now() - Duration::days(100);
    deliver(db, &event("old", "X", 1, "{}"), long_ago, None).await;
    deliver(db, &event("new", "X", 2, r#"{"v":2}"#), Utc::now(), None).await;

    let (code, out, _) = hookbox(&test_db.url, &["purge", "--retention-days", "90"]);
    assert_eq!(code, Some(0));
    assert!(
        out.starts_with(
            "retention 90 days (from --retention-days): purging archive rows received before "
        ),
        "{out}"
    );
    assert!(
        out.contains("\npurged 1 archive rows\naudit log left as it is"),
        "{out}"
    );

    execute(
        db,
        "UPDATE object_state SET revision = 9 WHERE object_id = 'X'",
    )
    .await;
    let (code, out, err) = hookbox(&test_db.url, &["verify", "--retention-days", "90"]);
    assert_eq!(code, Some(1), "{out}{err}");
    let cutoff = printed_time(
        &out,
        "retention 90 days (from --retention-days): inbox rows received from ",
    );
    assert!(
        (Utc::now() - Duration::days(90) - cutoff)
            .num_seconds()
            .abs()
            < 60
    );
    assert!(
        out.contains(
            "object shop/X: object_state is at revision 9, the greatest inbox revision is 2"
        ),
        "{out}"
    );
    assert!(err.contains("drift remains: 1 found, 0 repaired"), "{err}");
    assert_eq!(current_revision(db, "shop", "X").await, Some(9));

    let (code, out, err) = hookbox(
        &test_db.url,
        &["verify", "--repair", "--retention-days", "90"],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("[repaired]"), "{out}");
    assert_eq!(projection(db, "X").await, Some((2, r#"{"v":2}"#.into())));
    let (code, out, _) = hookbox(&test_db.url, &["verify", "--retention-days", "90"]);
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().last(), Some("no drift"), "{out}");
    assert_eq!(count(db, "SELECT count(*) FROM verify_runs").await, 3);
}
