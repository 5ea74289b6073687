//! Re-sending delivered forward deliveries (issue 23, item 5) against a real receiver on
//! loopback: one delivery, every one delivered since a time (the count first, then the typed
//! confirmation; pending ones and superseded revisions left out), the bound on one re-send, a
//! viewer refused. This module holds the helpers `charts` shares: a forwarding server with an
//! operator and a viewer signed in, and a server-function call.
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

pub(crate) const PASSWORD: &str = "a long enough password";

pub(crate) fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Signs `name` in through the login server function; returns the session cookie.
pub(crate) async fn sign_in_as(app: &TestApp, name: &str, role: Role) -> String {
    app::auth::add_user(&app.db, name, PASSWORD, role)
        .await
        .expect("add user");
    let response = app
        .client
        .post(app.url("/api/login"))
        .header("Accept", "application/json")
        .form(&[("name", name), ("password", PASSWORD), ("next", "/")])
        .send()
        .await
        .expect("login answers");
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("hookbox_session="))
        .map(|v| v.split(';').next().unwrap_or_default().to_string())
        .expect("a session cookie")
}

/// Calls a server function with form arguments and the given cookies.
pub(crate) async fn call(
    app: &TestApp,
    cookie: &str,
    endpoint: &str,
    args: &[(&str, &str)],
) -> (StatusCode, String) {
    let response = app
        .client
        .post(app.url(&format!("/api/{endpoint}")))
        .header("Cookie", cookie)
        .form(args)
        .send()
        .await
        .expect("server function answers");
    (response.status(), response.text().await.unwrap_or_default())
}

/// A server forwarding `shop` to `orders-app` (the receiver), with an operator `olga` and a
/// viewer `vera` signed in: (app, receiver, operator's cookie, viewer's cookie).
pub(crate) async fn forwarding_app(
    backend: Backend,
    schedule: &str,
) -> (TestApp, Receiver, String, String) {
    let (receiver, url) = Receiver::start(Vec::new()).await;
    let app = spawn_app_with(backend, config(&url, schedule)).await;
    let operator = sign_in_as(&app, "olga", Role::Operator).await;
    let viewer = sign_in_as(&app, "vera", Role::Viewer).await;
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
