//! What every server function does first: find the database and the signed-in user, and refuse
//! with the right status: anonymous → 401, a viewer calling an operator function → 403. Every
//! refusal is a [`DashboardError`] raised through [`fail`], which sets its status.

use crate::auth::{self, User};
use crate::config::Config;
use crate::db::Db;
use crate::db::events::StoredDelivery;
use crate::db::filter::QueryError;
use crate::error::DashboardError;
use crate::model::Role;
use http::{HeaderValue, StatusCode, header};
use leptos::prelude::*;
use leptos_axum::ResponseOptions;
use std::sync::Arc;

/// The session the server looked up for this request (`None`: none, or it ended), put in the
/// request's extensions so a page render and its server functions look it up once.
#[derive(Clone, Debug)]
pub struct SignedIn(pub Option<User>);

/// The client address of the request (see `HOOKBOX_TRUSTED_PROXIES`), put in the request's
/// extensions by the server.
#[derive(Clone, Debug)]
pub struct ClientAddress(pub String);

/// `error`, as the answer ([`DashboardError::answered`]).
pub fn fail(error: DashboardError) -> DashboardError {
    error.answered()
}

pub fn db() -> Result<Db, DashboardError> {
    use_context::<Db>().ok_or_else(|| unavailable(&"no database in context"))
}

pub fn config() -> Result<Arc<Config>, DashboardError> {
    use_context::<Arc<Config>>().ok_or_else(|| unavailable(&"no configuration in context"))
}

/// Wakes this process's forwarder (a confirmed replay or retry), if the server put its wake-up
/// in the context.
pub fn wake_forwarder() {
    if let Some(wake) = use_context::<crate::forward::Wake>() {
        wake.notify();
    }
}

pub fn set_status(status: StatusCode) {
    if let Some(response) = use_context::<ResponseOptions>() {
        response.set_status(status);
    }
}

pub fn set_cookie(value: &str) {
    if let (Some(response), Ok(value)) = (
        use_context::<ResponseOptions>(),
        HeaderValue::from_str(value),
    ) {
        response.append_header(header::SET_COOKIE, value);
    }
}

fn request_parts() -> Option<http::request::Parts> {
    use_context::<http::request::Parts>()
}

pub fn client_address() -> String {
    request_parts()
        .and_then(|p| p.extensions.get::<ClientAddress>().map(|a| a.0.clone()))
        .unwrap_or_else(|| "unknown".into())
}

/// The session token of this request, if it carries one.
pub fn session_token() -> Option<String> {
    auth::session_token_of(&request_parts()?.headers)
}

pub async fn signed_in_user() -> Result<Option<User>, DashboardError> {
    if let Some(SignedIn(user)) =
        request_parts().and_then(|p| p.extensions.get::<SignedIn>().cloned())
    {
        return Ok(user);
    }
    let Some(token) = session_token() else {
        return Ok(None);
    };
    let db = db()?;
    auth::session_user(&db, &token)
        .await
        .map_err(|e| unavailable(&e))
}

/// The signed-in user, if their role is at least `role`.
pub async fn require(role: Role) -> Result<User, DashboardError> {
    match signed_in_user().await? {
        None => Err(fail(DashboardError::SignInRequired)),
        Some(user) if user.role < role => Err(fail(DashboardError::OperatorsOnly)),
        Some(user) => Ok(user),
    }
}

/// A database failure as the browser sees it: 503, no internals, the request id of the logs.
pub fn unavailable(error: &dyn std::fmt::Display) -> DashboardError {
    tracing::error!(%error, "dashboard query failed");
    let request_id = request_parts()
        .map(|p| crate::request_id::of(&p.headers))
        .unwrap_or_else(|| "-".into());
    fail(DashboardError::Unavailable { request_id })
}

/// A request the user can correct: 400 with the reason, which names the field.
pub fn bad_request(reason: impl Into<String>) -> DashboardError {
    fail(DashboardError::BadRequest(reason.into()))
}

/// A failed replay as the dashboard answers it: 503 only when retrying can help.
pub fn replay_failed(error: crate::ingest::replay::ReplayError) -> DashboardError {
    use crate::ingest::replay::ReplayError;
    match error {
        ReplayError::Db(e) => unavailable(&e),
        ReplayError::Refused(reason) => fail(DashboardError::Unprocessable(format!(
            "nothing was replayed: {reason}"
        ))),
        expired @ ReplayError::BodyExpired(_) => fail(DashboardError::Conflict(format!(
            "nothing was replayed: {expired}"
        ))),
        other => bad_request(other.to_string()),
    }
}

/// Each domain error the dashboard's server functions meet, as the browser sees it: converted
/// here once, so a call site writes `?`.
impl From<sea_orm::DbErr> for DashboardError {
    fn from(error: sea_orm::DbErr) -> Self {
        unavailable(&error)
    }
}

impl From<QueryError> for DashboardError {
    fn from(error: QueryError) -> Self {
        query_failed(error)
    }
}

impl From<crate::ingest::replay::ReplayError> for DashboardError {
    fn from(error: crate::ingest::replay::ReplayError) -> Self {
        replay_failed(error)
    }
}

impl From<crate::db::destinations::RetryError> for DashboardError {
    fn from(error: crate::db::destinations::RetryError) -> Self {
        use crate::db::destinations::RetryError;
        match error {
            RetryError::Refused(reason) => bad_request(reason),
            RetryError::Query(e) => query_failed(e),
        }
    }
}

/// A stored delivery, or 404 naming the id.
pub async fn stored_delivery(db: &Db, id: i64) -> Result<StoredDelivery, DashboardError> {
    match crate::db::events::stored_delivery(db, id).await {
        Ok(Some(stored)) => Ok(stored),
        Ok(None) => Err(fail(DashboardError::NotFound(format!(
            "there is no delivery {id}"
        )))),
        Err(e) => Err(unavailable(&e)),
    }
}

/// A filter the user got wrong is a 400 naming it; a database failure a 503.
pub fn query_failed(error: QueryError) -> DashboardError {
    match error {
        QueryError::BadFilter(reason) => bad_request(reason),
        QueryError::Db(e) => unavailable(&e),
    }
}

/// The configured destinations as the pages show them: `(name, url)`, the URL as
/// `redact_url` shows it (no user name or password, password-like query values replaced).
pub fn configured_destinations() -> Result<Vec<(String, String)>, DashboardError> {
    Ok(config()?
        .destinations
        .iter()
        .map(|d| (d.name.clone(), crate::config::settings::redact_url(&d.url)))
        .collect())
}

/// The time zone this viewer reads times in: the one the zone cookie
/// ([`crate::model::ZONE_COOKIE`]) names, when it is a known IANA zone; UTC otherwise.
pub fn viewer_zone() -> chrono_tz::Tz {
    request_parts()
        .map(|p| zone_of(&p.headers))
        .unwrap_or(chrono_tz::UTC)
}

/// The zone a request's `Cookie` headers choose (see [`viewer_zone`]).
pub fn zone_of(headers: &http::HeaderMap) -> chrono_tz::Tz {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == crate::model::ZONE_COOKIE)
        .map(|(_, value)| value.replace("%2F", "/").replace("%2f", "/"))
        .filter(|value| value.len() <= 64)
        .and_then(|value| value.parse::<chrono_tz::Tz>().ok())
        .unwrap_or(chrono_tz::UTC)
}
