//! The browser's way through single sign-on: `GET /auth/oidc/start` sends it to the provider,
//! `GET /auth/oidc/callback` takes it back. Every refusal ends on `/login?sso=…`, which says in
//! a few words what failed (no detail an attacker could use); the audit log names the reason.

use super::Provider;
use crate::AppState;
use crate::request_id::RequestId;
use crate::routes::answers::unavailable;
use app::auth::{self, oidc};
use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use std::sync::Arc;

/// Where the browser comes back, relative to `[server] public_url`.
pub const CALLBACK_PATH: &str = "/auth/oidc/callback";
pub const START_PATH: &str = "/auth/oidc/start";
/// The longest query a callback may carry (a code, a state, an error and its description).
const MAX_QUERY_BYTES: usize = 8 * 1024;

/// What `/login?sso=…` says.
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// The flow is unknown, used or expired: start again.
    Expired,
    /// The provider's answer was refused (audited).
    Failed,
    /// The user has no role in hookbox.
    NoRole,
    /// The provider cannot be reached now.
    Unavailable,
}

impl Failure {
    fn code(self) -> &'static str {
        match self {
            Failure::Expired => "expired",
            Failure::Failed => "failed",
            Failure::NoRole => "no-role",
            Failure::Unavailable => "unavailable",
        }
    }
}

fn provider(state: &AppState) -> Option<&Arc<Provider>> {
    state.oidc.as_ref()
}

/// The flow's cookie: the PKCE verifier, for the callback of this browser only.
fn flow_cookie(verifier: &str, secure: bool) -> String {
    format!(
        "{}={verifier}; Path=/auth/oidc; HttpOnly; SameSite=Lax; Max-Age={}{}",
        oidc::FLOW_COOKIE,
        oidc::FLOW_MINUTES * 60,
        if secure { "; Secure" } else { "" }
    )
}

fn cleared_flow_cookie() -> String {
    format!(
        "{}=; Path=/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=0",
        oidc::FLOW_COOKIE
    )
}

fn flow_verifier(headers: &HeaderMap) -> Option<String> {
    auth::cookie_of(headers, oidc::FLOW_COOKIE).filter(|v| v.len() <= 128)
}

fn to_login(failure: Failure) -> Response {
    let mut response = Redirect::to(&format!("/login?sso={}", failure.code())).into_response();
    set_cookie(&mut response, &cleared_flow_cookie());
    response
}

fn set_cookie(response: &mut Response, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// The query's parameters, each once at most; `None`: too long, or a parameter twice.
fn params(query: Option<&str>) -> Option<std::collections::HashMap<String, String>> {
    let query = query.unwrap_or_default();
    if query.len() > MAX_QUERY_BYTES {
        return None;
    }
    let mut found = std::collections::HashMap::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if found.insert(key.into_owned(), value.into_owned()).is_some() {
            return None;
        }
    }
    Some(found)
}

/// `GET /auth/oidc/start?next=/path`: a new flow stored, its verifier in the browser's cookie,
/// the browser sent to the provider. 404 without `[auth.oidc]`; 429 past the bounds of started
/// flows.
pub async fn start(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Response {
    let Some(provider) = provider(&state) else {
        return (StatusCode::NOT_FOUND, "single sign-on is not configured").into_response();
    };
    let address = state.client_of(&request);
    let next = params(query.as_deref())
        .and_then(|mut p| p.remove("next"))
        .unwrap_or_default();
    let next = app::pages::login::safe_next(Some(&next));
    let started = match provider.start().await {
        Ok(started) => started,
        Err(refusal) => {
            tracing::warn!(error = %refusal, "single sign-on could not start");
            return to_login(Failure::Unavailable);
        }
    };
    match oidc::store_flow(
        &state.db,
        &started.state,
        (&started.nonce, &started.challenge),
        &next,
        &address,
    )
    .await
    {
        Ok(()) => {}
        Err(oidc::StoreError::Db(e)) => {
            tracing::error!(error = %e, "single sign-on: the flow could not be stored");
            return unavailable(&RequestId::of(request.headers()));
        }
        Err(full) => {
            tracing::warn!(client = %address, why = %full, "single sign-on: start refused");
            let mut response = (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many sign-ins started and not finished; try again in a few minutes.",
            )
                .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(60));
            return response;
        }
    }
    let mut response = Redirect::to(&started.authorize_url).into_response();
    set_cookie(
        &mut response,
        &flow_cookie(&started.verifier, state.settings.sessions.cookie_secure),
    );
    response
}

/// What refuses a callback of a live flow before the provider is asked: the browser that did not
/// start it, an `iss` (RFC 9207) naming another issuer (a mix-up of providers), the provider's
/// own error, no code. Else the code.
fn checked_code(
    params: &mut std::collections::HashMap<String, String>,
    verifier: Option<&str>,
    flow: &oidc::Flow,
    issuer: &str,
) -> Result<String, String> {
    if verifier.map(oidc::pkce_challenge).as_deref() != Some(flow.challenge.as_str()) {
        return Err(
            "the callback came to another browser than the one that started the sign-in".into(),
        );
    }
    if params.remove("iss").is_some_and(|iss| iss != issuer) {
        return Err("the callback names another issuer than the configured one".into());
    }
    if let Some(error) = params.remove("error") {
        let error: String = error
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        return Err(format!("the provider answered the error {error:?}"));
    }
    params
        .remove("code")
        .filter(|c| !c.is_empty() && c.len() <= 4096)
        .ok_or_else(|| "the callback has no code".to_string())
}

/// `GET /auth/oidc/callback?code=…&state=…` (or `error=…`): the flow taken once, the browser
/// checked to be the one that started it, the code exchanged and the ID token verified, the user
/// signed in with the role of the moment; else `/login?sso=…`, no session, an audit entry.
pub async fn callback(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Response {
    let Some(provider) = provider(&state) else {
        return (StatusCode::NOT_FOUND, "single sign-on is not configured").into_response();
    };
    let address = state.client_of(&request);
    let request_id = RequestId::of(request.headers());
    let mut params = params(query.as_deref()).unwrap_or_default();
    let flow_state = params.remove("state").unwrap_or_default();
    let flow = match oidc::take_flow(&state.db, &flow_state, &address).await {
        Ok(Some(flow)) => flow,
        Ok(None) => return to_login(Failure::Expired),
        Err(e) => {
            tracing::error!(error = %e, "single sign-on: the flow could not be read");
            return unavailable(&request_id);
        }
    };
    let refuse = |reason: String, failure: Failure| {
        let db = state.db.clone();
        let address = address.clone();
        let request_id = request_id.clone();
        async move {
            tracing::warn!(client = %address, reason = %reason, "single sign-on refused");
            match oidc::refuse(&db, None, &reason, &address).await {
                Ok(()) => to_login(failure),
                Err(e) => {
                    tracing::error!(error = %e, "single sign-on: the refusal could not be audited");
                    unavailable(&request_id)
                }
            }
        }
    };
    let verifier = flow_verifier(request.headers());
    let code = match checked_code(
        &mut params,
        verifier.as_deref(),
        &flow,
        &provider.config.issuer,
    ) {
        Ok(code) => code,
        Err(reason) => return refuse(reason, Failure::Failed).await,
    };
    let identity = match provider
        .finish(&code, verifier.as_deref().unwrap_or_default(), &flow.nonce)
        .await
    {
        Ok(identity) => identity,
        Err(refusal) => {
            let failure = if refusal.retry_later() {
                Failure::Unavailable
            } else {
                Failure::Failed
            };
            return refuse(refusal.to_string(), failure).await;
        }
    };
    let sessions = &state.settings.sessions;
    match oidc::sign_in_identity(&state.db, &provider.config, &identity, &address, sessions).await {
        Ok((user, token)) => {
            tracing::info!(user = %user.name, "signed in with single sign-on");
            let mut response = Redirect::to(&flow.next).into_response();
            set_cookie(&mut response, &auth::session_cookie(&token, sessions));
            set_cookie(&mut response, &cleared_flow_cookie());
            response
        }
        Err(oidc::IdentityError::NoRole) => to_login(Failure::NoRole),
        Err(oidc::IdentityError::Db(e)) => {
            tracing::error!(error = %e, "single sign-on: the user could not be signed in");
            unavailable(&request_id)
        }
    }
}
