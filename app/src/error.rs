//! The dashboard's one error type: every server function fails with a [`DashboardError`], which
//! travels to the browser as JSON and knows its HTTP status. The pages match on it (a lost
//! session links to the sign-in page) instead of reading message text.

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DashboardError {
    /// 401: no session, or it ended.
    SignInRequired,
    /// 403: a viewer called an operator's function.
    OperatorsOnly,
    /// 404: what was asked for does not exist (the message names it).
    NotFound(String),
    /// 400: a request the user can correct; the message names the field.
    BadRequest(String),
    /// 401: the sign-in's name or password is wrong.
    WrongCredentials,
    /// 422: well-formed, but refused for what it holds (the database refused a replay's data).
    Unprocessable(String),
    /// 409: refused as things stand (a replay that would fail as its original did); the message
    /// says what to change or how to insist.
    Conflict(String),
    /// 429: too many sign-ins (the message says how long to wait), or too many searches.
    Throttled(String),
    /// 408: the request ran past its deadline and was stopped (the message says what to narrow).
    TimedOut(String),
    /// 503: the database is unavailable; the request id finds the logged cause.
    Unavailable { request_id: String },
    /// The browser could not reach hookbox (no network, or hookbox is down): never sent by the
    /// server, made in the browser.
    Unreachable,
    /// The framework could not call the function (an argument it could not read, an answer the
    /// browser could not read); the message says it plainly.
    Call(String),
}

impl DashboardError {
    /// The one place an error becomes an HTTP status (a number: the browser half has no
    /// `http` crate).
    pub fn status(&self) -> u16 {
        match self {
            DashboardError::SignInRequired | DashboardError::WrongCredentials => 401,
            DashboardError::OperatorsOnly => 403,
            DashboardError::NotFound(_) => 404,
            DashboardError::BadRequest(_) | DashboardError::Call(_) => 400,
            DashboardError::Unprocessable(_) => 422,
            DashboardError::Conflict(_) => 409,
            DashboardError::Throttled(_) => 429,
            DashboardError::TimedOut(_) => 408,
            DashboardError::Unavailable { .. } | DashboardError::Unreachable => 503,
        }
    }

    /// On the server, makes this error's status the answer's (a server function's error is a
    /// 500 otherwise): the one place a dashboard error sets it.
    #[cfg(feature = "ssr")]
    pub fn answered(self) -> Self {
        if let Some(response) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(
                http::StatusCode::from_u16(self.status()).unwrap_or(http::StatusCode::BAD_REQUEST),
            );
        }
        self
    }

    /// Whether the page should offer to sign in again.
    pub fn needs_sign_in(&self) -> bool {
        matches!(self, DashboardError::SignInRequired)
    }
}

impl fmt::Display for DashboardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DashboardError::SignInRequired => f.write_str("Your session has ended. Sign in again."),
            DashboardError::OperatorsOnly => f.write_str("this needs the operator role"),
            DashboardError::NotFound(what)
            | DashboardError::BadRequest(what)
            | DashboardError::Throttled(what)
            | DashboardError::TimedOut(what)
            | DashboardError::Unprocessable(what)
            | DashboardError::Conflict(what)
            | DashboardError::Call(what) => f.write_str(what),
            DashboardError::WrongCredentials => f.write_str("Wrong user name or password."),
            DashboardError::Unavailable { request_id } => write!(
                f,
                "the database is unavailable; try again shortly (request id {request_id})"
            ),
            DashboardError::Unreachable => f.write_str(UNREACHABLE),
        }
    }
}

impl std::error::Error for DashboardError {}

impl FromServerFnError for DashboardError {
    type Encoder = JsonEncoding;

    /// The framework's errors in words a user can act on: a failed fetch is [`Unreachable`]
    /// (not "error reaching server to call server function: TypeError: Failed to fetch").
    ///
    /// [`Unreachable`]: DashboardError::Unreachable
    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            ServerFnErrorErr::Request(_) => DashboardError::Unreachable,
            ServerFnErrorErr::Deserialization(_) | ServerFnErrorErr::Response(_) => {
                DashboardError::Call(UNREADABLE.to_string())
            }
            ServerFnErrorErr::Args(detail) | ServerFnErrorErr::MissingArg(detail) => {
                let error =
                    DashboardError::Call(format!("hookbox could not read this request: {detail}"));
                // On the server, the request's arguments did not decode: its fault, a 400 (a
                // server function's error is a 500 unless its status is set).
                #[cfg(feature = "ssr")]
                let error = error.answered();
                error
            }
            ServerFnErrorErr::Serialization(detail) => {
                DashboardError::Call(format!("this page could not send the request: {detail}"))
            }
            other => DashboardError::Call(other.to_string()),
        }
    }
}

/// What [`DashboardError::Unreachable`] says.
pub const UNREACHABLE: &str =
    "hookbox could not be reached. Check your connection, then try again.";
/// What an answer the browser could not read says (a proxy's error page, a restart).
pub const UNREADABLE: &str = "hookbox's answer could not be read: it may be restarting, or \
     a proxy answered in its place. Reload the page in a moment.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_fetch_and_an_unreadable_answer_are_said_plainly() {
        let lost = DashboardError::from_server_fn_error(ServerFnErrorErr::Request(
            "TypeError: Failed to fetch".into(),
        ));
        assert_eq!(lost, DashboardError::Unreachable);
        assert_eq!(lost.to_string(), UNREACHABLE);
        assert!(!lost.needs_sign_in());
        // A proxy's HTML error page, an empty 408: the browser cannot read the error.
        let garbled = DashboardError::from_server_fn_error(ServerFnErrorErr::Deserialization(
            "expected value at line 1 column 1".into(),
        ));
        assert_eq!(garbled.to_string(), UNREADABLE);
        let missing =
            DashboardError::from_server_fn_error(ServerFnErrorErr::MissingArg("id".into()));
        assert_eq!(
            missing.to_string(),
            "hookbox could not read this request: id"
        );
        assert_eq!(missing.status(), 400);
        for error in [lost, garbled, missing] {
            assert!(!error.to_string().contains("server function"), "{error}");
        }
    }

    #[test]
    fn an_ended_session_offers_to_sign_in_again_through_the_wire() {
        let ended = DashboardError::SignInRequired;
        assert!(ended.needs_sign_in());
        assert_eq!(ended.status(), 401);
        assert_eq!(ended.to_string(), "Your session has ended. Sign in again.");
        // As the server sends it and the browser reads it back.
        let wire = ended.ser();
        assert_eq!(DashboardError::de(wire), DashboardError::SignInRequired);
    }
}
