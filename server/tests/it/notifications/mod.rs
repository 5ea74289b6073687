//! Notifications (contract section 14) against real receivers on loopback, on both backends:
//! a problem opened by failures and resolved by the replays that fix it, one message each;
//! changes within a channel's interval folded into one later message that counts them; a
//! failing channel retried and then served once; three processes on one PostgreSQL and one
//! message per change; `kill -9` between the change and the send; mail through a real SMTP
//! server; what a message never carries.
//!
//! The source `crm` of the problems' tests: its mapping is broken (every delivery fails,
//! "snapshot (/data) is missing") until a second server with the fixed mapping runs.
#![allow(clippy::unwrap_used)]

use crate::forwarder::Receiver;
use crate::problems::{crm, crm_failures};
use crate::support::*;
use app::schemes::Scheme;
use serde_json::Value as Json;
use std::path::Path;
use std::time::{Duration, Instant};

mod changes;
mod kept;
mod kinds;
mod mail;
mod processes;
mod races;

/// The class of `crm`'s failures while its mapping is broken.
pub(crate) const MISSING: &str = "snapshot (/data) is missing";
/// The secret the `webhook` channel signs with (`whsec_` + base64("notification-key")).
pub(crate) const CHANNEL_SECRET: &str = "whsec_bm90aWZpY2F0aW9uLWtleQ==";

/// The test sources, `crm` (broken or fixed) and the channels of `channels` (TOML).
pub(crate) fn config(fixed: bool, channels: &str, env: &[(&str, &str)]) -> app::config::Config {
    let field = if fixed { "/payload" } else { "/data" };
    let text = format!(
        "{CONFIG}
[[sources]]
name = \"crm\"
scheme = \"hmac-sha256\"
secrets_env = [\"SHOP_SECRET\"]
snapshot = \"{field}\"
{channels}"
    );
    let env = |name: &str| {
        env.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
            .or_else(|| test_env(name))
    };
    app::config::Config::parse(&text, Path::new("notifications.toml"), &env).expect("valid")
}

/// A `webhook` channel `ops` to `OPS_URL`, signed with `OPS_SECRET`, `min_interval_secs`.
pub(crate) fn webhook_channel(min_interval_secs: u64) -> String {
    format!(
        "
[[notifications]]
name = \"ops\"
kind = \"webhook\"
url_env = \"OPS_URL\"
secret_env = \"OPS_SECRET\"
min_interval_secs = {min_interval_secs}
"
    )
}

/// A server on a fresh database with `crm` broken and the `ops` webhook channel to `url`.
pub(crate) async fn broken(backend: Backend, url: &str, min_interval_secs: u64) -> TestApp {
    let env = [("OPS_URL", url), ("OPS_SECRET", CHANNEL_SECRET)];
    spawn_app_with(
        backend,
        config(false, &webhook_channel(min_interval_secs), &env),
    )
    .await
}

/// A second server on the same database, `crm` fixed, with the same channel.
pub(crate) async fn fixed(app: &TestApp, url: &str, min_interval_secs: u64) -> TestApp {
    let env = [("OPS_URL", url), ("OPS_SECRET", CHANNEL_SECRET)];
    let config = config(true, &webhook_channel(min_interval_secs), &env);
    spawn_app_on_with_state(app.db.clone(), config, |_| {}).await
}

/// A message's body as JSON, after checking its Standard Webhooks signature.
pub(crate) fn verified(message: &crate::forwarder::Received) -> Json {
    let key = Scheme::StandardWebhooks
        .parse_secret(CHANNEL_SECRET)
        .unwrap();
    let header = |name: &str| {
        message
            .headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_str()
            .unwrap()
            .to_string()
    };
    let (id, timestamp, signature) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    );
    assert!(id.starts_with("ntf_"), "{id}");
    let expected = Scheme::StandardWebhooks.sign(
        &key,
        &id,
        message.body.as_bytes(),
        timestamp.parse().unwrap(),
    );
    let signed = expected
        .iter()
        .find(|(name, _)| name.as_str() == "webhook-signature")
        .map(|(_, value)| value.clone())
        .unwrap();
    assert_eq!(signature, signed, "the signature of {}", message.body);
    serde_json::from_str(&message.body).unwrap()
}

/// Waits (at most 20 s) until no change waits to be handed to a channel and no copy is
/// pending: every message due is sent (or put off past `now`).
pub(crate) async fn settled(db: &app::db::Db) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting = scalar(
            db,
            "SELECT count(*) FROM notifications WHERE NOT fanned_out",
            vec![],
        )
        .await
        .unwrap_or(0);
        let leased = scalar(
            db,
            "SELECT count(*) FROM notification_sends WHERE status = 'pending' AND lease_until IS NOT NULL",
            vec![],
        )
        .await
        .unwrap_or(0);
        if waiting == 0 && leased == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{waiting} changes, {leased} sends in flight"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The statuses of every copy, oldest first, with its changes.
pub(crate) async fn sends(db: &app::db::Db) -> Vec<(String, i64)> {
    texts(
        db,
        "SELECT status, CAST(changes AS TEXT) FROM notification_sends ORDER BY id",
        vec![],
    )
    .await
    .into_iter()
    .map(|row| {
        (
            row[0].clone().unwrap(),
            row[1].as_deref().unwrap().parse().unwrap(),
        )
    })
    .collect()
}

/// Sends `n` failing `crm` deliveries, each answered after its problem's change was recorded.
pub(crate) async fn failures(app: &TestApp, prefix: &str, n: usize) -> Vec<i64> {
    let ids = crm_failures(app, prefix, n).await;
    assert_problem_open(app).await;
    ids
}

/// `crm`'s cause is marked open, and its `problem.opened` recorded, as soon as a failure is
/// answered: in the failing delivery's transaction, not later.
pub(crate) async fn assert_problem_open(app: &TestApp) {
    assert_eq!(
        scalar(
            &app.db,
            "SELECT count(*) FROM problems WHERE open AND source = 'crm'",
            vec![],
        )
        .await,
        Some(1),
        "the failure's answer came before its problem's change"
    );
    assert!(
        scalar(
            &app.db,
            "SELECT count(*) FROM notifications WHERE source = 'crm'",
            vec![],
        )
        .await
        .unwrap_or(0)
            >= 1,
        "no change recorded with the failure"
    );
}

/// The `crm` delivery of `event_id`, as its sender sends it.
pub(crate) fn crm_body(event_id: &str) -> String {
    crm(event_id, &format!("{event_id}-o"), 1)
}
