//! Dashboard users, sessions and the audit log: every page and server function needs a signed-in
//! user, `viewer` or `operator` (`docs/dashboard.md`).
//!
//! Passwords are Argon2id hashes. Sessions live in the database (revocable, expiring) and the
//! browser holds only a random token; the table keeps its SHA-256.
//!
//! What an unauthenticated caller can make hookbox spend on `/api/login` is bounded:
//!
//! - **The throttle** is per client (an IPv4 address, an IPv6 /64) and never per user name alone,
//!   so nobody can lock a user out from another client. After [`MAX_FAILURES_PER_USER`] failures
//!   of one name from one client, or [`MAX_FAILURES_PER_ADDRESS`] from one client across names,
//!   within [`THROTTLE_WINDOW_MINUTES`], each further attempt from that client waits a growing
//!   delay after the previous failure, [`FIRST_DELAY`] doubling up to [`MAX_DELAY`] (429 with
//!   `Retry-After`, the right password included). A successful sign-in clears its name's count
//!   from its client. The counts live in the database (`sign_in_failures`), so every hookbox
//!   process enforces the same limit; each process also remembers the clients it refused until
//!   their delay ends and answers them without a query.
//! - **Password checks** share the cores fairly between clients: at most one check per client at
//!   a time and one per core in all, a client waiting at most [`PASSWORD_CHECK_WAIT`] for its turn
//!   among at most [`WAITING_PER_CORE`] per core (first come, first served). A client already
//!   checking, or arriving when the queue is full, is answered 429 at once: a flooding client
//!   refuses itself, others still get a turn.
//! - **The records** are bounded: a successful sign-in is an audit row; a failure is a count of
//!   its client, name and minute, upserted before its check (so parallel attempts in any process
//!   count each other); attempts refused unchecked (throttled, busy) are counted in memory and
//!   added to those rows once a minute (at most [`MAX_REFUSED_KEYS`] keys per minute and process,
//!   the rest under the name `*`). The rows older than [`FAILURE_RETENTION_DAYS`] are deleted, and
//!   of those older than the throttle window only the newest [`MAX_FAILURE_ROWS`] are kept.
//! - **Every write** runs on [`Db::dashboard_writer`]: on SQLite the single writer connection,
//!   bounded, never a write lock taken from the read pool.
//!
//! Here: users and the state shared by the rest. Password hashing and the password check slots
//! are in `passwords.rs`; the throttle in `throttle.rs`; the records of refused sign-ins in
//! `records.rs`; the sign-in itself in `sign_in.rs`; sessions and their cookie in `sessions.rs`.

pub mod oidc;
mod passwords;
mod records;
mod sessions;
mod sign_in;
mod throttle;
pub mod tokens;

pub use passwords::{MAX_PASSWORD_BYTES, PASSWORD_CHECK_WAIT, WAITING_PER_CORE, hash_password};
pub use records::{
    FAILURE_RETENTION_DAYS, MAX_FAILURE_ROWS, MAX_REFUSED_KEYS, MAX_REFUSED_NAMES_PER_CLIENT,
    write_sign_in_records,
};
pub use sessions::{
    SESSION_COOKIE, cleared_session_cookie, cookie_of, revoke_session, session_cookie,
    session_token, session_token_of, session_user,
};
pub use sign_in::{SignInError, sign_in};
pub use throttle::{
    FIRST_DELAY, MAX_DELAY, MAX_FAILURES_PER_ADDRESS, MAX_FAILURES_PER_USER,
    THROTTLE_WINDOW_MINUTES, client_key, retry_after_secs, throttle_delay, wait_text,
};

pub use crate::db::audit::{AuditEntry, audit_on};
pub use crate::model::Role;
pub use users::{list_users, remove_user, revoke_user_sessions};

use crate::db::Db;
use crate::db::users;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: i64,
    pub name: String,
    pub role: Role,
}

impl User {
    /// A stored user (a role hookbox does not know is a decoding error, never a default).
    fn from_record(record: users::UserRecord) -> User {
        User {
            id: record.id,
            name: record.name,
            role: record.role,
        }
    }
}

pub use crate::model::valid_user_name;

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

/// One database's sign-in state in this process, by [`store_key`].
fn store_key(db: &Db) -> String {
    // Not a spelling (`db::dialect`): each backend's pool names its database its own way.
    match db.backend() {
        sea_orm::DatabaseBackend::Postgres => {
            let options = db
                .dashboard
                .get_postgres_connection_pool()
                .connect_options();
            format!(
                "postgres://{}:{}/{}",
                options.get_host(),
                options.get_port(),
                options.get_database().unwrap_or_default()
            )
        }
        _ => {
            let options = db.writer.get_sqlite_connection_pool().connect_options();
            format!("sqlite:{}", options.get_filename().display())
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
