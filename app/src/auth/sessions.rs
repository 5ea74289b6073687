//! Sessions: the random token the browser holds (the table keeps its SHA-256), the user of a
//! live session, and the session cookie.

use super::User;
use crate::config::Sessions;
use crate::db::{Db, users};
use sea_orm::DbErr;
use sha2::{Digest, Sha256};

pub const SESSION_COOKIE: &str = "hookbox_session";

/// A new session token: 256 random bits, in hex.
pub(super) fn new_token() -> String {
    format!(
        "{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    )
}

pub(super) fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The user of a live (unexpired, unrevoked) session.
pub async fn session_user(db: &Db, token: &str) -> Result<Option<User>, DbErr> {
    Ok(users::session_user(db, &token_hash(token))
        .await?
        .map(User::from_record))
}

pub async fn revoke_session(db: &Db, token: &str) -> Result<(), DbErr> {
    users::revoke_session(db, &token_hash(token)).await
}

/// The session token a request's `Cookie` headers carry, if any: the one reader of it.
pub fn session_token_of(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|cookies| session_token(cookies).map(str::to_string))
}

/// The session token in a `Cookie` header, if any.
pub fn session_token(cookie_header: &str) -> Option<&str> {
    cookie_header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
        .filter(|v| !v.is_empty())
}

/// The `Set-Cookie` value for a new session (Secure when `HOOKBOX_COOKIE_SECURE=1`).
pub fn session_cookie(token: &str, sessions: &Sessions) -> String {
    let secure = if sessions.cookie_secure {
        "; Secure"
    } else {
        ""
    };
    format!(
        "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        sessions.lifetime.num_seconds()
    )
}

pub fn cleared_session_cookie() -> String {
    format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0")
}
