//! Asana's and Notion's unsigned first request, which hands the source's signing secret over:
//! refused (401) unless an operator waits for it with `hookbox handshake`; with a wait, answered
//! as the provider requires (Asana's `X-Hook-Secret` echoed), sealed to the waiting operator's
//! key (the database holds no secret), taken once, never archived; and bounded per second. The
//! command itself, as a process, prints the secret it collected.
#![allow(clippy::unwrap_used)]

use super::forms::eventually_causes;
use super::*;
use server::handshake::Waiting;

const ASANA_SECRET: &str = "8b6d1f0c3e5a7b9d2f4a6c8e0b1d3f5a";
const NOTION_TOKEN: &str = "secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl";

/// Sources that start with no secret: it comes from their handshake.
const CONFIG: &str = "[[sources]]\nname = \"asana\"\npreset = \"asana\"\n\
                      [[sources]]\nname = \"notion\"\npreset = \"notion\"\n";

fn handshakes_config() -> Config {
    Config::parse(CONFIG, Path::new("handshakes.toml"), &|_| None).unwrap()
}

fn asana_handshake(secret: &str) -> Vec<(String, String)> {
    vec![
        ("Content-Type".into(), "application/json".into()),
        ("X-Hook-Secret".into(), secret.into()),
    ]
}

both_backends!(a_secret_handed_over_unsigned_is_taken_only_for_a_waiting_operator);
async fn a_secret_handed_over_unsigned_is_taken_only_for_a_waiting_operator(backend: Backend) {
    let app = spawn_app_with(backend, handshakes_config()).await;
    // No one waits: refused, and the secret goes nowhere.
    let unwanted = app
        .post("asana", &asana_handshake(ASANA_SECRET), b"".to_vec())
        .await;
    assert_eq!(unwanted.status, 401);
    assert!(unwanted.headers.get("x-hook-secret").is_none());

    let waiting = Waiting::open(&app.db, "asana", 60).await.unwrap();
    let answered = app
        .post("asana", &asana_handshake(ASANA_SECRET), b"".to_vec())
        .await;
    assert_eq!(answered.status, 200);
    assert_eq!(answered.headers["x-hook-secret"], ASANA_SECRET);
    // Sealed: the row holds bytes only the waiting operator's key opens.
    let sealed = bytes(&app.db, "SELECT sealed FROM handshake_waits").await;
    assert!(sealed.len() > ASANA_SECRET.len());
    assert!(
        !sealed
            .windows(ASANA_SECRET.len())
            .any(|w| w == ASANA_SECRET.as_bytes())
    );
    let (secret, client) = waiting.collect(&app.db).await.unwrap().unwrap();
    assert_eq!(
        (secret.as_str(), client.as_str()),
        (ASANA_SECRET, "127.0.0.1")
    );
    // One handshake per wait: another one (a forger racing Asana) is refused. (A second later:
    // the source takes two unsigned handshakes a second.)
    app::clock::advance(std::time::Duration::from_millis(1100));
    let second = app
        .post("asana", &asana_handshake("forged-secret"), b"".to_vec())
        .await;
    assert_eq!(second.status, 401);

    // Notion's verification token, in its body.
    let waiting = Waiting::open(&app.db, "notion", 60).await.unwrap();
    let body = format!(r#"{{"verification_token":"{NOTION_TOKEN}"}}"#);
    let json = vec![("Content-Type".to_string(), "application/json".to_string())];
    let answered = app.post("notion", &json, body.clone().into()).await;
    assert_eq!(answered.status, 200);
    assert!(!answered.body.to_string().contains(NOTION_TOKEN));
    let (secret, _) = waiting.collect(&app.db).await.unwrap().unwrap();
    assert_eq!(secret, NOTION_TOKEN);

    assert_eq!(
        count(&app.db, "SELECT count(*) FROM webhook_events").await,
        0,
        "a handshake is no event"
    );
    let causes = eventually_causes(&app, "asana", 2).await;
    assert_eq!(
        causes,
        [
            "a handshake handing over a secret, and no operator waits for one (hookbox handshake SOURCE)",
            "a handshake handing over a secret, and no operator waits for one (hookbox handshake SOURCE)"
        ]
    );
    let mut stored = String::new();
    for row in texts(
        &app.db,
        "SELECT cause, headers FROM rejected_requests",
        vec![],
    )
    .await
    {
        stored.extend(row.into_iter().flatten());
    }
    assert!(
        !stored.contains(ASANA_SECRET) && !stored.contains("forged-secret"),
        "{stored}"
    );
}

both_backends!(unsigned_handshakes_are_bounded_before_the_database_is_asked);
async fn unsigned_handshakes_are_bounded_before_the_database_is_asked(backend: Backend) {
    let app = spawn_app_with(backend, handshakes_config()).await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let answer = app
            .post("asana", &asana_handshake(ASANA_SECRET), b"".to_vec())
            .await;
        statuses.push(answer.status);
    }
    // A burst of two a second, then 429 with the wait.
    assert_eq!(statuses[..2], [401, 401]);
    assert!(statuses[2..].contains(&429), "{statuses:?}");
    // Too many waits for one source are refused too.
    for _ in 0..app::db::handshakes::MAX_OPEN_WAITS {
        Waiting::open(&app.db, "asana", 60).await.unwrap();
    }
    assert!(Waiting::open(&app.db, "asana", 60).await.is_err());
}

/// `hookbox handshake asana`, a process of its own on the test's database, prints the secret.
#[tokio::test]
async fn the_handshake_command_prints_the_secret_it_collected() {
    let app = spawn_app_with(Backend::Postgres, handshakes_config()).await;
    let url = app.test_db.as_ref().unwrap().url.clone();
    let dir = tempfile::tempdir().unwrap();
    let config_file = dir.path().join("hookbox.toml");
    std::fs::write(&config_file, CONFIG).unwrap();
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["handshake", "asana", "--wait-secs", "30"])
        .env("DATABASE_URL", &url)
        .env("HOOKBOX_CONFIG", &config_file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once its wait is open, Asana's handshake arrives.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while count(&app.db, "SELECT count(*) FROM handshake_waits").await == 0 {
        assert!(std::time::Instant::now() < deadline, "no wait was opened");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let answered = app
        .post("asana", &asana_handshake(ASANA_SECRET), b"".to_vec())
        .await;
    assert_eq!(answered.status, 200);
    let output = command.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        stdout.trim_end().lines().last(),
        Some(ASANA_SECRET),
        "{stderr}"
    );
    assert!(stderr.contains("from 127.0.0.1"), "{stderr}");
    assert_eq!(
        count(&app.db, "SELECT count(*) FROM handshake_waits").await,
        0,
        "the command closes its wait"
    );
}
