//! Sessions: the random token the browser holds (the table keeps its SHA-256), the user of a
//! live session, and the session cookie.

use super::User;
use crate::config::Sessions;
use crate::db::{Db, users};
use sea_orm::DbErr;
use sha2::{Digest, Sha256};

pub const SESSION_COOKIE: &str = "hookbox_session";

/// A new session token: 256 random bits, in hex.
fn new_token() -> String {
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
    cookie_of(headers, SESSION_COOKIE)
}

/// The non-empty value of the cookie `name` a request's `Cookie` headers carry, if any.
pub fn cookie_of(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|cookies| cookie(cookies, name).map(str::to_string))
}

/// The session token in a `Cookie` header, if any.
pub fn session_token(cookie_header: &str) -> Option<&str> {
    cookie(cookie_header, SESSION_COOKIE)
}

fn cookie<'a>(cookie_header: &'a str, wanted: &str) -> Option<&'a str> {
    cookie_header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == wanted)
        .map(|(_, value)| value)
        .filter(|v| !v.is_empty())
}

/// A new session of `user_id` on `conn` (the sign-in's transaction): its token, whose hash is
/// stored, and the time as the user's last sign-in.
pub(super) async fn open_session_on<C: sea_orm::ConnectionTrait>(
    conn: &C,
    user_id: i64,
    sessions: &Sessions,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<String, DbErr> {
    let token = new_token();
    users::insert_session_on(
        conn,
        &token_hash(&token),
        user_id,
        at,
        at + sessions.lifetime,
    )
    .await?;
    Ok(token)
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
