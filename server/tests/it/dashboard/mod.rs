//! The dashboard's server functions and page guard: roles, sessions, throttling, cross-site
//! refusal, replay, and pages over a large archive. The shared helpers are here: a user, a
//! sign-in, a server-function call and a page as a browser gets it.
//!
//! - `access`: who may call what (anonymous, viewer, operator), sign-in and its throttle,
//!   sessions, cross-site refusal, the sign-in redirect, signature headers redacted by role.
//! - `replay`: single and bulk replay, their dry runs, filters and audit entries.
//! - `pages`: the overview, the events list and search, filters and error pages.
//! - `tokens_page`: `/tokens`, API tokens made, listed and revoked by operators only.
//! - `feed_page`: `/feed`, the pull feed's consumers and their lag.

use crate::support::*;
use app::auth;
use app::model::Role;
use reqwest::StatusCode;

mod access;
mod destinations;
mod error_pages;
mod export;
mod feed_page;
mod forward_pages;
mod heavy_pages;
mod in_flight;
mod pages;
mod payload_search;
mod reading;
mod rejected;
mod replay;
mod snapshot_cut;
mod tokens_page;
mod top_bar;

const PASSWORD: &str = "a long enough password";

async fn with_user(app: &TestApp, name: &str, role: Role) {
    auth::add_user(&app.db, name, PASSWORD, role)
        .await
        .expect("add user");
}

/// Signs in through the login server function; returns the session cookie.
async fn sign_in(
    app: &TestApp,
    name: &str,
    password: &str,
) -> Result<String, (StatusCode, String)> {
    let response = app
        .client
        .post(app.url("/api/login"))
        .header("Accept", "application/json")
        .form(&[("name", name), ("password", password), ("next", "/events")])
        .send()
        .await
        .expect("login answers");
    let status = response.status();
    let cookie = crate::support::session_cookie(response.headers());
    let text = response.text().await.unwrap_or_default();
    match cookie {
        Some(cookie) if status.is_success() || status.is_redirection() => Ok(cookie),
        _ => Err((status, text)),
    }
}

/// Calls a server function with form arguments.
async fn call(
    app: &TestApp,
    cookie: Option<&str>,
    endpoint: &str,
    args: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut request = app
        .client
        .post(app.url(&format!("/api/{endpoint}")))
        .form(args);
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    let response = request.send().await.expect("server function answers");
    (response.status(), response.text().await.unwrap_or_default())
}

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The first `<tag …>` of `html` whose text contains every one of `needles`.
fn tag_with<'a>(html: &'a str, tag: &str, needles: &[&str]) -> Option<&'a str> {
    html.match_indices(&format!("<{tag} "))
        .filter_map(|(start, _)| {
            let end = html[start..].find('>')?;
            Some(&html[start..=start + end])
        })
        .find(|t| needles.iter().all(|n| t.contains(n)))
}

/// A page as a signed-in user gets it: (status, HTML).
async fn page(app: &TestApp, cookie: Option<&str>, path: &str) -> (StatusCode, String) {
    let mut request = no_redirects().get(app.url(path));
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    let response = request.send().await.expect("page answers");
    (response.status(), response.text().await.unwrap_or_default())
}
