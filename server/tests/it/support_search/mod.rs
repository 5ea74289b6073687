//! The top bar's search (`/search?q=`, the `find` server function, `app::db::support_search`) on both
//! backends, and the object page of a dedup source.
//!
//! - `ids`: exact, prefix and suffix matches of object and event ids, case and `#` aside, LIKE
//!   wildcards taken literally, events without an object;
//! - `bodies`: a value anywhere in a body (an email, an order number), results grouped by object
//!   with the current revision and newest delivery, the wording of an empty result;
//! - `bounds`: SQLite's bounded scan, the length bound, the body search's permits and deadline;
//! - `objects`: a dedup source's object lists its accepted deliveries, and "never applied" only
//!   where it is true.
#![allow(clippy::unwrap_used)]

use crate::support::*;
use app::model::Role;
use reqwest::StatusCode;
use serde_json::Value as Json;

mod bodies;
mod bounds;
mod ids;
mod objects;

/// What the `find` server function answers for `q`, or the refusal.
async fn find(app: &TestApp, cookie: &str, q: &str) -> Result<Json, (StatusCode, String)> {
    let (status, body) = call(app, cookie, "find", &[("q", q)]).await;
    if status != StatusCode::OK {
        return Err((status, body));
    }
    Ok(serde_json::from_str(&body).unwrap())
}

/// A page as the signed-in browser gets it: (status, HTML).
async fn page(app: &TestApp, cookie: &str, path: &str) -> (StatusCode, String) {
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap()
        .get(app.url(path))
        .header("Cookie", cookie)
        .send()
        .await
        .expect("page answers");
    (response.status(), response.text().await.unwrap_or_default())
}

/// The objects of a result as `source/object_id`, in the order shown.
fn objects(result: &Json) -> Vec<String> {
    result["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["source"].as_str().unwrap(),
                o["object_id"].as_str().unwrap()
            )
        })
        .collect()
}

/// The object `source/object_id` of a result.
fn object<'a>(result: &'a Json, key: &str) -> &'a Json {
    result["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| {
            format!(
                "{}/{}",
                o["source"].as_str().unwrap(),
                o["object_id"].as_str().unwrap()
            ) == key
        })
        .unwrap_or_else(|| panic!("{key} not in {result}"))
}

/// How an object or event matched: `["ObjectId Suffix", …]`.
fn matched(found: &Json) -> Vec<String> {
    found["matched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{} {}",
                m["field"].as_str().unwrap(),
                m["how"].as_str().unwrap()
            )
        })
        .collect()
}

/// Accepts `event_id` about `object_id` at `revision` on `source`, checking it was applied.
async fn applied(
    app: &TestApp,
    source: &str,
    event_id: &str,
    object_id: &str,
    revision: i64,
    snapshot: &str,
) {
    let answer = app
        .send(source, &event(event_id, object_id, revision, snapshot))
        .await;
    assert_eq!(answer.outcome(), "applied", "{event_id}: {answer:?}");
}

/// A delivery of the dedup source `gh` (event id and type in headers, object id at
/// `/repository/id` when `repository` is given).
async fn gh(app: &TestApp, delivery: &str, kind: &str, repository: Option<&str>) -> Answer {
    let body = match repository {
        Some(id) => format!(r#"{{"action":"{kind}","repository":{{"id":"{id}"}}}}"#),
        None => format!(r#"{{"action":"{kind}"}}"#),
    };
    app.send_bytes(
        "gh",
        body.as_bytes(),
        &[("X-Delivery-Id", delivery), ("X-Event", kind)],
    )
    .await
}
