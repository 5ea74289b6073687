//! The refused-requests log: every request `/hooks/{source}` refuses before ingest is recorded
//! with its reason and precise cause, its headers redacted, its body's size and SHA-256 (never
//! the body), within its bounds of rows per source and of age, however much junk arrives.
#![allow(clippy::unwrap_used)]

use crate::support::*;
use app::config::Config;
use app::db::rejected::{self, NewRejected};
use app::schemes::Scheme;
use futures::StreamExt;
use sea_orm::ConnectionTrait;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The test sources with a 1 s body deadline and a bound of 20 rows per source.
fn small_log_config() -> Config {
    let text = CONFIG.replace(
        "max_body_bytes = 65536",
        "max_body_bytes = 65536\nbody_read_timeout_secs = 1\nrejected_rows_per_source = 20",
    );
    Config::parse(&text, Path::new("test.toml"), &test_env).expect("config")
}

/// One stored row, by column name.
#[derive(Debug, Clone)]
struct Row {
    bucket: String,
    source: String,
    reason: String,
    cause: String,
    client_address: String,
    headers: serde_json::Value,
    body_bytes: Option<i64>,
    body_sha256: Option<String>,
    request_id: Option<String>,
}

async fn rows(db: &app::db::Db) -> Vec<Row> {
    let found = db
        .dashboard
        .query_all_raw(sea_orm::Statement::from_string(
            db.backend(),
            "SELECT bucket, source, reason, cause, client_address, headers, body_bytes, body_sha256,
                    request_id
             FROM rejected_requests ORDER BY id",
        ))
        .await
        .expect("query");
    found
        .iter()
        .map(|r| Row {
            bucket: r.try_get("", "bucket").unwrap(),
            source: r.try_get("", "source").unwrap(),
            reason: r.try_get("", "reason").unwrap(),
            cause: r.try_get("", "cause").unwrap(),
            client_address: r.try_get("", "client_address").unwrap(),
            headers: serde_json::from_str(&r.try_get::<String>("", "headers").unwrap()).unwrap(),
            body_bytes: r.try_get("", "body_bytes").unwrap(),
            body_sha256: r.try_get("", "body_sha256").unwrap(),
            request_id: r.try_get("", "request_id").unwrap(),
        })
        .collect()
}

/// Waits (20 s at most) until the writer has stored rows satisfying `done`.
async fn rows_until(db: &app::db::Db, done: impl Fn(&[Row]) -> bool) -> Vec<Row> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = rows(db).await;
        if done(&found) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "the log never reached the expected rows: {found:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn sha256_hex(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// hmac-sha256 headers for `body` under `secret`, signed at `at`.
fn signed(secret: &str, body: &[u8], at: i64) -> Vec<(String, String)> {
    let key = Scheme::HmacSha256.parse_secret(secret).unwrap();
    Scheme::HmacSha256
        .sign(&key, "", body, at)
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect()
}

/// Writes a request head and `sent` body bytes of a `declared` length, then either closes its
/// side (`close`) or waits; returns what the server answered, if anything.
async fn partial_body(app: &TestApp, declared: usize, sent: &[u8], close: bool) -> String {
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "POST /hooks/shop HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(sent).await.unwrap();
    if close {
        stream.shutdown().await.unwrap();
    }
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

both_backends!(each_refusal_is_recorded_with_its_reason_its_precise_cause_and_no_secret);
async fn each_refusal_is_recorded_with_its_reason_its_precise_cause_and_no_secret(
    backend: Backend,
) {
    let app = spawn_app_with(backend, small_log_config()).await;
    let body = event("r1", "order-1", 1, "{}").into_bytes();

    // An unknown source: the body is not read.
    let unknown = app.post("nope", &[], body.clone()).await;
    assert_eq!(unknown.status, 404);
    // No signature header at all, with a credential the log must not keep.
    let bearer = ("authorization".to_string(), "Bearer hunter2".to_string());
    let unsigned = app
        .post("shop", std::slice::from_ref(&bearer), body.clone())
        .await;
    assert_eq!(unsigned.status, 401);
    // The 401 says nothing more than it did before the log.
    assert_eq!(unsigned.body, serde_json::json!({"status": "unauthorized"}));
    // Signed 712 s ago: 412 s beyond the 300 s tolerance.
    let stale = app
        .post(
            "shop",
            &signed(SHOP_SECRET, &body, now() - 712),
            body.clone(),
        )
        .await;
    assert_eq!(stale.status, 401);
    // Signed with a secret the source does not have (it has two).
    let forged_headers = signed("not-the-secret", &body, now());
    let forged_signature = forged_headers[0].1.clone();
    let forged = app.post("shop", &forged_headers, body.clone()).await;
    assert_eq!(forged.status, 401);
    assert_eq!(forged.body, serde_json::json!({"status": "unauthorized"}));
    // A header that is not a signature header at all.
    let garbage = [("x-hookbox-signature".to_string(), "garbage".to_string())];
    assert_eq!(app.post("shop", &garbage, body.clone()).await.status, 401);
    // Too large by its declared length.
    let large = vec![b'x'; 70_000];
    assert_eq!(app.post("shop", &[], large).await.status, 413);
    // Over the rate limit of `limited` (2 a second, a burst of 2).
    let mut limited = 0;
    for i in 0..4 {
        let body = event(&format!("l{i}"), "order-9", i + 1, "{}");
        let answer = app
            .post(
                "limited",
                &signed(SHOP_SECRET, body.as_bytes(), now()),
                body.into_bytes(),
            )
            .await;
        if answer.status == 429 {
            limited += 1;
        }
    }
    assert!(
        limited >= 1,
        "4 deliveries at once must pass a limit of 2 a second"
    );
    // A connection that breaks after 10 of 100 bytes, and one that stops sending for longer than
    // the 1 s body deadline.
    partial_body(&app, 100, b"0123456789", true).await;
    let slow = partial_body(&app, 100, b"01234", false).await;
    assert!(slow.starts_with("HTTP/1.1 408"), "{slow}");

    let expected = 8 + limited;
    let rows = rows_until(&app.db, |rows| rows.len() >= expected).await;
    assert_eq!(rows.len(), expected, "{rows:#?}");
    let find = |reason: &str, cause_part: &str| {
        rows.iter()
            .find(|r| r.reason == reason && r.cause.contains(cause_part))
            .unwrap_or_else(|| panic!("no {reason} row with {cause_part:?}: {rows:#?}"))
            .clone()
    };

    let row = find("unknown_source", "no source named \"nope\" is configured");
    assert_eq!(
        (row.bucket.as_str(), row.source.as_str()),
        ("(unknown)", "nope")
    );
    assert_eq!(row.body_bytes, Some(body.len() as i64));
    assert_eq!(
        row.body_sha256, None,
        "an unknown source's body is not read"
    );

    let row = find("unauthorized", "missing header x-hookbox-signature");
    assert_eq!((row.bucket.as_str(), row.source.as_str()), ("shop", "shop"));
    assert_eq!(row.headers["authorization"], "[redacted, 14 bytes]");
    assert_eq!(row.body_bytes, Some(body.len() as i64));
    assert_eq!(row.body_sha256.as_deref(), Some(sha256_hex(&body).as_str()));
    assert_eq!(row.client_address, "127.0.0.1");
    assert!(row.request_id.is_some_and(|id| !id.is_empty()));

    let row = find("unauthorized", "s older than the tolerance of 300 s allows");
    let beyond: i64 = row.cause["timestamp ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((412..=414).contains(&beyond), "{}", row.cause);

    let row = find("unauthorized", "the signature matches none of 2 secrets");
    assert_eq!(
        row.headers["x-hookbox-signature"],
        format!("[redacted, {} bytes]", forged_signature.len())
    );
    find("unauthorized", "malformed signature header");
    let row = find(
        "too_large",
        "Content-Length 70000 is over the limit of 65536 bytes",
    );
    assert_eq!(row.body_bytes, Some(70_000));
    assert_eq!(row.body_sha256, None);
    let row = find("rate_limited", "over the source's 2 deliveries a second");
    assert_eq!(row.bucket, "limited");
    assert!(row.body_sha256.is_some());
    let row = find(
        "unreadable",
        "the connection broke after 10 bytes of the body",
    );
    assert_eq!(row.body_bytes, Some(10));
    let row = find(
        "timed_out",
        "the body did not arrive within 1 s (5 bytes of 100 arrived)",
    );
    assert_eq!(row.body_bytes, Some(5));

    // Nothing a sender signed with, or a credential, is anywhere in the table.
    let everything = format!("{rows:?}");
    assert!(!everything.contains("hunter2"), "{everything}");
    assert!(!everything.contains(&forged_signature), "{everything}");
    assert!(
        !everything.contains(&forged_signature["t=".len()..]),
        "{everything}"
    );
    // And no refused request reached the archive or the inbox.
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE event_id = 'r1'"
        )
        .await,
        0
    );
}

both_backends!(the_log_keeps_the_newest_rows_of_each_source_and_of_all_unknown_names_together);
async fn the_log_keeps_the_newest_rows_of_each_source_and_of_all_unknown_names_together(
    backend: Backend,
) {
    let app = spawn_app_with(backend, small_log_config()).await;
    for i in 0..30 {
        // A header the log keeps (an unknown one is redacted).
        let n = ("user-agent".to_string(), i.to_string());
        assert_eq!(
            app.post("shop", std::slice::from_ref(&n), b"{}".to_vec())
                .await
                .status,
            401
        );
        // A made-up name each time: they all count against one bound.
        assert_eq!(
            app.post(&format!("junk{i}"), &[n], b"{}".to_vec())
                .await
                .status,
            404
        );
    }
    let newest_of = |rows: &[Row], bucket: &str| -> Vec<i64> {
        rows.iter()
            .filter(|r| r.bucket == bucket)
            .map(|r| r.headers["user-agent"].as_str().unwrap().parse().unwrap())
            .collect()
    };
    let rows = rows_until(&app.db, |rows| {
        newest_of(rows, "shop").contains(&29)
            && newest_of(rows, "(unknown)").contains(&29)
            && rows.len() == 40
    })
    .await;
    // The bound is 20 rows each: the 20 newest are kept, the oldest went first.
    assert_eq!(newest_of(&rows, "shop"), (10..30).collect::<Vec<_>>());
    assert_eq!(newest_of(&rows, "(unknown)"), (10..30).collect::<Vec<_>>());
    let unknown_names: Vec<&str> = rows
        .iter()
        .filter(|r| r.bucket == "(unknown)")
        .map(|r| r.source.as_str())
        .collect();
    assert_eq!(unknown_names.first(), Some(&"junk10"));
    assert_eq!(unknown_names.last(), Some(&"junk29"));
}

both_backends!(rows_older_than_the_retention_are_purged_and_newer_ones_kept);
async fn rows_older_than_the_retention_are_purged_and_newer_ones_kept(backend: Backend) {
    let test_db = test_db(backend).await;
    let db = &test_db.db;
    let now = chrono::Utc::now();
    let row = |days_ago: i64, cause: &str| NewRejected {
        received_at: now - chrono::Duration::days(days_ago),
        bucket: "shop".into(),
        source: "shop".into(),
        reason: app::model::RefusalReason::Unauthorized,
        cause: cause.into(),
        client_address: "192.0.2.1".into(),
        request_id: None,
        headers: "{}".into(),
        body_bytes: Some(2),
        body_sha256: None,
    };
    let batch: Vec<NewRejected> = (0..5)
        .map(|i| row(8 + i, "old"))
        .chain([row(6, "new"), row(0, "new")])
        .collect();
    rejected::insert_batch(&db.writer, &batch).await.unwrap();
    let cutoff = app::maintenance::purge::retention_cutoff(now, 7);
    // Two rows a statement: the purge goes on until nothing older is left.
    assert_eq!(
        rejected::purge_older_than(&db.writer, cutoff, 2)
            .await
            .unwrap(),
        5
    );
    let causes = texts(
        db,
        "SELECT cause FROM rejected_requests ORDER BY id",
        vec![],
    )
    .await;
    assert_eq!(causes, vec![vec![Some("new".to_string())]; 2]);
}

/// A counter on the server's `/metrics` (0 before its first increment).
async fn counter(app: &TestApp, name: &str) -> i64 {
    let text = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .map_or(0, |n| n.trim().parse::<f64>().unwrap() as i64)
}

both_backends!(a_flood_of_ten_thousand_junk_requests_stays_within_the_bound_and_loses_no_delivery);
async fn a_flood_of_ten_thousand_junk_requests_stays_within_the_bound_and_loses_no_delivery(
    backend: Backend,
) {
    let text = CONFIG.replace(
        "max_body_bytes = 65536",
        "max_body_bytes = 65536\nrejected_rows_per_source = 1000",
    );
    let config = Config::parse(&text, Path::new("test.toml"), &test_env).expect("config");
    let app = spawn_app_with(backend, config).await;
    const JUNK: usize = 10_000;
    let flood = {
        let app = app.clone_handle();
        tokio::spawn(async move {
            futures::stream::iter(0..JUNK)
                .map(|i| {
                    let app = app.clone_handle();
                    async move {
                        // Half unsigned to a real source, half to made-up names.
                        let (source, want) = if i.is_multiple_of(2) {
                            ("shop".to_string(), 401)
                        } else {
                            (format!("junk{i}"), 404)
                        };
                        let answer = app.post(&source, &[], b"{\"junk\":true}".to_vec()).await;
                        assert_eq!(answer.status, want, "junk {i}");
                    }
                })
                .buffer_unordered(32)
                .collect::<Vec<()>>()
                .await;
        })
    };
    // A genuine sender meanwhile: every delivery answered and applied.
    let mut genuine = 0;
    while !flood.is_finished() || genuine < 50 {
        let answer = app
            .send(
                "shop",
                &event(&format!("g{genuine}"), &format!("order-{genuine}"), 1, "{}"),
            )
            .await;
        assert_eq!(answer.outcome(), "applied", "{:?}", answer.body);
        genuine += 1;
    }
    flood.await.unwrap();
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE status = 'processed'"
        )
        .await,
        genuine as i64
    );
    // Every junk request was either written or counted as dropped...
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let written = counter(&app, "hookbox_rejected_log_rows_total").await;
        let dropped = counter(&app, "hookbox_rejected_log_dropped_total").await;
        if written + dropped == JUNK as i64 {
            eprintln!(
                "{backend:?}: {written} junk rows written, {dropped} dropped, {genuine} deliveries applied meanwhile"
            );
            break;
        }
        assert!(
            written + dropped < JUNK as i64,
            "{written} written + {dropped} dropped"
        );
        assert!(
            Instant::now() < deadline,
            "{written} written + {dropped} dropped of {JUNK}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ... and no source passed its bound of 1,000 rows (5,000 requests each).
    for bucket in ["shop", "(unknown)"] {
        let n = scalar(
            &app.db,
            "SELECT count(*) FROM rejected_requests WHERE bucket = $1",
            vec![bucket.into()],
        )
        .await
        .unwrap_or(0);
        assert!(n > 0 && n <= 1000, "{bucket}: {n} rows");
    }
}

/// A viewer's session cookie, signed in through the login server function.
async fn viewer_cookie(app: &TestApp) -> String {
    app::auth::add_user(
        &app.db,
        "vera",
        "a long enough password",
        app::model::Role::Viewer,
    )
    .await
    .unwrap();
    let response = app
        .client
        .post(app.url("/api/login"))
        .header("Accept", "application/json")
        .form(&[
            ("name", "vera"),
            ("password", "a long enough password"),
            ("next", "/rejected"),
        ])
        .send()
        .await
        .unwrap();
    crate::support::session_cookie(response.headers()).expect("a session cookie")
}

/// The bytes of a row's source, cause and headers columns, as stored.
async fn stored_row_bytes(db: &app::db::Db) -> Vec<i64> {
    let sql = match db.backend() {
        sea_orm::DatabaseBackend::Postgres => {
            "SELECT CAST(octet_length(source) + octet_length(cause) + octet_length(headers) AS bigint)
             FROM rejected_requests ORDER BY id"
        }
        _ => {
            "SELECT length(CAST(source AS BLOB)) + length(CAST(cause AS BLOB))
                    + length(CAST(headers AS BLOB))
             FROM rejected_requests ORDER BY id"
        }
    };
    db.dashboard
        .query_all_raw(sea_orm::Statement::from_string(db.backend(), sql))
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get_by_index::<i64>(0).unwrap())
        .collect()
}

/// Everything a sender controls in a request head, as large as the server takes it.
fn huge_heads(i: usize) -> Vec<(String, String)> {
    let quote = "\"<&'".repeat(60_000);
    match i % 4 {
        // A header name of 60 kB (near the most a name may be), with a value of 100 kB.
        0 => vec![(format!("x-{i}-{}", "n".repeat(60_000)), "v".repeat(100_000))],
        // A safe header's value of 240 kB, of characters HTML and JSON both escape.
        1 => vec![("user-agent".into(), quote)],
        // As many headers as the server takes, with long names and values.
        2 => (0..90)
            .map(|h| (format!("x-{i}-{h}-{}", "n".repeat(1500)), "v".repeat(2500)))
            .collect(),
        // Control characters, and a credential.
        _ => vec![
            ("accept".into(), "\t\\x\"".repeat(40_000)),
            ("x-api-key".into(), "k".repeat(100_000)),
        ],
    }
}

both_backends!(refused_requests_with_huge_heads_make_rows_and_a_page_of_bounded_size);
async fn refused_requests_with_huge_heads_make_rows_and_a_page_of_bounded_size(backend: Backend) {
    use server::rejected_log::{HEADERS_BYTES, ROW_BYTES};
    let app = spawn_app_with(backend, test_config()).await;
    const REQUESTS: usize = 120;
    for i in 0..REQUESTS {
        let heads = huge_heads(i);
        // Half to a configured source, unsigned; half to a made-up name of 4 kB.
        let (source, want) = if i.is_multiple_of(2) {
            ("shop".to_string(), 401)
        } else {
            (format!("junk-{}", "s".repeat(4000)), 404)
        };
        let answer = app.post(&source, &heads, b"{}".to_vec()).await;
        assert_eq!(answer.status, want, "request {i}: {:?}", answer.body);
    }
    let rows = rows_until(&app.db, |rows| rows.len() == REQUESTS).await;
    for row in &rows {
        let text = row.headers.to_string();
        assert!(text.len() <= HEADERS_BYTES, "{}", text.len());
        for (name, value) in row.headers.as_object().unwrap() {
            assert!(name.len() <= 64, "{name}");
            assert!(value.as_str().unwrap().len() <= 256, "{name}: {value}");
        }
        assert!(row.headers.as_object().unwrap().len() <= 33);
        assert!(row.source.len() <= 200, "{}", row.source.len());
        assert!(row.cause.len() <= 512, "{}", row.cause);
        assert!(
            !text.contains(&"k".repeat(10)),
            "a secret value is stored: {text}"
        );
    }
    let sizes = stored_row_bytes(&app.db).await;
    assert_eq!(sizes.len(), REQUESTS);
    let largest = sizes.iter().copied().max().unwrap();
    eprintln!("{backend:?}: the largest row holds {largest} bytes of source, cause and headers");
    assert!(largest <= ROW_BYTES as i64, "{largest} > {ROW_BYTES}");

    // The page of the newest 100 rows, as a viewer gets it.
    let cookie = viewer_cookie(&app).await;
    let page = app
        .client
        .get(app.url("/rejected"))
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("rejected-table"), "the rows are on the page");
    eprintln!(
        "{backend:?}: the /rejected page of 100 such rows is {} bytes",
        html.len()
    );
    // 100 rows (each shown once, and once more as the page's data for hydration, both escaped):
    // about 370 kB, where it was 78 MB before rows were bounded.
    const PAGE_BYTES: usize = 2 * 1024 * 1024;
    assert!(html.len() <= PAGE_BYTES, "{} bytes", html.len());
}
