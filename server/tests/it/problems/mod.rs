//! Failures as problems, on both backends: what resolves a failure (a replay that does not
//! fail, the original of a replay of a replay), how open failures group by cause, the states an
//! operator gives a cause, what a bulk replay leaves out, the replay guard, the overview's and
//! the alert metrics' counts, and the bound on the page however many causes there are.
//!
//! The source `crm` maps its snapshot to `/data` at first, while its sender puts it in
//! `/payload`: every delivery fails ("snapshot (/data) is missing") until the operator fixes
//! the mapping ([`fixed`]: a second server on the same database with the fixed configuration).
//!
//! - `resolution`: replays that resolve, and those that do not.
//! - `grouping`: one group per cause, its count, first and last seen, example; the flood bound.
//! - `states`: acknowledge, resolve (and reopen), ignore.
//! - `bulk`: what a bulk replay skips, and its audit entry.
//! - `replay_guard`: the 409 of a replay that would fail as its original did.
//! - `counts`: the overview's and the metrics' open problems and failures, its newest open failures.
//! - `failing_again`: a failure of an open cause changes nothing of it; one that arrives while
//!   the cause is closed waits for the change, then opens it again.
//! - `forwarding`: a destination's dead deliveries as problems, resolved by a retry that delivers.
//!
//! [`broken`], [`fixed`] and [`crm_failures`] serve the dashboard's replay tests too: a bulk
//! replay replays only failures whose cause was fixed.

use crate::support::*;
use app::model::Role;
use reqwest::StatusCode;
use serde_json::Value as Json;
use std::path::Path;

mod bulk;
mod counts;
mod failing_again;
mod forwarding;
mod grouping;
mod replay_guard;
mod resolution;
mod states;

/// The test sources and `crm`, its snapshot mapped to `/data` (broken) or `/payload` (fixed).
fn config(fixed: bool) -> app::config::Config {
    let field = if fixed { "/payload" } else { "/data" };
    let text = format!(
        "{CONFIG}
[[sources]]
name = \"crm\"
scheme = \"hmac-sha256\"
secrets_env = [\"SHOP_SECRET\"]
snapshot = \"{field}\"
"
    );
    app::config::Config::parse(&text, Path::new("problems.toml"), &test_env).expect("valid")
}

/// A server whose `crm` mapping is broken, on a fresh database.
pub(crate) async fn broken(backend: Backend) -> TestApp {
    spawn_app_with(backend, config(false)).await
}

/// A second server on the same database, `crm` fixed (the operator's fix and restart).
pub(crate) async fn fixed(app: &TestApp) -> TestApp {
    spawn_app_on_with_state(app.db.clone(), config(true), |_| {}).await
}

/// A `crm` delivery as its sender sends it (the snapshot under `/payload`).
pub(crate) fn crm(event_id: &str, object_id: &str, revision: i64) -> String {
    format!(
        r#"{{"event_id":"{event_id}","object_id":"{object_id}","revision":{revision},"payload":{{"n":{revision}}}}}"#
    )
}

/// Sends `n` `crm` deliveries that fail while the mapping is broken; their archive ids.
pub(crate) async fn crm_failures(app: &TestApp, prefix: &str, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    for i in 0..n {
        let answer = app
            .send(
                "crm",
                &crm(
                    &format!("{prefix}-{i}"),
                    &format!("{prefix}-o{i}"),
                    1 + i as i64,
                ),
            )
            .await;
        assert_eq!(answer.status, 422, "{answer:?}");
        ids.push(archive_id(app, &format!("{prefix}-{i}")).await);
    }
    ids
}

/// A `crm` delivery that fails whatever the mapping: revision 0.
async fn bad_revision(app: &TestApp, event_id: &str) -> i64 {
    let answer = app.send("crm", &crm(event_id, "o-bad", 0)).await;
    assert_eq!(answer.status, 422, "{answer:?}");
    archive_id(app, event_id).await
}

/// The archive id of the first row of an event.
async fn archive_id(app: &TestApp, event_id: &str) -> i64 {
    scalar(
        &app.db,
        "SELECT id FROM webhook_events WHERE event_id = $1 ORDER BY id LIMIT 1",
        vec![event_id.into()],
    )
    .await
    .expect("archived")
}

/// `resolved_by` of an archive row.
async fn resolved_by(app: &TestApp, id: i64) -> Option<i64> {
    texts(
        &app.db,
        "SELECT CAST(resolved_by AS TEXT) FROM webhook_events WHERE id = $1",
        vec![id.into()],
    )
    .await
    .into_iter()
    .next()
    .and_then(|mut row| row.remove(0))
    .map(|id| id.parse().expect("an id"))
}

/// [`call`] with the answer as JSON (a text that is not JSON as a JSON string).
async fn call_json(
    app: &TestApp,
    cookie: &str,
    endpoint: &str,
    args: &[(&str, &str)],
) -> (StatusCode, Json) {
    let (status, text) = call(app, cookie, endpoint, args).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Json::String(text)),
    )
}

/// A page's HTML as a signed-in user gets it.
async fn page(app: &TestApp, cookie: &str, path: &str) -> String {
    let response = app
        .client
        .get(app.url(path))
        .header("Cookie", cookie)
        .send()
        .await
        .expect("page answers");
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    response.text().await.unwrap_or_default()
}

/// A confirmed replay of one delivery (the typed override when `anyway`): the status and answer.
async fn replay(app: &TestApp, cookie: &str, id: i64, anyway: bool) -> (StatusCode, Json) {
    let id = id.to_string();
    let mut args = vec![("id", id.as_str()), ("confirm", "true")];
    if anyway {
        args.push(("anyway", app::model::REPLAY_ANYWAY));
    }
    call_json(app, cookie, "replay", &args).await
}

/// The `/problems` page's data.
async fn problems(app: &TestApp, cookie: &str) -> Json {
    let (status, page) = call_json(app, cookie, "problems", &[]).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page
}

/// The open groups of the page: (source, outcome, class, count).
fn open_groups(page: &Json) -> Vec<(String, String, String, i64)> {
    page["open"]
        .as_array()
        .expect("open groups")
        .iter()
        .map(|g| {
            (
                g["cause"]["source"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                g["cause"]["outcome"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                g["cause"]["class"].as_str().unwrap_or_default().to_string(),
                g["count"].as_i64().unwrap_or_default(),
            )
        })
        .collect()
}

/// The class of a `crm` delivery while the mapping is broken.
const MISSING: &str = "snapshot (/data) is missing";
/// The class of a revision 0.
const BAD_REVISION: &str = "revision (/revision) must be at least N";
