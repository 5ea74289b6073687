//! Each kind's message as its service takes it: Slack's `{"text"}`, Discord's `{"content"}`, a
//! Teams message with an Adaptive Card; `hookbox notify test NAME` through a channel, and its
//! exit when the channel refuses; `check-config` naming a channel's missing variable.

use super::*;
use std::process::Command;

fn chat_channels() -> String {
    ["slack", "discord", "teams"]
        .iter()
        .map(|kind| {
            format!(
                "
[[notifications]]
name = \"{kind}-ops\"
kind = \"{kind}\"
url_env = \"{}_URL\"
min_interval_secs = 0
",
                kind.to_uppercase()
            )
        })
        .collect()
}

both_backends!(slack_discord_and_teams_each_get_the_change_in_their_own_shape);
async fn slack_discord_and_teams_each_get_the_change_in_their_own_shape(backend: Backend) {
    let (slack, slack_url) = Receiver::start(vec![]).await;
    let (discord, discord_url) = Receiver::start(vec![]).await;
    let (teams, teams_url) = Receiver::start(vec![]).await;
    let env = [
        ("SLACK_URL", slack_url.as_str()),
        ("DISCORD_URL", discord_url.as_str()),
        ("TEAMS_URL", teams_url.as_str()),
    ];
    let mut config = config(false, &chat_channels(), &env);
    config.server.public_url = Some("https://hookbox.example.com".into());
    let app = spawn_app_with(backend, config).await;

    failures(&app, "k", 2).await;
    let slack = slack.wait_for(1).await;
    let discord = discord.wait_for(1).await;
    let teams = teams.wait_for(1).await;
    settled(&app.db).await;

    let text: Json = serde_json::from_str(&slack[0].body).unwrap();
    let text = text["text"].as_str().expect("Slack's text");
    assert!(
        text.starts_with(&format!("hookbox: problem opened in crm: {MISSING}")),
        "{backend:?}: {text}"
    );
    assert!(text.contains("Source: crm"), "{text}");
    assert!(
        text.ends_with("https://hookbox.example.com/problems"),
        "{text}"
    );
    let content: Json = serde_json::from_str(&discord[0].body).unwrap();
    assert_eq!(
        content["content"].as_str(),
        Some(text),
        "Discord says the same"
    );
    let card: Json = serde_json::from_str(&teams[0].body).unwrap();
    assert_eq!(card["type"], "message");
    let attachment = &card["attachments"][0];
    assert_eq!(
        attachment["contentType"],
        "application/vnd.microsoft.card.adaptive"
    );
    assert_eq!(attachment["content"]["type"], "AdaptiveCard");
    assert_eq!(
        attachment["content"]["body"][0]["text"],
        format!("hookbox: problem opened in crm: {MISSING}")
    );
    assert_eq!(
        attachment["content"]["actions"][0]["url"],
        "https://hookbox.example.com/problems"
    );
    for message in [&slack[0], &discord[0], &teams[0]] {
        assert!(
            message.headers.get("webhook-signature").is_none(),
            "chat kinds are not signed"
        );
        assert!(!message.body.contains(SHOP_SECRET));
    }
}

/// Runs `hookbox notify test NAME` with a config file holding `channels`.
fn notify_test(channels: &str, name: &str, vars: &[(&str, &str)]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hookbox.toml");
    std::fs::write(
        &file,
        format!("[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"SHOP_SECRET\"]\n{channels}"),
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["notify", "test", name])
        .env_clear()
        .env("HOOKBOX_CONFIG", &file)
        .env("SHOP_SECRET", SHOP_SECRET)
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .envs(vars.iter().copied())
        .output()
        .unwrap()
}

#[tokio::test]
async fn notify_test_sends_a_test_message_and_says_what_the_channel_answered() {
    let (receiver, url) = Receiver::start(vec![(200, None), (404, None)]).await;
    let vars = [("OPS_URL", url.as_str()), ("OPS_SECRET", CHANNEL_SECRET)];
    let channel = webhook_channel(0);

    let took = tokio::task::spawn_blocking({
        let channel = channel.clone();
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move || {
            let vars: Vec<(&str, &str)> =
                vars.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            (
                notify_test(&channel, "ops", &vars),
                notify_test(&channel, "ops", &vars),
                notify_test(&channel, "nobody", &vars),
            )
        }
    })
    .await
    .unwrap();
    let (ok, refused, unknown) = took;

    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&ok.stdout).trim(),
        "ops (webhook): the channel took the test message"
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("ops (webhook): answered 404"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr)
            .contains("no notification channel named \"nobody\" (configured: ops)")
    );
    let got = receiver.got();
    assert_eq!(got.len(), 2);
    let message = verified(&got[0]);
    assert_eq!(message["type"], "problem.opened");
    assert_eq!(
        message["problem"]["class"],
        "a test message from hookbox notify test"
    );
    assert!(
        !got[0].body.contains(&url),
        "the channel's URL is never in a message"
    );
}

#[test]
fn check_config_names_a_channels_missing_variable_and_summarises_a_valid_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hookbox.toml");
    std::fs::write(
        &file,
        format!(
            "[[sources]]\nname = \"shop\"\nscheme = \"hmac-sha256\"\nsecrets_env = [\"SHOP_SECRET\"]\n{}
[[notifications]]
name = \"mail\"
kind = \"email\"
smtp_url_env = \"SMTP_URL\"
from = \"hookbox@example.com\"
to = [\"oncall@example.com\"]
sources = [\"shop\"]
",
            webhook_channel(300)
        ),
    )
    .unwrap();
    let run = |vars: &[(&str, &str)]| {
        Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .arg("check-config")
            .arg(&file)
            .env_clear()
            .env("SHOP_SECRET", SHOP_SECRET)
            .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
            .envs(vars.iter().copied())
            .output()
            .unwrap()
    };
    let secret_url = "https://hooks.example.com/T000/B000/very-secret-token";

    let missing = run(&[("OPS_URL", secret_url), ("OPS_SECRET", CHANNEL_SECRET)]);
    let valid = run(&[
        ("OPS_URL", secret_url),
        ("OPS_SECRET", CHANNEL_SECRET),
        ("SMTP_URL", "smtp://hookbox:password@smtp.example.com:587"),
    ]);

    let errors = String::from_utf8_lossy(&missing.stderr).to_string();
    assert!(!missing.status.success());
    assert!(
        errors.contains(
            "notifications.mail.smtp_url_env: environment variable SMTP_URL is unset or empty"
        ),
        "{errors}"
    );
    let summary = String::from_utf8_lossy(&valid.stdout).to_string();
    assert!(
        valid.status.success(),
        "{}",
        String::from_utf8_lossy(&valid.stderr)
    );
    assert!(
        summary.contains("notification ops: webhook, from OPS_URL, OPS_SECRET, every source"),
        "{summary}"
    );
    assert!(
        summary.contains("notification mail: email, from SMTP_URL, sources shop"),
        "{summary}"
    );
    for secret in ["very-secret-token", "password", CHANNEL_SECRET] {
        assert!(
            !summary.contains(secret) && !errors.contains(secret),
            "{secret} shown"
        );
    }
}
