//! Bad input and failed authentication: clear 4xx answers, never a 5xx, nothing applied.

use crate::support::*;
use app::schemes::Scheme;

both_backends!(bad_bodies_are_answered_with_a_reason_and_archived_as_invalid);
async fn bad_bodies_are_answered_with_a_reason_and_archived_as_invalid(backend: Backend) {
    let long = "x".repeat(256);
    // (body, expected HTTP status, a word the reason must contain)
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (b"this is not json".to_vec(), 400, "JSON"),
        (b"\xff\xfe{}".to_vec(), 400, "UTF-8"),
        (
            event("b1", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":\"1\"")
                .into_bytes(),
            422,
            "revision",
        ),
        (event("b2", "o", 0, "{}").into_bytes(), 422, "revision"),
        (event("b3", "o", -4, "{}").into_bytes(), 422, "revision"),
        (
            event("b4", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":1.5")
                .into_bytes(),
            422,
            "revision",
        ),
        (
            event("b5", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":3.0")
                .into_bytes(),
            422,
            "revision",
        ),
        (
            event("b6", "o", 1, "{}")
                .replace("\"revision\":1", "\"revision\":9223372036854775808")
                .into_bytes(),
            422,
            "revision",
        ),
        (
            br#"{"event_id":"b7","object_id":"o","revision":1}"#.to_vec(),
            422,
            "snapshot",
        ),
        (event("b8", "o", 1, "[1,2]").into_bytes(), 422, "snapshot"),
        (
            event("b9", "o", 1, "\"text\"").into_bytes(),
            422,
            "snapshot",
        ),
        (event("", "o", 1, "{}").into_bytes(), 422, "event_id"),
        (event("b10", "", 1, "{}").into_bytes(), 422, "object_id"),
        (event(&long, "o", 1, "{}").into_bytes(), 422, "event_id"),
        (event("b11", &long, 1, "{}").into_bytes(), 422, "object_id"),
        (
            event("b12", "o", 1, r#"{"note":"nul \u0000 here"}"#).into_bytes(),
            422,
            "\\u0000",
        ),
        (
            br#"{"object_id":"o","revision":1,"snapshot":{}}"#.to_vec(),
            422,
            "event_id",
        ),
    ];
    let app = spawn_app(backend).await;
    for (i, (body, status, word)) in cases.iter().enumerate() {
        let answer = app.send_bytes("shop", body, &[]).await;

        assert_eq!(
            answer.status, *status,
            "{backend:?} case {i}: {:?}",
            answer.body
        );
        assert_eq!(answer.body["status"], "invalid", "{backend:?} case {i}");
        let reason = answer.body["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains(word),
            "{backend:?} case {i}: reason {reason:?} should name {word:?}"
        );
    }
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_events WHERE status = 'failed' AND outcome = 'invalid'"
        )
        .await,
        cases.len() as i64,
        "{backend:?}: every bad delivery is archived"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        cases.len() as i64
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        0,
        "{backend:?}: nothing claimed"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM object_state").await,
        0,
        "{backend:?}: nothing applied"
    );
    let readable = texts(
        &app.db,
        "SELECT error_message FROM webhook_events WHERE event_id = 'b2'",
        vec![],
    )
    .await;
    assert!(
        readable[0][0]
            .as_deref()
            .is_some_and(|m| m.contains("revision")),
        "the error is archived"
    );
}

#[tokio::test]
async fn bodies_over_the_limit_are_413_and_not_stored() {
    let app = spawn_app(Backend::Postgres).await;
    let big = event(
        "big",
        "o",
        1,
        &format!(r#"{{"pad":"{}"}}"#, "x".repeat(70_000)),
    );

    let answer = app.send("shop", &big).await;

    assert_eq!(answer.status, 413);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0
    );
}

#[tokio::test]
async fn unknown_sources_are_404() {
    let app = spawn_app(Backend::Sqlite).await;
    let answer = app.send("nobody", &event("e", "o", 1, "{}")).await;
    assert_eq!(answer.status, 404);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0
    );
}

/// What an attempt was, the headers it sent and its body.
type Attempt = (&'static str, Vec<(String, String)>, String);

fn hookbox_signature(secret: &str, t: i64, body: &str) -> String {
    let key = Scheme::HmacSha256.parse_secret(secret).expect("secret");
    let headers = Scheme::HmacSha256.sign(&key, "", body.as_bytes(), t);
    headers.into_iter().next().expect("one header").1
}

both_backends!(failed_authentication_is_401_and_nothing_is_archived);
async fn failed_authentication_is_401_and_nothing_is_archived(backend: Backend) {
    let app = spawn_app(backend).await;
    let body = event("e1", "o1", 1, "{}");
    let now = now();
    let header = |value: String| vec![("X-Hookbox-Signature".to_string(), value)];
    let attempts: Vec<Attempt> = vec![
        ("unsigned", vec![], body.clone()),
        (
            "wrong secret",
            header(hookbox_signature("not-the-secret", now, &body)),
            body.clone(),
        ),
        (
            "10 minutes old",
            header(hookbox_signature(SHOP_SECRET, now - 600, &body)),
            body.clone(),
        ),
        (
            "10 minutes ahead",
            header(hookbox_signature(SHOP_SECRET, now + 600, &body)),
            body.clone(),
        ),
        (
            "body changed",
            header(hookbox_signature(SHOP_SECRET, now, &body)),
            body.replace("o1", "o2"),
        ),
        ("garbage header", header("t=abc,v1=zz".into()), body.clone()),
    ];
    for (what, headers, sent) in attempts {
        let answer = app.post("shop", &headers, sent.into_bytes()).await;
        assert_eq!(
            (answer.status, &answer.body),
            (401, &serde_json::json!({"status":"unauthorized"})),
            "{backend:?}: {what}"
        );
    }
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0,
        "{backend:?}"
    );
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        0,
        "{backend:?}"
    );
}

#[tokio::test]
async fn an_old_secret_and_a_header_with_several_signatures_verify() {
    let app = spawn_app(Backend::Postgres).await;
    let now = now();
    let body_old = event("old-secret", "o1", 1, "{}");
    let body_many = event("many-signatures", "o2", 1, "{}");
    let good = hookbox_signature(SHOP_SECRET, now, &body_many);
    let good_v1 = good.split(',').find(|p| p.starts_with("v1=")).expect("v1");
    let several = format!("t={now},v1={},{good_v1}", "0".repeat(64));

    let old = app
        .post(
            "shop",
            &[(
                "X-Hookbox-Signature".into(),
                hookbox_signature(SHOP_SECRET_OLD, now, &body_old),
            )],
            body_old.into_bytes(),
        )
        .await;
    let many = app
        .post(
            "shop",
            &[("X-Hookbox-Signature".into(), several)],
            body_many.into_bytes(),
        )
        .await;

    assert_eq!(old.outcome(), "applied", "{:?}", old.body);
    assert_eq!(many.outcome(), "applied", "{:?}", many.body);
}

#[tokio::test]
async fn standard_webhooks_senders_are_verified_with_either_header_family() {
    let app = spawn_app(Backend::Sqlite).await;
    let body = event("sw-1", "o1", 1, r#"{"k":"v"}"#);

    let signed = app.send("sw", &body).await;
    let key = Scheme::StandardWebhooks
        .parse_secret(SW_SECRET)
        .expect("secret");
    let svix_headers: Vec<(String, String)> = Scheme::StandardWebhooks
        .sign(&key, "msg_svix", body.as_bytes(), now())
        .into_iter()
        .map(|(n, v)| (n.as_str().replacen("webhook-", "svix-", 1), v))
        .collect();
    let svix = app
        .post("sw", &svix_headers, body.clone().into_bytes())
        .await;
    let unsigned = app.post("sw", &[], body.into_bytes()).await;

    assert_eq!(signed.outcome(), "applied", "{:?}", signed.body);
    assert_eq!(svix.outcome(), "duplicate", "{:?}", svix.body);
    assert_eq!(unsigned.status, 401);
}

/// The test sources with some `[server]` settings changed.
fn config_with_server(server: &str) -> app::config::Config {
    let text = CONFIG.replacen("[server]\nmax_body_bytes = 65536", server, 1);
    app::config::Config::parse(&text, std::path::Path::new("test.toml"), &test_env)
        .expect("valid config")
}

both_backends!(unsigned_requests_do_not_spend_a_sources_rate_limit);
async fn unsigned_requests_do_not_spend_a_sources_rate_limit(backend: Backend) {
    let app = spawn_app(backend).await;
    // `limited` allows 2 a second; a flood of junk comes first.
    for _ in 0..10 {
        let junk = app
            .post("limited", &[], event("junk", "o", 1, "{}").into_bytes())
            .await;
        assert_eq!(junk.status, 401, "{backend:?}");
    }

    let genuine = app.send("limited", &event("real-1", "o1", 1, "{}")).await;

    assert_eq!(
        genuine.outcome(),
        "applied",
        "{backend:?}: {:?}",
        genuine.body
    );
    // Authenticated deliveries still count: the limit holds for them.
    let mut answers = Vec::new();
    for i in 2..6 {
        answers.push(
            app.send("limited", &event(&format!("real-{i}"), "o1", i, "{}"))
                .await
                .status,
        );
    }
    assert!(answers.contains(&429), "{backend:?}: {answers:?}");
}

/// A client that writes its whole request before reading, as simple senders do, over a raw
/// socket: the answer it reads must be the 413, not a reset connection.
#[tokio::test]
async fn a_sender_writing_its_whole_too_large_body_first_still_reads_the_413() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app(Backend::Postgres).await;
    for body_len in [200_000usize, 2_000_000] {
        let body = event(
            "big",
            "o",
            1,
            &format!(r#"{{"pad":"{}"}}"#, "x".repeat(body_len)),
        );
        let mut stream = tokio::net::TcpStream::connect(app.addr)
            .await
            .expect("connect");
        let head = format!(
            "POST /hooks/shop HTTP/1.1\r\nHost: hookbox\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.expect("head");
        stream
            .write_all(body.as_bytes())
            .await
            .expect("the whole body is taken");
        let mut answer = Vec::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            stream.read_to_end(&mut answer),
        )
        .await
        .expect("answered in time")
        .expect("no reset: the answer is read");
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{body_len}: {answer}");
        assert!(answer.contains("larger than 65536 bytes"), "{answer}");
    }
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0
    );
}

/// Sends a request head announcing `length` body bytes, then one byte every `gap` until the
/// server answers or closes; returns what it answered and when.
async fn trickle(
    addr: std::net::SocketAddr,
    path: &str,
    length: usize,
    gap: std::time::Duration,
) -> (String, std::time::Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let started = std::time::Instant::now();
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    let mut answer = Vec::new();
    for _ in 0..length {
        let mut buf = [0u8; 4096];
        tokio::select! {
            read = stream.read(&mut buf) => {
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => { answer.extend_from_slice(&buf[..n]); break; }
                }
            }
            () = tokio::time::sleep(gap) => {
                if stream.write_all(b"a").await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        stream.read_to_end(&mut answer),
    )
    .await;
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test]
async fn a_webhook_body_trickled_past_its_total_deadline_is_408_however_often_bytes_arrive() {
    let config = config_with_server(
        "[server]\nmax_body_bytes = 65536\nbody_read_timeout_secs = 2\nrequest_timeout_secs = 30",
    );
    let app = spawn_app_with(Backend::Postgres, config).await;

    // One byte every 200 ms: each chunk well inside any per-chunk timeout.
    let (answer, took) = trickle(
        app.addr,
        "/hooks/shop",
        1_000,
        std::time::Duration::from_millis(200),
    )
    .await;

    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within 2 s"), "{answer}");
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0
    );
}

#[tokio::test]
async fn a_slow_body_to_the_dashboard_api_is_cut_off_at_the_request_deadline() {
    let config = config_with_server("[server]\nmax_body_bytes = 65536\nrequest_timeout_secs = 2");
    let app = spawn_app_with(Backend::Sqlite, config).await;

    let (answer, took) = trickle(
        app.addr,
        "/api/login",
        1_000,
        std::time::Duration::from_millis(200),
    )
    .await;

    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM audit_log").await,
        0,
        "no sign-in was attempted"
    );
}

#[tokio::test]
async fn a_request_id_a_client_sends_is_kept_only_when_short_and_plain() {
    let app = spawn_app(Backend::Sqlite).await;
    let ask = |id: String| {
        let request = app
            .client
            .get(app.url("/healthz"))
            .header("x-request-id", id);
        async move {
            let response = request.send().await.expect("answer");
            response
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        }
    };

    let plain = ask("lb-7f3a.42:9".into()).await;
    let long = ask("a".repeat(5_000)).await;
    let hostile = ask("x\" <script>".into()).await;

    assert_eq!(plain, "lb-7f3a.42:9");
    for replaced in [long, hostile] {
        assert_eq!(replaced.len(), 16, "{replaced}");
        assert!(
            replaced.bytes().all(|b| b.is_ascii_hexdigit()),
            "{replaced}"
        );
    }
}

both_backends!(numbers_postgresql_cannot_store_are_422_and_archived_on_both_backends);
async fn numbers_postgresql_cannot_store_are_422_and_archived_on_both_backends(backend: Backend) {
    let app = spawn_app(backend).await;
    for (i, number) in ["10e-16384", "0e-20000", "1.0e-16383"].iter().enumerate() {
        let id = format!("n{i}");
        let answer = app
            .send(
                "shop",
                &event(&id, "o", 1, &format!(r#"{{"amount":{number}}}"#)),
            )
            .await;
        assert_eq!(
            answer.status, 422,
            "{backend:?} {number}: {:?}",
            answer.body
        );
        assert_eq!(answer.body["status"], "invalid");
        assert!(
            answer.body["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("number"),
            "{:?}",
            answer.body
        );
    }
    // Refused, yet archived under the identity the body carries before the number.
    assert_eq!(
        texts(
            &app.db,
            "SELECT event_id, object_id FROM webhook_events WHERE status = 'failed' AND outcome = 'invalid' AND error_message LIKE '%number%' ORDER BY event_id",
            vec![],
        )
        .await,
        (0..3)
            .map(|i| vec![Some(format!("n{i}")), Some("o".to_string())])
            .collect::<Vec<_>>(),
        "{backend:?}: archived with their event and object ids, nothing lost"
    );
    // The largest scale PostgreSQL stores is applied on both.
    let fine = app
        .send("shop", &event("fine", "o", 1, r#"{"amount":1e-16383}"#))
        .await;
    assert_eq!(fine.outcome(), "applied", "{backend:?}: {:?}", fine.body);
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_inbox").await,
        1
    );
}

both_backends!(a_delivery_the_database_refuses_is_422_and_archived_not_503);
/// Any refusal the database makes of a delivery's data is deterministic: a retry meets it again.
/// It is archived as invalid and answered 422, never an endless 503. Here a constraint the test
/// adds stands for refusals the parser cannot foresee.
async fn a_delivery_the_database_refuses_is_422_and_archived_not_503(backend: Backend) {
    use sea_orm::ConnectionTrait;
    let app = spawn_app(backend).await;
    let refuse = match backend {
            Backend::Postgres => "ALTER TABLE webhook_inbox ADD CONSTRAINT test_refuses CHECK (event_id <> 'refused')",
            Backend::Sqlite => "CREATE TRIGGER test_refuses BEFORE INSERT ON webhook_inbox
                                WHEN NEW.event_id = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
        };
    app.db
        .conn
        .execute_unprepared(refuse)
        .await
        .expect("add the refusal");

    let refused = app.send("shop", &event("refused", "o1", 1, "{}")).await;
    let again = app.send("shop", &event("refused", "o1", 1, "{}")).await;
    let fine = app.send("shop", &event("fine", "o1", 1, "{}")).await;

    for answer in [&refused, &again] {
        assert_eq!(answer.status, 422, "{backend:?}: {:?}", answer.body);
        assert!(
            answer.body["reason"]
                .as_str()
                .unwrap_or_default()
                .starts_with("the database refused this delivery"),
            "{backend:?}: {:?}",
            answer.body
        );
    }
    assert_eq!(fine.outcome(), "applied", "{backend:?}");
    assert_eq!(
        archived(&app.db, "shop", "refused").await,
        [
            ("failed".to_string(), "invalid".to_string()),
            ("failed".to_string(), "invalid".to_string())
        ],
        "{backend:?}: archived, nothing lost"
    );
    assert_eq!(
        count(
            &app.db,
            "SELECT count(*) FROM webhook_inbox WHERE event_id = 'refused'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn retryable_database_errors_are_not_mistaken_for_refusals() {
    use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
    let test_db = test_db(Backend::Postgres).await;
    let db = test_db.db.clone();
    let err = |sql: &'static str| {
        let db = db.clone();
        async move {
            db.writer
                .execute_raw(Statement::from_string(db.backend(), sql))
                .await
                .expect_err("fails")
        }
    };
    assert!(
        app::ingest::refusal(&err("SELECT 1/0").await).is_some(),
        "22012 is deterministic"
    );
    let txn = db.writer.begin().await.expect("begin");
    txn.execute_unprepared("SET LOCAL statement_timeout = 1")
        .await
        .expect("set");
    let timed_out = txn
        .execute_raw(Statement::from_string(db.backend(), "SELECT pg_sleep(1)"))
        .await
        .expect_err("times out");
    assert!(
        app::ingest::refusal(&timed_out).is_none(),
        "a statement timeout may pass on retry: {timed_out}"
    );
    drop(txn);
    assert!(
        app::ingest::refusal(&err("SELECT pg_terminate_backend(pg_backend_pid())").await).is_none(),
        "a lost connection is retryable"
    );
}
