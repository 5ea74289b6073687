//! Export and resend: the deliveries of a filter as NDJSON or CSV (rows equal to the filter,
//! bodies exact, no headers, at most 100,000, audited), and "copy as curl", whose command run
//! against the server gives a duplicate of the original.
#![allow(clippy::unwrap_used)]

use super::*;
use sea_orm::ConnectionTrait;

/// An export as a signed-in user downloads it: (status, content type, body).
async fn export(app: &TestApp, cookie: &str, query: &str) -> (StatusCode, String, String) {
    let response = no_redirects()
        .get(app.url(&format!("/export/events?{query}")))
        .header("Cookie", cookie)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, kind, response.text().await.unwrap())
}

both_backends!(an_export_holds_the_rows_of_its_filter_with_their_bodies_exact_and_is_audited);
async fn an_export_holds_the_rows_of_its_filter_with_their_bodies_exact_and_is_audited(
    backend: Backend,
) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    app.send_bytes("shop", b"not json, \"quoted\",\nand a =formula", &[])
        .await;
    for n in 1..=3 {
        let snapshot = format!(r#"{{"total": 1234567890123456789{n}, "note": "a,b \"c\""}}"#);
        app.send(
            "shop",
            &event(&format!("e{n}"), &format!("order-{n}"), 1, &snapshot),
        )
        .await;
    }

    let (status, kind, ndjson) = export(&app, &cookie, "format=ndjson&status=processed").await;

    assert_eq!(status, StatusCode::OK, "{ndjson}");
    assert!(kind.starts_with("application/x-ndjson"), "{kind}");
    let lines: Vec<serde_json::Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["e3", "e2", "e1"],
        "{backend:?}: newest first, the filter's rows only"
    );
    let sent = event(
        "e2",
        "order-2",
        1,
        r#"{"total": 12345678901234567892, "note": "a,b \"c\""}"#,
    );
    assert_eq!(lines[1]["body"], sent.as_str(), "the body as received");
    assert!(lines[1].get("headers").is_none(), "no headers are exported");
    assert_eq!(lines[1]["outcome"], "applied");

    // CSV: a header, one quoted line per row, a formula defused; a body with a line break stays one field.
    let (status, kind, csv) = export(&app, &cookie, "format=csv&status=failed").await;
    assert_eq!(status, StatusCode::OK);
    assert!(kind.starts_with("text/csv"), "{kind}");
    assert!(csv.starts_with("id,received_at,source,event_id,"), "{csv}");
    assert!(
        csv.contains("\"not json, \"\"quoted\"\",\nand a =formula\""),
        "{csv}"
    );
    assert_eq!(csv.matches("\"shop\"").count(), 1);
    // match narrows it like the list.
    let (_, _, one) = export(
        &app,
        &cookie,
        &format!(
            "format=ndjson&match={}",
            app::url::urlencode(r#"{"event_id":"e1"}"#)
        ),
    )
    .await;
    assert_eq!(one.lines().count(), 1, "{one}");

    let audited = texts(
        &app.db,
        "SELECT actor, target, outcome, detail FROM audit_log WHERE action = 'export' ORDER BY id",
        vec![],
    )
    .await;
    assert_eq!(audited.len(), 3);
    assert_eq!(
        audited[0],
        [
            Some("vera".to_string()),
            Some("ndjson".to_string()),
            Some("started".to_string()),
            Some("ndjson of every source, status processed (at most 100000 rows)".to_string())
        ]
    );

    // Refusals name what is wrong, and nothing is audited for them.
    let (status, _, body) = export(&app, &cookie, "format=xml").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("format: \"xml\""), "{body}");
    let (status, _, body) = export(&app, &cookie, "format=csv&status=lost").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("status: \"lost\""), "{body}");
    let anonymous = no_redirects()
        .get(app.url("/export/events?format=csv"))
        .send()
        .await
        .unwrap();
    assert!(
        anonymous.status().is_redirection(),
        "{}",
        anonymous.status()
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'export'"
        )
        .await,
        3
    );
}

#[tokio::test]
async fn an_export_stops_at_its_cap_of_100000_rows_the_newest() {
    let app = spawn_app(Backend::Postgres).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    app.db
        .writer
        .execute_unprepared(
            "INSERT INTO webhook_events (source, event_id, status, outcome, headers, body, received_at)
             SELECT 'shop', 'bulk-' || g, 'processed', 'applied', '{}', convert_to('{}', 'UTF8'),
                    now() - g * interval '1 millisecond'
             FROM generate_series(1, 100005) AS g",
        )
        .await
        .unwrap();

    let (status, _, csv) = export(&app, &cookie, "format=csv").await;

    assert_eq!(status, StatusCode::OK);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 100_000);
    assert!(
        lines[1].contains("\"bulk-1\""),
        "the newest first: {}",
        lines[1]
    );
    assert!(
        lines[100_000].contains("\"bulk-100000\""),
        "{}",
        lines[100_000]
    );
}

both_backends!(the_copied_curl_command_sends_the_delivery_again_as_a_duplicate);
async fn the_copied_curl_command_sends_the_delivery_again_as_a_duplicate(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "olga", Role::Operator).await;
    let cookie = sign_in(&app, "olga", PASSWORD).await.unwrap();
    let body = event(
        "e1",
        "order-1",
        1,
        r#"{"note":"it's \"quoted\" $HOME `x` \\n"}"#,
    );
    assert_eq!(app.send("shop", &body).await.outcome(), "applied");
    let id = scalar(&app.db, "SELECT id FROM webhook_events", vec![])
        .await
        .unwrap()
        .to_string();

    let (status, detail) = call(&app, Some(&cookie), "event", &[("id", &id)]).await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    let detail: serde_json::Value = serde_json::from_str(&detail).unwrap();
    let command = detail["curl"].as_str().unwrap();
    assert!(
        command.contains(&format!("http://{}/hooks/shop", app.addr)),
        "{command}"
    );
    // Run beside the server (the test's runtime has one thread): tokio's process, not std's.
    let output = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(command)
        .output()
        .await
        .unwrap();

    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["status"], "duplicate", "{answer}");
    assert_eq!(answer["event_id"], "e1");
    // The resend was archived with the original's bytes.
    let bodies = texts(
        &app.db,
        "SELECT outcome FROM webhook_events ORDER BY id",
        vec![],
    )
    .await;
    assert_eq!(
        bodies,
        [vec![Some("applied".into())], vec![Some("duplicate".into())]]
    );
    // Sent exactly: the duplicate's body is the original's, so it is archived as a reference.
    let references = texts(
        &app.db,
        "SELECT CAST(length(body) AS TEXT), CAST(body_of AS TEXT) FROM webhook_events ORDER BY id",
        vec![],
    )
    .await;
    assert_eq!(
        references[1][0].as_deref(),
        Some("0"),
        "the body was sent exactly"
    );
    assert!(references[1][1].is_some(), "the body was sent exactly");
}

/// `rows` archive rows with bodies of `bytes` double quotes each (escaped, each doubles in an
/// export), the newest `big-1`.
pub(super) async fn large_bodies(db: &app::db::Db, rows: i64, bytes: usize) {
    let sql = match db.backend() {
        sea_orm::DatabaseBackend::Postgres => format!(
            "INSERT INTO webhook_events (source, event_id, status, outcome, headers, body, received_at)
             SELECT 'shop', 'big-' || g, 'processed', 'applied', '{{}}', convert_to(repeat('\"', {bytes}), 'UTF8'),
                    now() - g * interval '1 millisecond'
             FROM generate_series(1, {rows}) AS g"
        ),
        _ => format!(
            "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {rows})
             INSERT INTO webhook_events (source, event_id, status, outcome, headers, body, received_at)
             SELECT 'shop', 'big-' || g, 'processed', 'applied', '{{}}',
                    CAST(replace(hex(zeroblob({bytes})), '00', '\"') AS BLOB),
                    strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now', '-' || g || ' seconds')
             FROM s"
        ),
    };
    db.writer.execute_unprepared(&sql).await.unwrap();
}

/// A figure of this process's memory from /proc (kB): `VmRSS` now, `VmHWM` its peak.
fn memory_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status")
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .expect("a memory figure")
}

/// The test configuration with requests (and so the write deadline) of `secs` seconds.
pub(super) fn config_with_request_timeout(secs: u64) -> app::config::Config {
    app::config::Config::parse(
        &CONFIG.replace(
            "max_body_bytes = 65536",
            &format!("max_body_bytes = 65536\nrequest_timeout_secs = {secs}"),
        ),
        std::path::Path::new("test.toml"),
        &test_env,
    )
    .unwrap()
}

both_backends!(
    stalled_exports_of_large_bodies_hold_little_memory_and_are_dropped_at_the_write_deadline
);
async fn stalled_exports_of_large_bodies_hold_little_memory_and_are_dropped_at_the_write_deadline(
    backend: Backend,
) {
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const ROWS: usize = 48;
    const BODY: usize = 1024 * 1024;
    // Requests of 5 s: a client that reads nothing for 5 s is dropped.
    let app = spawn_app_with(backend, config_with_request_timeout(5)).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    large_bodies(&app.db, ROWS as i64, BODY).await;
    let before = memory_kb("VmRSS");

    // Three clients ask for the export (96 MB each as NDJSON) and never read it.
    let mut stalled = Vec::new();
    for _ in 0..3 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(app.addr).await.unwrap();
        let request = format!(
            "GET /export/events?format=ndjson HTTP/1.1\r\nHost: {}\r\nCookie: {cookie}\r\n\r\n",
            app.addr
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        stalled.push(stream);
    }
    for _ in 0..500 {
        if count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'export'",
        )
        .await
            == 3
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Time for the exports to fill every buffer they can, then stall.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let peak_growth_mb = memory_kb("VmHWM").saturating_sub(before) / 1024;
    eprintln!("{backend:?}: peak memory growth with three stalled exports: {peak_growth_mb} MB");

    // Past the deadline the server has dropped them: what each client reads now ends (the
    // server closed the connection) long before the export would have.
    tokio::time::sleep(Duration::from_secs(6)).await;
    for mut stream in stalled {
        let mut received = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut received)).await;
        assert!(
            read.is_ok(),
            "{backend:?}: the server never closed a stalled export"
        );
        assert!(
            received.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&received[..received.len().min(200)])
        );
        // It was under way (past its head and into the rows) when it stalled.
        assert!(
            received.len() > 8192,
            "{}",
            String::from_utf8_lossy(&received)
        );
        assert!(
            received.len() < ROWS * BODY / 4 && !received.ends_with(b"0\r\n\r\n"),
            "{backend:?}: a stalled export was not cut short ({} bytes)",
            received.len()
        );
    }
    assert!(
        peak_growth_mb < 100,
        "{backend:?}: three stalled exports of {ROWS} MB of bodies grew memory by {peak_growth_mb} MB"
    );

    // Read as it comes, the export holds every row with its body whole, newest first.
    let (status, _, ndjson) = export(&app, &cookie, "format=ndjson").await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<serde_json::Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), ROWS, "{backend:?}");
    let expected = "\"".repeat(BODY);
    for (n, line) in lines.iter().enumerate() {
        assert_eq!(line["event_id"], format!("big-{}", n + 1));
        assert!(
            line["body"] == expected.as_str(),
            "{backend:?}: body of big-{}",
            n + 1
        );
    }
    let (status, _, csv) = export(&app, &cookie, "format=csv").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(csv.matches("\"shop\"").count(), ROWS);
}

both_backends!(a_long_q_or_filter_is_a_400_naming_the_field_and_nothing_is_audited);
async fn a_long_q_or_filter_is_a_400_naming_the_field_and_nothing_is_audited(backend: Backend) {
    let app = spawn_app(backend).await;
    with_user(&app, "vera", Role::Viewer).await;
    let cookie = sign_in(&app, "vera", PASSWORD).await.unwrap();
    let long = "x".repeat(60_000);
    for field in ["q", "source", "status", "outcome", "from", "to", "match"] {
        let (status, _, body) = export(
            &app,
            &cookie,
            &format!("format=csv&{field}={}", app::url::urlencode(&long)),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{backend:?} {field}: {body}"
        );
        assert!(
            body.starts_with(&format!("{field}: longer than")),
            "{field}: {body}"
        );
        assert!(body.len() < 200, "the refusal does not repeat the value");
        let (status, body) = call(&app, Some(&cookie), "events", &[(field, &long)]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{field}: {body}");
        assert!(
            body.contains(&format!("{field}: longer than")),
            "{field}: {body}"
        );
    }
    let (status, body) = call(&app, Some(&cookie), "events", &[("cursor", &long)]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("cursor: "), "{body}");
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM audit_log WHERE action = 'export'"
        )
        .await,
        0
    );
    // At the bound, an id is still searched.
    let id = "e".repeat(app::db::filter::MAX_FILTER_BYTES);
    let (status, _, _) = export(&app, &cookie, &format!("format=csv&q={id}")).await;
    assert_eq!(status, StatusCode::OK);
}
