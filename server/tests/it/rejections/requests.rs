//! Requests at the HTTP level: a sender writing its whole too-large body first still reads the
//! 413, a body trickled past its deadline is cut off, and a client's request id is kept only
//! when short and plain.

use super::*;

/// The test sources with some `[server]` settings changed.
fn config_with_server(server: &str) -> app::config::Config {
    let text = CONFIG.replacen("[server]\nmax_body_bytes = 65536", server, 1);
    app::config::Config::parse(&text, std::path::Path::new("test.toml"), &test_env)
        .expect("valid config")
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
