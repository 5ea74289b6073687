//! Routes (contract section 16) against real HTTP destinations on loopback: each destination is
//! sent what its routes match and a `forward` one everything, once; the containment of a route's
//! `match` is `/events`' own on the same rows; a revision that does not match supersedes nothing
//! while a destination is paused; three processes on one PostgreSQL send each delivery once;
//! the API lists routes and previews one within a payload search's bounds.
//!
//! - `sending`: who is sent what, the event page's reasons, the ordering rule, three processes.
//! - `preview`: containment against `/events`' `match`, the preview API and its bounds.
#![allow(clippy::unwrap_used)]

use crate::forwarder::Receiver;
use crate::support::*;
use std::path::Path;

mod preview;
mod sending;

/// Three destinations on their own receivers: `billing` gets paid orders and paid invoices,
/// `warehouse` shipped orders, `analytics` everything (`forward`, and a route naming it too).
pub(crate) fn routed_config(
    billing: &str,
    warehouse: &str,
    analytics: &str,
) -> app::config::Config {
    let text = format!(
        r#"
[[destinations]]
name = "billing"
url = "{billing}"
secret_env = "DESTINATION_SECRET"
retry_schedule_secs = [1]

[[destinations]]
name = "warehouse"
url = "{warehouse}"
secret_env = "DESTINATION_SECRET"
retry_schedule_secs = [1]

[[destinations]]
name = "analytics"
url = "{analytics}"
secret_env = "DESTINATION_SECRET"
retry_schedule_secs = [1]

[[sources]]
name = "shop"
scheme = "hmac-sha256"
secrets_env = ["SHOP_SECRET"]
forward = ["analytics"]

[[routes]]
name = "paid"
source = "shop"
destination = "billing"
event_types = ["order.*", "invoice.paid"]
match = {{ snapshot = {{ status = "paid" }} }}

[[routes]]
name = "shipped"
source = "shop"
destination = "warehouse"
event_types = ["order.shipped"]

[[routes]]
name = "analytics-too"
source = "shop"
destination = "analytics"
"#
    );
    app::config::Config::parse(&text, Path::new("routes.toml"), &test_env).expect("valid")
}

/// Three receivers and their URLs: billing, warehouse, analytics.
pub(crate) async fn receivers() -> ([Receiver; 3], [String; 3]) {
    let (billing, b) = Receiver::start(Vec::new()).await;
    let (warehouse, w) = Receiver::start(Vec::new()).await;
    let (analytics, a) = Receiver::start(Vec::new()).await;
    ([billing, warehouse, analytics], [b, w, a])
}

/// A snapshot event of `type`.
pub(crate) fn typed(
    event_id: &str,
    object: &str,
    revision: i64,
    kind: &str,
    snapshot: &str,
) -> String {
    format!(
        r#"{{"event_id":"{event_id}","object_id":"{object}","revision":{revision},"type":"{kind}","snapshot":{snapshot}}}"#
    )
}

/// (event_id, revision) of each request a receiver got, in arrival order.
pub(crate) fn got_events(receiver: &Receiver) -> Vec<(String, i64)> {
    receiver
        .got()
        .iter()
        .map(|r| {
            let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
            (
                body["event_id"].as_str().unwrap().to_string(),
                body["revision"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// (destination, event_id) of every forward row, sorted.
pub(crate) async fn forward_pairs(db: &app::db::Db) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = texts(
        db,
        "SELECT destination, event_id FROM forward_deliveries",
        vec![],
    )
    .await
    .into_iter()
    .map(|row| (row[0].clone().unwrap(), row[1].clone().unwrap()))
    .collect();
    pairs.sort();
    pairs
}

pub(crate) fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = items
        .iter()
        .map(|(d, e)| (d.to_string(), e.to_string()))
        .collect();
    pairs.sort();
    pairs
}
