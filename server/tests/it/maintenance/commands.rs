//! The `hookbox purge` and `hookbox verify` commands: where their retention comes from, what
//! they print and their exit codes.

use super::*;
use chrono::SecondsFormat;

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
    // Refused requests 8 days and 1 day old: the first is past their 7 days.
    let refused = |days: i64| app::db::rejected::NewRejected {
        received_at: Utc::now() - Duration::days(days),
        bucket: "shop".into(),
        source: "shop".into(),
        reason: app::model::RefusalReason::Unauthorized,
        cause: format!("{days} days old"),
        client_address: "192.0.2.1".into(),
        request_id: None,
        headers: "{}".into(),
        body_bytes: None,
        body_sha256: None,
    };
    app::db::rejected::insert_batch(&db.writer, &[refused(8), refused(1)])
        .await
        .expect("refused rows");
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
    assert_eq!(lines[1], "purged 1 archive rows: shop 1", "{out}");
    assert_eq!(
        lines[2], "purged 0 forward deliveries that were delivered or superseded",
        "{out}"
    );
    assert!(
        lines[3].starts_with("audit retention 365 days (from ")
            && lines[3].contains("): purged 0 audit rows from before "),
        "{out}"
    );
    assert!(
        lines[4].starts_with("refused-requests retention 7 days (from ")
            && lines[4].contains("): purged 1 rows from before "),
        "{out}"
    );
    assert_eq!(
        texts(db, "SELECT cause FROM rejected_requests", vec![]).await,
        vec![vec![Some("1 days old".to_string())]]
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
    assert!(out.contains("\npurged 1 archive rows: shop 1\n"), "{out}");
    assert_eq!(archive_ids(db).await, vec![five_days_ago]);
}

#[tokio::test]
async fn a_dry_run_counts_per_source_what_would_go_and_as_of_applies_the_retention_at_that_instant()
{
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    let [hundred_days_ago, forty_days_ago, five_days_ago] = three_ages_of_archive(db).await;
    let all = vec![hundred_days_ago, forty_days_ago, five_days_ago];

    // Now, a 30-day retention would take the rows of 100 and 40 days ago; nothing goes.
    let (code, out, err) = hookbox(
        &test_db.url,
        &["purge", "--retention-days", "30", "--dry-run"],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.starts_with(
            "retention 30 days (from --retention-days): dry run, deleting nothing: archive rows received before "
        ),
        "{out}"
    );
    assert!(
        out.contains("\nwould purge 2 archive rows: shop 2\nwould purge 0 forward deliveries"),
        "{out}"
    );
    assert_eq!(archive_ids(db).await, all);

    // As it would apply 30 days from now: every row is older than 30 days by then.
    let later = (Utc::now() + Duration::days(30)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let (code, out, err) = hookbox(
        &test_db.url,
        &[
            "purge",
            "--retention-days",
            "30",
            "--dry-run",
            "--as-of",
            &later,
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("\nwould purge 3 archive rows: shop 3\n"),
        "{out}"
    );
    let cutoff = printed_time(&out, "archive rows received before ");
    assert!((Utc::now() - cutoff).num_seconds().abs() < 60, "{out}");
    assert_eq!(archive_ids(db).await, all);

    // As it would apply 50 days ago: only the row of 100 days ago was past 30 days then; it goes.
    let earlier = (Utc::now() - Duration::days(50)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let (code, out, err) = hookbox(
        &test_db.url,
        &["purge", "--retention-days", "30", "--as-of", &earlier],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("\npurged 1 archive rows: shop 1\n"), "{out}");
    assert_eq!(archive_ids(db).await, vec![forty_days_ago, five_days_ago]);

    // A time that is not RFC 3339 is refused by name, before anything is touched.
    let (code, _, err) = hookbox(
        &test_db.url,
        &["purge", "--retention-days", "1", "--as-of", "yesterday"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--as-of"), "{err}");
    assert_eq!(archive_ids(db).await, vec![forty_days_ago, five_days_ago]);
}

#[tokio::test]
async fn a_source_with_its_own_retention_is_purged_by_it_and_the_command_says_so() {
    let test_db = test_db(Backend::Postgres).await;
    let db = &test_db.db;
    // shop keeps 120 days of its own: of its rows of 100, 40 and 5 days, none goes; it keeps
    // bodies 30 days: those of 100 and 40 days expire.
    let all = three_ages_of_archive(db).await.to_vec();
    let dir = tempfile::tempdir().expect("temporary folder");
    std::fs::write(
        dir.path().join("hookbox.toml"),
        "[server]\nretention_days = 30\n[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\n\
         secrets_env = [\"SHOP_SECRET\"]\nretention_days = 120\nbody_retention_days = 30\n",
    )
    .expect("write config");
    let purge = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args(args)
            .env("DATABASE_URL", &test_db.url)
            .env("SHOP_SECRET", "s3cret")
            .env_remove("HOOKBOX_CONFIG")
            .current_dir(dir.path())
            .output()
            .expect("run hookbox");
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let expired = || {
        texts(
            db,
            "SELECT CAST(id AS TEXT) FROM webhook_events WHERE body_expired_at IS NOT NULL ORDER BY id",
            vec![],
        )
    };

    let out = purge(&["purge", "--dry-run"]);
    assert!(
        out.contains("\nwould expire the bodies of 2 archive rows: shop 2\n"),
        "{out}"
    );
    assert!(expired().await.is_empty(), "a dry run expires nothing");

    let out = purge(&["purge"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[1].starts_with("source shop: retention 120 days of its own: rows received before "),
        "{out}"
    );
    assert!(
        lines[2].starts_with("source shop: bodies kept 30 days: bodies of rows received before "),
        "{out}"
    );
    assert_eq!(lines[3], "purged 0 archive rows: none", "{out}");
    assert_eq!(
        lines[4], "expired the bodies of 2 archive rows: shop 2",
        "{out}"
    );
    assert_eq!(archive_ids(db).await, all);
    assert_eq!(
        expired().await,
        vec![
            vec![Some(all[0].to_string())],
            vec![Some(all[1].to_string())]
        ]
    );
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
            "purged 2 archive rows: shop 2\npurged 0 forward deliveries that were delivered or superseded\naudit log left as it is: its retention comes from the config file\n"
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
        out.contains(
            "\npurged 1 archive rows: shop 1\npurged 0 forward deliveries that were delivered or superseded\naudit log left as it is"
        ),
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
