//! Calls to `/api/v1` with an API token, shared by the tests of the API, the feed and the
//! tokens page.
#![allow(clippy::unwrap_used)]

use super::TestApp;
use app::auth::tokens::add_token;
use app::model::Role;

/// A token named `name` for `sources` (empty: all), made as an operator would.
pub async fn token(app: &TestApp, name: &str, role: Role, sources: &[&str]) -> String {
    let sources: Vec<String> = sources.iter().map(|s| s.to_string()).collect();
    add_token(
        &app.db,
        name,
        role,
        &sources,
        None,
        "olga",
        &["shop", "sw", "gh", "limited"],
    )
    .await
    .unwrap()
}

/// The answer to `GET path` with `token`: status, content type and the body as JSON.
pub async fn get(
    app: &TestApp,
    token: Option<&str>,
    path: &str,
) -> (u16, String, serde_json::Value) {
    let mut request = app.client.get(app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (status, content_type, body)
}

/// The answer to `POST path` with `token` and a JSON `body`: status and the body as JSON.
pub async fn post(app: &TestApp, token: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    send_json(app, reqwest::Method::POST, token, path, body).await
}

/// The answer to `method path` with `token` and a JSON `body`: status and the body as JSON (or
/// as a string when it is not JSON).
pub async fn send_json(
    app: &TestApp,
    method: reqwest::Method,
    token: &str,
    path: &str,
    body: &str,
) -> (u16, serde_json::Value) {
    let response = app
        .client
        .request(method, app.url(path))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
    )
}
