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
    /// 429: too many sign-ins (the message says how long to wait), or too many searches.
    Throttled(String),
    /// 408: the request ran past its deadline and was stopped (the message says what to narrow).
    TimedOut(String),
    /// 503: the database is unavailable; the request id finds the logged cause.
    Unavailable { request_id: String },
    /// The framework could not call the function (a bad argument encoding, a lost connection).
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
            DashboardError::Throttled(_) => 429,
            DashboardError::TimedOut(_) => 408,
            DashboardError::Unavailable { .. } => 503,
        }
    }

    /// Whether the page should offer to sign in again.
    pub fn needs_sign_in(&self) -> bool {
        matches!(self, DashboardError::SignInRequired)
    }
}

impl fmt::Display for DashboardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DashboardError::SignInRequired => f.write_str("sign in required"),
            DashboardError::OperatorsOnly => f.write_str("this needs the operator role"),
            DashboardError::NotFound(what)
            | DashboardError::BadRequest(what)
            | DashboardError::Throttled(what)
            | DashboardError::TimedOut(what)
            | DashboardError::Unprocessable(what)
            | DashboardError::Call(what) => f.write_str(what),
            DashboardError::WrongCredentials => f.write_str("Wrong user name or password."),
            DashboardError::Unavailable { request_id } => write!(
                f,
                "the database is unavailable; try again shortly (request id {request_id})"
            ),
        }
    }
}

impl std::error::Error for DashboardError {}

impl FromServerFnError for DashboardError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        DashboardError::Call(value.to_string())
    }
}
