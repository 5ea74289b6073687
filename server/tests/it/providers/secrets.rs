//! No configured secret, in any form, ever reaches a log line, an answer or the archive.
#![allow(clippy::unwrap_used)]

use super::*;
use std::sync::{Arc, Mutex};

/// A `tracing` writer appending to a shared buffer.
#[derive(Clone, Default)]
struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLogs {
    /// Captures every event this thread logs, for as long as the guard lives.
    fn start() -> (CapturedLogs, tracing::subscriber::DefaultGuard) {
        let logs = CapturedLogs::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer({
                let logs = logs.clone();
                move || logs.clone()
            })
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log buffer")).into_owned()
    }
}

/// The forms a secret could leak in: as configured, in hex, and for the Standard Webhooks
/// secrets the base64 part and the decoded key.
fn secret_forms() -> Vec<String> {
    let hex = |text: &str| text.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let mut forms = Vec::new();
    for secret in every_secret() {
        forms.push(secret.to_string());
        forms.push(hex(secret));
        if let Some(encoded) = secret.strip_prefix("whsec_") {
            forms.push(encoded.trim_end_matches('=').to_string());
        }
    }
    for key in [
        "svix-endpoint-key-current",
        "svix-endpoint-key-previous",
        "clerk-endpoint-key-current",
        "clerk-endpoint-key-previous",
    ] {
        forms.push(key.to_string());
        forms.push(hex(key));
    }
    forms
}

// The default (current-thread) runtime runs the server's tasks on this thread, so the
// subscriber set as this thread's default sees every event the server logs.
#[tokio::test]
async fn secrets_never_appear_in_logs_answers_or_the_archive() {
    let (logs, _capture) = CapturedLogs::start();
    let app = spawn_app_with(Backend::Postgres, providers_config()).await;

    let mut answers = Vec::new();
    for p in ALL_PROVIDERS {
        let d = (p.delivery)("6");
        answers.push(deliver(&app, &p, p.secrets[0], &d).await);
        answers.push(deliver(&app, &p, p.secrets[1], &d).await);
        let forged = d.body.replacen(p.tamper.0, p.tamper.1, 1);
        answers.push(
            app.post(p.source, &signed(&p, p.secrets[0], &d), forged.into_bytes())
                .await,
        );
        answers.push(deliver(&app, &p, "whsec_bm90LXRoZS1zZWNyZXQ=", &d).await);
        answers.push(app.post(p.source, &[], d.body.into_bytes()).await);
    }
    let no_id = body_only(r#"{"object":"event","type":"charge.failed"}"#);
    answers.push(deliver(&app, &STRIPE_PROVIDER, STRIPE[0], &no_id).await);
    let challenge = body_only(r#"{"type":"url_verification","challenge":"abc"}"#);
    answers.push(deliver(&app, &SLACK_PROVIDER, SLACK[0], &challenge).await);

    let outcomes: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(
        outcomes,
        [[200, 200, 401, 401, 401]; 7]
            .into_iter()
            .flatten()
            .chain([422, 200])
            .collect::<Vec<u16>>(),
        "every case was exercised"
    );
    let logged = logs.text();
    assert!(
        logged.contains("delivery recorded")
            && logged.contains("authentication failed")
            && logged.contains("handshake"),
        "the server's log lines are captured: {logged}"
    );
    let answered: String = answers.iter().map(|a| a.body.to_string()).collect();
    let mut archived = String::new();
    for sql in [
        "SELECT t::text, encode(t.body, 'escape') FROM webhook_events t",
        "SELECT t::text FROM webhook_inbox t",
        "SELECT t::text FROM object_state t",
    ] {
        for row in texts(&app.db, sql, vec![]).await {
            archived.extend(row.into_iter().flatten());
        }
    }
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        15,
        "7 accepted, 7 duplicates, 1 invalid"
    );
    for form in secret_forms() {
        assert!(!logged.contains(&form), "a secret ({form}) is in the logs");
        assert!(
            !answered.contains(&form),
            "a secret ({form}) is in an answer"
        );
        assert!(
            !archived.contains(&form),
            "a secret ({form}) is in the archive"
        );
    }
}

/// A token the operator opted to take from the query string (`token_query`).
const QUERY_TOKEN: &str = "q-token/with+odd=chars";

// As above: the subscriber sees every event the server logs on this thread.
#[tokio::test]
async fn a_token_taken_from_the_query_is_never_logged_stored_or_shown() {
    let (logs, _capture) = CapturedLogs::start();
    let config = "[[sources]]\nname = \"q\"\nscheme = \"token\"\ntoken_query = \"key\"\n\
                  secrets_env = [\"Q_TOKEN\"]\nmode = \"dedup\"\nevent_id = \"/id\"\n";
    let env = |name: &str| (name == "Q_TOKEN").then(|| QUERY_TOKEN.to_string());
    let config = Config::parse(config, Path::new("q.toml"), &env).unwrap();
    let app = spawn_app_with(Backend::Postgres, config).await;
    let encoded: String = form_urlencoded::byte_serialize(QUERY_TOKEN.as_bytes()).collect();
    let post = |query: String, body: &'static str| {
        let request = app
            .client
            .post(app.url(&format!("/hooks/q{query}")))
            .header("content-type", "application/json")
            .body(body);
        async move { request.send().await.unwrap() }
    };
    let accepted = post(format!("?key={encoded}"), r#"{"id":"evt_q1"}"#).await;
    assert_eq!(accepted.status(), 200);
    let accepted = accepted.text().await.unwrap();
    let wrong = post("?key=not-it".to_string(), r#"{"id":"evt_q2"}"#).await;
    assert_eq!(wrong.status(), 401);
    let missing = post(String::new(), r#"{"id":"evt_q3"}"#).await;
    assert_eq!(missing.status(), 401);
    let causes = super::forms::eventually_causes(&app, "q", 2).await;
    assert_eq!(
        causes,
        [
            "the credential matches none of 1 secret",
            "missing query parameter key"
        ]
    );
    let cookie = signed_in(&app, "olga", app::model::Role::Operator).await;
    let (status, sources) = call(&app, &cookie, "sources", &[]).await;
    assert_eq!(status, 200);
    assert!(sources.contains("/hooks/q?key=<a secret>"), "{sources}");
    let mut stored = String::new();
    for sql in [
        "SELECT t::text, encode(t.body, 'escape') FROM webhook_events t",
        "SELECT t::text FROM webhook_inbox t",
        "SELECT t::text FROM rejected_requests t",
    ] {
        for row in texts(&app.db, sql, vec![]).await {
            stored.extend(row.into_iter().flatten());
        }
    }
    assert!(
        stored.contains("evt_q1"),
        "the delivery is archived: {stored}"
    );
    let logged = logs.text();
    assert!(logged.contains("authentication failed"), "{logged}");
    for form in [QUERY_TOKEN, encoded.as_str()] {
        for (place, text) in [
            ("the logs", &logged),
            ("the database", &stored),
            ("the sources page", &sources),
            ("an answer", &accepted),
        ] {
            assert!(!text.contains(form), "the token ({form}) is in {place}");
        }
    }
}
