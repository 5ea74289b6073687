//! Re-sending delivered forward deliveries (issue 23, item 5) against a real receiver on
//! loopback: one delivery, every one delivered since a time (the count first, then the typed
//! confirmation; pending ones and superseded revisions left out), the bound on one re-send, a
//! viewer refused. This module holds the helpers `charts` shares: a forwarding server with an
//! operator and a viewer signed in.
//!
//! - `one`: one delivered delivery sent again, audited, and the re-sends refused.
//! - `since`: every delivery since a time, what it takes and leaves out, and its bound.
#![allow(clippy::unwrap_used)]

use crate::forwarder::{Receiver, config, wait_for_count};
use crate::support::*;
use app::model::Role;
use reqwest::StatusCode;
use serde_json::Value as Json;

mod one;
mod since;

pub(crate) fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A server forwarding `shop` to `orders-app` (the receiver), with an operator `olga` and a
/// viewer `vera` signed in: (app, receiver, operator's cookie, viewer's cookie).
pub(crate) async fn forwarding_app(
    backend: Backend,
    schedule: &str,
) -> (TestApp, Receiver, String, String) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let app = spawn_app_with(backend, config(&url, schedule)).await;
    let operator = signed_in(&app, "olga", Role::Operator).await;
    let viewer = signed_in(&app, "vera", Role::Viewer).await;
    (app, receiver, operator, viewer)
}

/// Sends `shop` event `event_id` of `object` at `revision` and waits until the destination
/// has it delivered (`delivered` rows in all).
pub(crate) async fn delivered(
    app: &TestApp,
    event_id: &str,
    object: &str,
    revision: i64,
    delivered: i64,
) {
    let answer = app
        .send("shop", &event(event_id, object, revision, r#"{"n":1}"#))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    wait_for_count(
        &app.db,
        "SELECT count(*) FROM forward_deliveries WHERE status = 'delivered'",
        delivered,
    )
    .await;
}

/// The id of the forward delivery of `event_id` created first.
pub(crate) async fn row_of(app: &TestApp, event_id: &str) -> i64 {
    scalar(
        &app.db,
        "SELECT min(id) FROM forward_deliveries WHERE event_id = $1",
        vec![event_id.into()],
    )
    .await
    .unwrap()
}

/// The audit rows of re-sends: (actor, target, outcome, detail).
pub(crate) async fn audited(app: &TestApp) -> Vec<Vec<Option<String>>> {
    texts(
        &app.db,
        "SELECT actor, target, outcome, detail FROM audit_log WHERE action = 'resend_forward' ORDER BY id",
        vec![],
    )
    .await
}
