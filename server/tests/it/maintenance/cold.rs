//! The cold archive: rows are written to it, whole, before the purge deletes them or their
//! bodies expire; an archive that cannot be written leaves every row in place; `verify` finds
//! an object that does not match its manifest; a restore brings each row back once, with its
//! id, kept from the next purge; a folder and an S3-compatible store (moto) alike; a purge
//! killed (`kill -9`) while it writes loses no row.

use super::*;
use app::config::archive::ArchiveUrl;
use app::maintenance::cold::ColdArchive;
use app::maintenance::cold::read::{self, Range};
use app::maintenance::purge::Policy;
use chrono::NaiveDate;

fn folder_archive(dir: &std::path::Path) -> ColdArchive {
    ColdArchive::open(&ArchiveUrl::File(dir.to_path_buf())).expect("open the folder")
}

async fn ids(db: &Db) -> Vec<i64> {
    texts(
        db,
        "SELECT CAST(id AS TEXT) FROM webhook_events ORDER BY id",
        vec![],
    )
    .await
    .into_iter()
    .map(|row| row[0].as_deref().unwrap_or("0").parse().unwrap_or(0))
    .collect()
}

fn date(days_ago: i64) -> NaiveDate {
    (Utc::now() - Duration::days(days_ago)).date_naive()
}

/// shop: two rows 100 days old, one of 99, 40 and 5; crm one of 50. Answers their ids.
async fn six_rows(db: &Db) -> Vec<(i64, String)> {
    let mut rows = Vec::new();
    for (source, days, n) in [
        ("shop", 100, 1),
        ("shop", 100, 2),
        ("shop", 99, 3),
        ("crm", 50, 4),
        ("shop", 40, 5),
        ("shop", 5, 6),
    ] {
        let body = event(
            &format!("e-{n}"),
            &format!("O-{n}"),
            1,
            &format!(r#"{{"n":{n}}}"#),
        );
        let id = deliver_to(db, source, &body, Utc::now() - Duration::days(days), None)
            .await
            .archive_id;
        rows.push((id, body));
    }
    rows
}

/// Writes the cold archive, purges (30 days), then checks, lists and restores.
async fn archived_purged_and_restored(db: &Db, cold: &ColdArchive, label: &str) {
    let rows = six_rows(db).await;
    let policy = Policy::uniform(30);

    app::maintenance::daily::run_once(db, &policy, Some(cold), 365).await;

    assert_eq!(
        ids(db).await,
        vec![rows[5].0],
        "{label}: the 5-day-old row stays"
    );
    let listed = read::list(cold, &Range::default()).await.expect("list");
    let per_object: Vec<(String, NaiveDate, u64)> = listed
        .iter()
        .map(|o| (o.source.clone(), o.day, o.manifest.rows))
        .collect();
    assert_eq!(
        per_object,
        vec![
            ("crm".to_string(), date(50), 1),
            ("shop".to_string(), date(100), 2),
            ("shop".to_string(), date(99), 1),
            ("shop".to_string(), date(40), 1),
        ],
        "{label}: one object a source and day, the row of 5 days not written"
    );
    let verified = read::verify(cold, &Range::default()).await.expect("verify");
    assert_eq!(
        (verified.objects, verified.rows, verified.mismatches.len()),
        (4, 5, 0),
        "{label}: {verified:?}"
    );

    // shop's days 100 and 99 come back, each row once with its own id, whole.
    let days = Range {
        source: Some("shop".into()),
        from: Some(date(100)),
        to: Some(date(99)),
    };
    let kept_until = Utc::now() + Duration::days(7);
    let restored = read::restore(db, cold, &days, kept_until)
        .await
        .expect("restore");
    assert_eq!((restored.restored, restored.already), (3, 0), "{label}");
    let again = read::restore(db, cold, &days, kept_until)
        .await
        .expect("restore again");
    assert_eq!((again.restored, again.already), (0, 3), "{label}");
    let back = ids(db).await;
    assert_eq!(
        back,
        vec![rows[0].0, rows[1].0, rows[2].0, rows[5].0],
        "{label}"
    );
    let stored = app::db::events::stored_delivery(db, rows[2].0)
        .await
        .expect("read")
        .expect("the restored row");
    assert_eq!(
        stored.body,
        rows[2].1.as_bytes(),
        "{label}: the body as received"
    );
    assert_eq!(stored.row.outcome, app::model::OutcomeKind::Applied);

    // The next purge leaves the restored rows for their 7 days.
    app::maintenance::daily::run_once(db, &policy, Some(cold), 365).await;
    assert_eq!(ids(db).await, back, "{label}: restored rows are kept");
}

both_backends!(rows_go_to_the_cold_archive_before_the_purge_and_come_back_once);
async fn rows_go_to_the_cold_archive_before_the_purge_and_come_back_once(backend: Backend) {
    let test_db = test_db(backend).await;
    let dir = tempfile::tempdir().expect("a folder");
    let cold = folder_archive(dir.path());
    archived_purged_and_restored(&test_db.db, &cold, &format!("{backend:?}")).await;
}

#[tokio::test]
async fn an_s3_compatible_store_holds_the_cold_archive() {
    let endpoint = std::env::var("HOOKBOX_TEST_S3_ENDPOINT")
        .expect("HOOKBOX_TEST_S3_ENDPOINT: the test command starts moto (.ci/test)");
    let bucket = format!("hookbox-{}", rand::random::<u32>());
    let created = reqwest::Client::new()
        .put(format!("{endpoint}/{bucket}"))
        .send()
        .await
        .expect("moto answers");
    assert!(created.status().is_success(), "{created:?}");
    let env = |name: &str| match name {
        "AWS_ENDPOINT_URL" => Some(endpoint.clone()),
        "AWS_REGION" => Some("us-east-1".to_string()),
        "AWS_ACCESS_KEY_ID" | "AWS_SECRET_ACCESS_KEY" => Some("testing".to_string()),
        _ => None,
    };
    let url = ArchiveUrl::S3 {
        bucket: bucket.clone(),
        prefix: "prod/eu".into(),
    };
    let cold = ColdArchive::open_with(&url, &env).expect("open the bucket");
    let test_db = test_db(Backend::Postgres).await;
    archived_purged_and_restored(&test_db.db, &cold, "s3").await;
    // The objects are under the prefix, as any S3 client lists them.
    let listing = reqwest::Client::new()
        .get(format!(
            "{endpoint}/{bucket}?list-type=2&prefix=prod/eu/shop/"
        ))
        .send()
        .await
        .expect("moto answers")
        .text()
        .await
        .expect("a listing");
    assert_eq!(listing.matches(".jsonl.gz</Key>").count(), 3, "{listing}");
    assert_eq!(
        listing.matches(".manifest.json</Key>").count(),
        3,
        "{listing}"
    );
}

both_backends!(an_archive_that_cannot_be_written_keeps_every_row_and_verify_names_a_bad_object);
async fn an_archive_that_cannot_be_written_keeps_every_row_and_verify_names_a_bad_object(
    backend: Backend,
) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let dir = tempfile::tempdir().expect("a folder");
    let folder = dir.path().join("archive");
    let cold = folder_archive(&folder);
    let rows = six_rows(db).await;
    // The folder is replaced by a file: nothing can be written in it.
    std::fs::remove_dir_all(&folder).expect("remove");
    std::fs::write(&folder, b"not a folder").expect("a file");
    let policy = Policy {
        bodies: app::maintenance::expiry::BodyPolicy {
            default_days: Some(1),
            own: Default::default(),
        },
        ..Policy::uniform(30)
    };

    app::maintenance::daily::run_once(db, &policy, Some(&cold), 365).await;

    assert_eq!(
        ids(db).await,
        rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        "{backend:?}: no row purged"
    );
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM webhook_events WHERE body_expired_at IS NOT NULL"
        )
        .await,
        0,
        "{backend:?}: no body expired"
    );

    // The overview says so, and why.
    let state = app::maintenance::cold::state::read(db)
        .await
        .expect("state");
    assert!(
        state.failing_since.is_some() && state.last_error.as_deref().is_some_and(|e| !e.is_empty()),
        "{backend:?}: {state:?}"
    );

    // Once it can be written, the purge goes on; an object altered since is named by verify.
    std::fs::remove_file(&folder).expect("remove the file");
    let cold = folder_archive(&folder);
    app::maintenance::daily::run_once(db, &policy, Some(&cold), 365).await;
    assert_eq!(ids(db).await, vec![rows[5].0], "{backend:?}");
    let state = app::maintenance::cold::state::read(db)
        .await
        .expect("state");
    assert!(
        state.failing_since.is_none() && state.last_written_at.is_some() && state.through.is_some(),
        "{backend:?}: {state:?}"
    );
    let listed = read::list(&cold, &Range::default()).await.expect("list");
    let altered = folder.join(&listed[0].object);
    let mut bytes = std::fs::read(&altered).expect("read");
    bytes.push(0);
    std::fs::write(&altered, bytes).expect("write");
    let verified = read::verify(&cold, &Range::default())
        .await
        .expect("verify");
    assert_eq!(verified.mismatches.len(), 1, "{backend:?}: {verified:?}");
    assert!(
        verified.mismatches[0].contains(&listed[0].object)
            && verified.mismatches[0].contains("its manifest says"),
        "{verified:?}"
    );
}

/// Rows of every `n`th day over the last 40 days, each with a body of about 1 KiB, written in one
/// statement (PostgreSQL).
async fn many_rows(db: &Db, rows: i64) {
    db.writer
        .execute_unprepared(&format!(
            "INSERT INTO webhook_events (source, event_id, object_id, revision, event_type, status,
                 outcome, headers, body, received_at)
             SELECT 'shop', 'bulk-' || g, 'O-' || g, 1, 'order.paid', 'processed', 'applied',
                 '{{\"content-type\": \"application/json\"}}',
                 convert_to('{{\"n\":' || g || ',\"pad\":\"' || repeat('x', 1000) || '\"}}', 'UTF8'),
                 now() - interval '41 days' + (g % 40) * interval '1 day' + g * interval '1 ms'
             FROM generate_series(1, {rows}) AS g"
        ))
        .await
        .expect("insert rows");
}

#[tokio::test]
async fn a_purge_killed_while_it_writes_the_cold_archive_loses_no_row() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let rows = 40_000;
    many_rows(db, rows).await;
    let dir = tempfile::tempdir().expect("a folder");
    let folder = dir.path().join("archive");
    let config = dir.path().join("hookbox.toml");
    std::fs::write(
        &config,
        format!("[archive]\nurl = \"file://{}\"\n", folder.display()),
    )
    .expect("config");
    let purge = || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"));
        command
            .args(["purge", "--retention-days", "1"])
            .env("DATABASE_URL", &test_db.url)
            .env("HOOKBOX_CONFIG", &config)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        command
    };

    // Killed once some of its objects are written, and before it has finished.
    let mut first = purge().spawn().expect("run hookbox purge");
    let written = |folder: &std::path::Path| {
        walk(folder)
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".manifest.json"))
            .count()
    };
    let started = std::time::Instant::now();
    while written(&folder) < 3 {
        assert!(
            first.try_wait().expect("wait").is_none(),
            "the purge ended before it could be killed"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    first.kill().expect("kill -9");
    first.wait().expect("reaped");
    let after_kill = count(db, "SELECT count(*) FROM webhook_events").await;
    assert!(
        after_kill > 0,
        "the kill came before the purge deleted everything"
    );

    // The next purge finds the killed process's lease and says so; once the lease has run out
    // (made to, here: it is 10 minutes), the next one goes on where the killed one stopped.
    let held = purge().output().expect("run hookbox purge");
    let said = String::from_utf8_lossy(&held.stdout);
    assert!(
        said.contains("source shop: another process is writing its cold archive"),
        "{said}"
    );
    // What the killed process had written (whole days) goes; the rest stays.
    let after_held = count(db, "SELECT count(*) FROM webhook_events").await;
    assert!(
        after_held > 0 && after_held < after_kill,
        "{after_held} of {after_kill}"
    );
    db.writer
        .execute_unprepared(
            "UPDATE cold_archive_horizons SET lease_until = now() - interval '1 second'",
        )
        .await
        .expect("the lease runs out");
    let second = purge().output().expect("run hookbox purge");
    assert!(second.status.success(), "{second:?}");
    assert_eq!(count(db, "SELECT count(*) FROM webhook_events").await, 0);
    let cold = folder_archive(&folder);
    let verified = read::verify(&cold, &Range::default())
        .await
        .expect("verify");
    assert!(verified.mismatches.is_empty(), "{verified:?}");
    assert!(
        verified.rows >= rows as u64,
        "{verified:?}: at worst a row is in two objects"
    );

    // A restore of every day brings each row back exactly once.
    let restored = read::restore(db, &cold, &Range::default(), Utc::now() + Duration::days(7))
        .await
        .expect("restore");
    assert_eq!(restored.restored, rows as u64, "{restored:?}");
    assert_eq!(
        texts(
            db,
            "SELECT CAST(count(*) AS TEXT), CAST(count(DISTINCT event_id) AS TEXT) FROM webhook_events",
            vec![]
        )
        .await,
        vec![vec![Some(rows.to_string()), Some(rows.to_string())]]
    );
}

/// Every file under `folder`.
fn walk(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[tokio::test]
async fn the_archive_commands_list_verify_and_restore_what_the_purge_wrote() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let rows = six_rows(db).await;
    let dir = tempfile::tempdir().expect("a folder");
    let folder = dir.path().join("archive");
    let config = dir.path().join("hookbox.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nretention_days = 30\n[archive]\nurl = \"file://{}\"\n",
            folder.display()
        ),
    )
    .expect("config");
    let hookbox = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args(args)
            .env("DATABASE_URL", &test_db.url)
            .env("HOOKBOX_CONFIG", &config)
            .output()
            .expect("run hookbox");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let url = format!("file://{}", folder.display());

    let (code, out) = hookbox(&["purge"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "\narchived 5 rows in 4 objects to {url}: crm 1, shop 4\n"
        )),
        "{out}"
    );
    assert!(
        out.contains("\npurged 5 archive rows: crm 1, shop 4\n"),
        "{out}"
    );
    assert_eq!(ids(db).await, vec![rows[5].0]);

    let (code, out) = hookbox(&["archive", "list", "--source", "shop"]);
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[0].starts_with(&format!("shop/{}/", date(100).format("%Y/%m/%d")))
            && lines[0].contains("  2 rows  ids "),
        "{out}"
    );
    assert_eq!(lines[3], format!("3 objects, 4 rows in {url}"));

    let (code, out) = hookbox(&["archive", "verify"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        out,
        format!("verified 4 objects, 5 rows in {url}: 0 mismatches\n")
    );

    let from = date(100).to_string();
    let to = date(99).to_string();
    let (code, out) = hookbox(&[
        "archive", "restore", "--source", "shop", "--from", &from, "--to", &to,
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with(&format!(
            "restored 3 rows of shop received {from} to {to} from 2 objects (0 already in the archive, left alone); kept until "
        )),
        "{out}"
    );
    assert_eq!(
        ids(db).await,
        vec![rows[0].0, rows[1].0, rows[2].0, rows[5].0]
    );

    // An object altered since is named, and verify exits 1.
    let crm = walk(&folder.join("crm"))
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
        .expect("crm's object");
    std::fs::write(&crm, b"not what was written").expect("alter");
    let (code, out) = hookbox(&["archive", "verify"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.starts_with("mismatch: crm/") && out.contains("its manifest says"),
        "{out}"
    );
}
