//! What every server function does first: find the database and the signed-in user, and refuse
//! with the right status: anonymous → 401, a viewer calling an operator function → 403.

use crate::auth::{self, User};
use crate::config::Config;
use crate::db::Db;
use crate::model::Role;
use http::{HeaderValue, StatusCode, header};
use leptos::prelude::*;
use leptos_axum::ResponseOptions;
use std::sync::Arc;

/// The peer address of the request, put in the request's extensions by the server.
#[derive(Clone, Debug)]
pub struct ClientAddress(pub String);

pub use crate::pages::SIGN_IN_REQUIRED;
pub const OPERATORS_ONLY: &str = "this needs the operator role";

pub fn db() -> Result<Db, ServerFnError> {
    use_context::<Db>().ok_or_else(|| ServerFnError::new("no database in context"))
}

pub fn config() -> Result<Arc<Config>, ServerFnError> {
    use_context::<Arc<Config>>().ok_or_else(|| ServerFnError::new("no configuration in context"))
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
    let parts = request_parts()?;
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|cookies| auth::session_token(cookies).map(str::to_string))
}

pub async fn current_user() -> Result<Option<User>, ServerFnError> {
    let Some(token) = session_token() else {
        return Ok(None);
    };
    let db = db()?;
    auth::session_user(&db, &token)
        .await
        .map_err(|e| unavailable(&e))
}

/// The signed-in user, if their role is at least `role`.
pub async fn require(role: Role) -> Result<User, ServerFnError> {
    match current_user().await? {
        None => {
            set_status(StatusCode::UNAUTHORIZED);
            Err(ServerFnError::new(SIGN_IN_REQUIRED))
        }
        Some(user) if user.role < role => {
            set_status(StatusCode::FORBIDDEN);
            Err(ServerFnError::new(OPERATORS_ONLY))
        }
        Some(user) => Ok(user),
    }
}

/// A database failure as the browser sees it: 503, no internals, the request id of the logs.
pub fn unavailable(error: &dyn std::fmt::Display) -> ServerFnError {
    tracing::error!(%error, "dashboard query failed");
    set_status(StatusCode::SERVICE_UNAVAILABLE);
    let id = request_parts()
        .and_then(|p| {
            p.headers
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "-".into());
    ServerFnError::new(format!(
        "the database is unavailable; try again shortly (request id {id})"
    ))
}

/// A request the user can correct: 400 with the reason.
pub fn bad_request(reason: impl Into<String>) -> ServerFnError {
    set_status(StatusCode::BAD_REQUEST);
    ServerFnError::new(reason.into())
}

/// A stored delivery, or 404 naming the id.
pub async fn stored_delivery(
    db: &Db,
    id: i64,
) -> Result<crate::archive::StoredDelivery, ServerFnError> {
    match crate::archive::stored_delivery(db, id).await {
        Ok(Some(stored)) => Ok(stored),
        Ok(None) => {
            set_status(StatusCode::NOT_FOUND);
            Err(ServerFnError::new(format!("there is no delivery {id}")))
        }
        Err(e) => Err(unavailable(&e)),
    }
}

/// A filter the user can correct is a 400; a database failure a 503.
pub fn query_failed(error: crate::archive::QueryError) -> ServerFnError {
    match error {
        crate::archive::QueryError::BadFilter(reason) => bad_request(reason),
        crate::archive::QueryError::Db(e) => unavailable(&e),
    }
}
