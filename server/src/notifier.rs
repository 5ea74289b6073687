//! The notifier every `hookbox serve` runs (contract section 14). A problem's changes are
//! recorded in the transactions that make them (a failed delivery's, an operator's, a
//! replay's); the notifier sweeps every [`SWEEP_EVERY`] for a cause a purge left marked open,
//! hands the recorded changes to the channels and sends each channel's due messages: HTTP for
//! the chat kinds and `webhook`, SMTP for `email`. No database transaction is open during a
//! send.

use crate::background::Background;
use app::config::Config;
use app::config::notifications::{Channel, Target};
use app::db::Db;
use app::model::{NotifyEvent, Stage};
use app::notify::message::{self, Facts, Message};
use app::notify::outbox::{self, Claimed, Settled};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the notifier sweeps for undecided causes.
pub const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// How often it looks for messages due when nothing woke it.
const TICK: Duration = Duration::from_secs(1);
/// One send's limit (a chat webhook, a mail server's whole dialogue).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(15);
/// Runs until `background` is cancelled.
pub async fn run(db: Db, config: Arc<Config>, background: Background) {
    let stop = background.token().clone();
    let worker = format!("{}-{:08x}", std::process::id(), rand::random::<u32>());
    let client = http_client();
    let mut last_sweep: Option<Instant> = None;
    let mut last_gauge: Option<Instant> = None;
    loop {
        if last_sweep.is_none_or(|at| at.elapsed() >= SWEEP_EVERY) {
            last_sweep = Some(Instant::now());
            match app::notify::sweep(&db).await {
                Ok(0) => {}
                Ok(changes) => tracing::info!(changes, "notifier: the sweep recorded changes"),
                Err(e) => tracing::warn!(error = %e, "notifier: sweep failed; trying again"),
            }
        }
        if !config.notifications.is_empty() {
            send_due(&db, &config, &client, &worker).await;
            if last_gauge.is_none_or(|at| at.elapsed() >= Duration::from_secs(15)) {
                last_gauge = Some(Instant::now());
                gauge_pending(&db, &config).await;
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(TICK) => {}
        }
    }
}

/// Hands the recorded changes to the channels, then sends what each channel has due.
async fn send_due(db: &Db, config: &Config, client: &reqwest::Client, worker: &str) {
    loop {
        match outbox::fan_out(db, &config.notifications).await {
            Ok(n) if n > 0 => continue,
            Ok(_) => break,
            Err(e) => {
                tracing::warn!(error = %e, "notifier: changes not handed to the channels; trying again");
                break;
            }
        }
    }
    let lease = SEND_TIMEOUT * 4;
    for channel in &config.notifications {
        let claimed = match outbox::claim(db, channel, worker, lease).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, notification = %channel.name, "notifier: cannot claim messages; trying again");
                continue;
            }
        };
        for message in claimed {
            let answer = send(channel, &message, config, client).await;
            settle(db, channel, &message, answer).await;
        }
    }
}

/// Records what the channel answered, counted and logged (never the URL or the message).
async fn settle(db: &Db, channel: &Channel, claimed: &Claimed, answer: Result<(), String>) {
    let error = answer.err();
    let counter = |outcome: &'static str, n: usize| {
        metrics::counter!("hookbox_notifications_total", "notification" => channel.name.clone(), "outcome" => outcome)
            .increment(n as u64);
    };
    match outbox::settle(db, claimed, error.as_deref()).await {
        Ok(Settled::Sent) => {
            counter("sent", 1);
            counter("folded", claimed.copies.len().saturating_sub(1));
            tracing::info!(notification = %channel.name, event = claimed.event.as_str(), changes = claimed.changes, "notification sent");
        }
        Ok(Settled::Retry) => {
            counter("failed", 1);
            tracing::warn!(notification = %channel.name, event = claimed.event.as_str(), error = error.as_deref().unwrap_or(""), "notification not taken; it will be sent again");
        }
        Ok(Settled::GaveUp) => {
            counter("failed", 1);
            tracing::error!(notification = %channel.name, event = claimed.event.as_str(), error = error.as_deref().unwrap_or(""), "notification given up after 24 hours of attempts");
        }
        Err(e) => {
            tracing::warn!(notification = %channel.name, error = %e, "notification's answer not recorded; it may be sent again when its lease ends")
        }
    }
}

/// `hookbox_notifications_pending{notification}` of every channel (0 when none waits).
async fn gauge_pending(db: &Db, config: &Config) {
    let Ok(waiting) = outbox::waiting(db).await else {
        return;
    };
    for channel in &config.notifications {
        let n = waiting
            .iter()
            .find(|w| w.channel == channel.name)
            .map_or(0, |w| w.count);
        metrics::gauge!("hookbox_notifications_pending", "notification" => channel.name.clone())
            .set(n as f64);
    }
}

/// The client of every HTTP channel: a timeout, no redirects (a redirect could carry the
/// message elsewhere).
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(SEND_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "notifier: no HTTP client with a timeout; using the default");
            reqwest::Client::new()
        })
}

/// Sends a claimed message through `channel`.
async fn send(
    channel: &Channel,
    claimed: &Claimed,
    config: &Config,
    client: &reqwest::Client,
) -> Result<(), String> {
    let facts = Facts::parse(claimed.event, &claimed.facts)
        .map_err(|e| format!("the change's facts do not read: {e}"))?;
    let public_url = config.server.public_url.as_deref();
    let words = message::words(claimed.event, &facts, claimed.changes, public_url);
    deliver(
        channel,
        claimed.id,
        claimed.event,
        &facts,
        claimed.changes,
        &words,
        client,
    )
    .await
}

/// Sends `words` (and, for `webhook`, the facts) through `channel`; `id` names the message
/// (`webhook-id`). Errors in words that never carry the channel's URL or credentials.
pub async fn deliver(
    channel: &Channel,
    id: i64,
    event: NotifyEvent,
    facts: &Facts,
    changes: i64,
    words: &Message,
    client: &reqwest::Client,
) -> Result<(), String> {
    match &channel.target {
        Target::Http { url, .. } => {
            let body = message::http_body(channel.kind, event, facts, changes, words).to_string();
            let mut request = client
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json");
            for (name, value) in message::signed_headers(channel, id, &body) {
                request = request.header(name.as_str(), value);
            }
            match request.body(body).send().await {
                Ok(response) if response.status().is_success() => Ok(()),
                Ok(response) => Err(format!("answered {}", response.status().as_u16())),
                Err(e) if e.is_timeout() => Err(format!(
                    "{} {} s",
                    app::model::NO_ANSWER_WITHIN,
                    SEND_TIMEOUT.as_secs()
                )),
                Err(e) if e.is_connect() => Err(app::model::CONNECTION_FAILED.to_string()),
                Err(_) => Err("the request failed".to_string()),
            }
        }
        Target::Email { smtp_url, from, to } => {
            crate::mail::send(
                smtp_url,
                from,
                to,
                (&words.title, &words.text()),
                SEND_TIMEOUT,
            )
            .await
        }
    }
}

/// `hookbox notify test NAME`: a test message through the channel, with what it answered.
pub async fn test(config: &Config, name: &str) -> anyhow::Result<String> {
    let channel = config
        .notifications
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = config
                .notifications
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            anyhow::anyhow!(
                "no notification channel named {name:?} (configured: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        })?;
    let facts = Facts::Problem(app::model::ProblemInfo {
        id: 0,
        source: "hookbox".into(),
        outcome: Stage::Ingest(app::model::OutcomeKind::Invalid),
        class: "a test message from hookbox notify test".into(),
        state: "open".into(),
        open_failures: 0,
        first_seen: None,
        last_seen: None,
        example_event_id: None,
    });
    let mut words = message::words(
        NotifyEvent::Opened,
        &facts,
        1,
        config.server.public_url.as_deref(),
    );
    words.title = format!("hookbox: a test message through the channel {name}");
    let kind = channel.kind;
    deliver(
        channel,
        0,
        NotifyEvent::Opened,
        &facts,
        1,
        &words,
        &http_client(),
    )
    .await
    .map(|()| {
        format!(
            "{name} ({}): the channel took the test message",
            kind.as_str()
        )
    })
    .map_err(|why| anyhow::anyhow!("{name} ({}): {why}", kind.as_str()))
}

/// `hookbox notify test NAME` with the config file of the environment: prints the answer.
pub async fn test_command(name: &str) -> anyhow::Result<()> {
    let config = Config::load_from_env().map_err(|problems| {
        anyhow::anyhow!(
            "the config file has problems (hookbox check-config lists them): {}",
            problems.0.len()
        )
    })?;
    println!("{}", test(&config, name).await?);
    Ok(())
}
