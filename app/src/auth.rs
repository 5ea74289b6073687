//! Dashboard users, sessions and the audit log: every page and server function needs a signed-in
//! user, `viewer` or `operator` (`docs/dashboard.md`).
//!
//! Passwords are Argon2id hashes. Sessions live in the database (revocable, expiring) and the
//! browser holds only a random token; the table keeps its SHA-256. Failed sign-ins are audit rows,
//! and throttling counts them, so every hookbox process enforces the same limit.

use crate::config::Sessions;
use crate::db::Db;
use crate::db::audit::{self, Attempted};
use crate::db::users;

pub use crate::db::audit::{AuditEntry, audit_on};
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use chrono::{Duration, Utc};
use sea_orm::DbErr;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::model::Role;

pub const SESSION_COOKIE: &str = "hookbox_session";
/// Failed sign-ins allowed per user name, and per address, within [`THROTTLE_WINDOW_MINUTES`].
pub const MAX_FAILURES_PER_USER: i64 = 5;
pub const MAX_FAILURES_PER_ADDRESS: i64 = 20;
pub const THROTTLE_WINDOW_MINUTES: i64 = 15;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: i64,
    pub name: String,
    pub role: Role,
}

impl User {
    /// A stored user; none when its role is not one hookbox knows.
    fn from_record(record: users::UserRecord) -> Option<User> {
        Role::parse(&record.role).map(|role| User {
            id: record.id,
            name: record.name,
            role,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("wrong user name or password")]
    Invalid,
    #[error("too many failed sign-ins; try again in {minutes} minutes")]
    Throttled { minutes: i64 },
    /// Every password check slot of this process is taken (a burst of sign-ins).
    #[error("too many sign-ins at once; try again in a moment")]
    Busy,
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>()).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

pub fn valid_user_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b))
}

/// Adds a user, or sets the password and role of an existing one.
pub async fn add_user(db: &Db, name: &str, password: &str, role: Role) -> Result<(), String> {
    if !valid_user_name(name) {
        return Err("user names are 1 to 64 letters, digits, '.', '_', '-' or '@'".into());
    }
    if password.chars().count() < 8 {
        return Err("passwords need at least 8 characters".into());
    }
    let password = password.to_string();
    let hash = tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| e.to_string())??;
    users::upsert_user(db, name, &hash, role)
        .await
        .map_err(|e| e.to_string())
}

/// With no user at all, creates the operator `admin`. Returns the password when it was generated.
pub async fn ensure_admin(db: &Db, password: Option<String>) -> Result<Option<String>, String> {
    if users::count_users(db).await.map_err(|e| e.to_string())? > 0 {
        return Ok(None);
    }
    let (password, generated) = match password.filter(|p| !p.is_empty()) {
        Some(p) => (p, false),
        None => (format!("{:032x}", rand::random::<u128>()), true),
    };
    add_user(db, "admin", &password, Role::Operator).await?;
    Ok(generated.then_some(password))
}

/// The longest password checked; Argon2 takes any length, but there is no reason to hash
/// megabytes an unauthenticated caller sent.
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// Password checks running at once in this process: each Argon2 check holds about 19 MiB and a
/// core for its duration, so more than the cores only queue and cost memory.
fn password_checks() -> &'static tokio::sync::Semaphore {
    static CHECKS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    CHECKS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        tokio::sync::Semaphore::new(cores)
    })
}

/// Checks a password (throttled) and opens a session. Returns the user and the session token.
///
/// In this order, so that what an unauthenticated caller can make hookbox spend is bounded:
/// a name that cannot exist is refused without touching the database or the audit log; when
/// every password check slot of the process is busy the attempt is refused at once (429);
/// the attempt is recorded as a failure *before* the hash is checked, so parallel attempts
/// count each other, and then the throttle is read (this attempt included); only then Argon2.
pub async fn sign_in(
    db: &Db,
    name: &str,
    password: &str,
    address: &str,
    sessions: &Sessions,
) -> Result<(User, String), SignInError> {
    if !valid_user_name(name) || password.is_empty() || password.len() > MAX_PASSWORD_BYTES {
        return Err(SignInError::Invalid);
    }
    let Ok(_slot) = password_checks().try_acquire() else {
        return Err(SignInError::Busy);
    };

    // Counted first, as a failure until the password proves right.
    let attempt = audit::record_sign_in_attempt(db, name, address).await?;
    let since = Utc::now() - Duration::minutes(THROTTLE_WINDOW_MINUTES);
    // This attempt is one of the failures counted: the limit is on the ones before it.
    if audit::failed_sign_ins_since(db, Attempted::Name(name), since).await? > MAX_FAILURES_PER_USER
        || audit::failed_sign_ins_since(db, Attempted::Address(address), since).await?
            > MAX_FAILURES_PER_ADDRESS
    {
        audit::set_attempt_outcome(db, attempt, "throttled").await?;
        return Err(SignInError::Throttled {
            minutes: THROTTLE_WINDOW_MINUTES,
        });
    }

    let found = users::find_user(db, name).await?;
    // An unknown name costs the same hashing as a wrong password: no user enumeration by timing.
    let hash = found
        .as_ref()
        .map(|user| user.password_hash.clone())
        .unwrap_or_else(|| DUMMY_HASH.to_string());
    let password = password.to_string();
    let matches = tokio::task::spawn_blocking(move || verify_password(&password, &hash))
        .await
        .unwrap_or(false);
    let Some(user) = found.and_then(User::from_record).filter(|_| matches) else {
        return Err(SignInError::Invalid);
    };

    let token = format!(
        "{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    );
    let now = Utc::now();
    users::insert_session(
        db,
        &token_hash(&token),
        user.id,
        now,
        now + sessions.lifetime,
    )
    .await?;
    audit::set_attempt_outcome(db, attempt, "succeeded").await?;
    Ok((user, token))
}

/// A hash of a random password, verified against when the user name is unknown.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0LzP1yq3w7nH2uQkT6pWnB8mCk3cQm0q4S0oS7x2s5M";

/// The user of a live (unexpired, unrevoked) session.
pub async fn session_user(db: &Db, token: &str) -> Result<Option<User>, DbErr> {
    Ok(users::session_user(db, &token_hash(token))
        .await?
        .and_then(User::from_record))
}

pub async fn revoke_session(db: &Db, token: &str) -> Result<(), DbErr> {
    users::revoke_session(db, &token_hash(token)).await
}

pub use users::{list_users, remove_user, revoke_user_sessions};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_hash_with_argon2id_and_verify() {
        let hash = hash_password("correct horse").expect("hash");
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &hash));
        assert!(!verify_password("wrong horse", &hash));
        assert!(!verify_password("anything", DUMMY_HASH));
    }

    #[test]
    fn the_session_token_is_read_from_the_cookie_header() {
        assert_eq!(session_token("a=1; hookbox_session=abc; b=2"), Some("abc"));
        assert_eq!(session_token("hookbox_session="), None);
        assert_eq!(session_token("other=1"), None);
    }
}
