//! Signing in and calling server functions as the dashboard's browser does.

use super::TestApp;
use app::model::Role;
use reqwest::StatusCode;

/// The password of every user [`signed_in`] adds.
pub const PASSWORD: &str = "a long enough password";

/// Adds the user `name` with `role`, signs in through the login server function and returns
/// the session cookie (`hookbox_session=…`).
pub async fn signed_in(app: &TestApp, name: &str, role: Role) -> String {
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
    crate::support::session_cookie(response.headers()).expect("a session cookie")
}

/// Calls the server function `endpoint` with form arguments and the session `cookie`: the
/// status and the answer's text.
pub async fn call(
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

/// The session cookie (`hookbox_session=…`) an answer sets, as a `Cookie` header sends it back.
pub fn session_cookie(headers: &reqwest::header::HeaderMap) -> Option<String> {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("hookbox_session="))
        .and_then(|v| v.split(';').next())
        .map(str::to_string)
}
