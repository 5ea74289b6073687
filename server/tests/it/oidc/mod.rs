//! Single sign-on (contract section 17), against providers on loopback: the certified
//! `oidc-provider` (npm) for the whole flow and role changes (`real.rs`), and a hostile provider
//! written here for what a certified one never sends (`hostile.rs`); the bounds of what an
//! anonymous browser can start (`bounds.rs`).
#![allow(clippy::unwrap_used)]

mod bounds;
pub mod hostile;
mod real;

use crate::support::{Backend, TestApp, spawn_app_on_listener, texts};
use app::config::Config;
use std::path::Path;
use tokio::net::TcpListener;

pub const CLIENT_ID: &str = "hookbox";
pub const CLIENT_SECRET: &str = "client-secret-of-the-test-provider";

/// hookbox's configuration for a provider at `issuer`, hookbox itself at `public_url`.
pub fn config(public_url: &str, issuer: &str, extra: &str) -> Config {
    let text = format!(
        r#"
[server]
public_url = "{public_url}"

[auth.oidc]
issuer = "{issuer}"
client_id = "{CLIENT_ID}"
client_secret_env = "OIDC_SECRET"
scopes = ["openid", "profile", "email", "groups"]
role_claim = "groups"
operator_values = ["hookbox-operators"]
viewer_values = ["support"]
{extra}
"#
    );
    Config::parse(&text, Path::new("oidc.toml"), &|name| {
        (name == "OIDC_SECRET").then(|| CLIENT_SECRET.to_string())
    })
    .expect("the single sign-on configuration is valid")
}

/// hookbox with single sign-on through the provider at `issuer`.
pub async fn spawn(backend: Backend, issuer: &str, extra: &str) -> TestApp {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let public_url = format!("http://{}", listener.local_addr().unwrap());
    spawn_app_on_listener(backend, listener, config(&public_url, issuer, extra)).await
}

/// A client that follows no redirect: each step of the flow is looked at.
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap()
}

/// A started sign-in as the browser sees it: the provider's URL and its parameters, and the
/// flow's cookie hookbox set.
pub struct Started {
    pub location: url::Url,
    pub state: String,
    pub nonce: String,
    pub challenge: String,
    pub flow_cookie: String,
}

/// `GET /auth/oidc/start?next=…` from `address` (a header the test server trusts is not set:
/// every test browser is 127.0.0.1).
pub async fn start(app: &TestApp, next: &str) -> Started {
    let response = browser()
        .get(app.url(&format!(
            "/auth/oidc/start?next={}",
            app::url::urlencode(next)
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        reqwest::StatusCode::SEE_OTHER,
        "the start redirects"
    );
    let location = url::Url::parse(response.headers()["location"].to_str().unwrap()).unwrap();
    let flow_cookie = set_cookie(&response, app::auth::oidc::FLOW_COOKIE)
        .expect("the start sets the flow's cookie");
    let param = |name: &str| {
        location
            .query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
            .unwrap_or_else(|| panic!("the authorization URL has no {name}: {location}"))
    };
    assert_eq!(param("response_type"), "code");
    assert_eq!(param("client_id"), CLIENT_ID);
    assert_eq!(param("code_challenge_method"), "S256");
    assert!(param("scope").split(' ').any(|s| s == "openid"));
    assert_eq!(
        param("redirect_uri"),
        format!("http://{}/auth/oidc/callback", app.addr)
    );
    Started {
        state: param("state"),
        nonce: param("nonce"),
        challenge: param("code_challenge"),
        location,
        flow_cookie,
    }
}

/// The cookie `name=value` an answer sets, when it sets one with a value.
pub fn set_cookie(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .find(|pair| pair.starts_with(&format!("{name}=")) && pair.len() > name.len() + 1)
        .map(str::to_string)
}

/// What a callback answered: where it sends the browser, and the session cookie if any.
#[derive(Debug)]
pub struct Landed {
    pub status: reqwest::StatusCode,
    pub location: String,
    pub session: Option<String>,
}

/// `GET /auth/oidc/callback?…` with `cookie`.
pub async fn callback(app: &TestApp, query: &str, cookie: Option<&str>) -> Landed {
    let mut request = browser().get(app.url(&format!("/auth/oidc/callback?{query}")));
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    let response = request.send().await.unwrap();
    Landed {
        status: response.status(),
        location: response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        session: set_cookie(&response, "hookbox_session"),
    }
}

/// The audit rows of sign-ins: (actor, outcome, detail), oldest first.
pub async fn sign_in_audit(app: &TestApp) -> Vec<(String, String, String)> {
    texts(
        &app.db,
        "SELECT actor, outcome, detail FROM audit_log WHERE action = 'sign_in' ORDER BY id",
        vec![],
    )
    .await
    .into_iter()
    .map(|row| {
        let text = |i: usize| row[i].clone().unwrap_or_default();
        (text(0), text(1), text(2))
    })
    .collect()
}

/// Who a session cookie signs in: (name, role) from `/api/me`.
pub async fn whoami(app: &TestApp, session: &str) -> Option<(String, String)> {
    let (status, body) = crate::support::call(app, session, "me", &[]).await;
    if status != reqwest::StatusCode::OK {
        return None;
    }
    let me: serde_json::Value = serde_json::from_str(&body).ok()?;
    Some((
        me["name"].as_str()?.to_string(),
        me["role"].as_str()?.to_lowercase(),
    ))
}
