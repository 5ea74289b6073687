//! Signing in: the order of checks that bounds what an unauthenticated caller can make hookbox
//! spend, and the transaction that opens a session.

use super::passwords::{DUMMY_HASH, MAX_PASSWORD_BYTES, password_check_slot, verify_password};
use super::records::{Refusal, count_refusal, pending, schedule_write};
use super::sessions::open_session_on;
use super::throttle::{
    THROTTLE_WINDOW_MINUTES, client_key, remember_block, remembered_block, throttled_until,
    wait_text,
};
use super::{User, lock, store_key, valid_user_name};
use crate::config::Sessions;
use crate::config::oidc::{Oidc, password_allowed};
use crate::db::Db;
use crate::db::audit::{self, AuditEntry, CountedFailures, audit_on};
use crate::db::users;
use chrono::{Duration, Utc};
use sea_orm::{DbErr, TransactionTrait};

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("wrong user name or password")]
    Invalid,
    #[error("too many failed sign-ins; try again in {}", wait_text(*retry_after))]
    Throttled { retry_after: std::time::Duration },
    /// This client is already checking a password, or every password check slot of this process
    /// is taken and the queue is full or too slow (a burst of sign-ins).
    #[error("too many sign-ins at once; try again in a moment")]
    Busy,
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

impl SignInError {
    /// What `Retry-After` says, for the refusals that are a 429.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            SignInError::Throttled { retry_after } => Some(*retry_after),
            SignInError::Busy => Some(std::time::Duration::from_secs(1)),
            _ => None,
        }
    }
}

/// Checks a password (throttled) and opens a session; with single sign-on and `password_login`
/// off, only for the break-glass accounts. Returns the user and the session token.
///
/// In this order, so that what an unauthenticated caller can make hookbox spend is bounded:
/// a name that cannot exist is refused without touching the database or any record; a client
/// this process remembers as throttled is refused (counted in memory); so is one that gets no
/// password check slot; then the throttle is read from the database (a refusal is remembered
/// until its delay ends); the attempt is counted as a failure *before* the hash is checked, so
/// parallel attempts in several processes count each other; only then Argon2 (a failure that
/// reaches a limit is remembered as a block from the end of its check). A success is one
/// transaction: the session, its audit row, the throttle's count of the name cleared.
pub async fn sign_in(
    db: &Db,
    name: &str,
    password: &str,
    address: &str,
    sessions: &Sessions,
    oidc: Option<&Oidc>,
) -> Result<(User, String), SignInError> {
    if !valid_user_name(name) || password.is_empty() || password.len() > MAX_PASSWORD_BYTES {
        return Err(SignInError::Invalid);
    }
    let client = client_key(address);
    let store = store_key(db);
    if let Some((retry_after, every_name)) = remembered_block(&store, &client, name) {
        let counted_as = if every_name { "*" } else { name };
        count_refusal(db, &store, &client, counted_as, Refusal::Throttled);
        return Err(SignInError::Throttled { retry_after });
    }
    let Some(_slot) = password_check_slot(&client).await else {
        count_refusal(db, &store, &client, name, Refusal::Busy);
        return Err(SignInError::Busy);
    };

    let now = crate::clock::now();
    let counted = audit::counted_failures(
        db,
        &client,
        name,
        now - Duration::minutes(THROTTLE_WINDOW_MINUTES),
    )
    .await?;
    if let Some((until, every_name)) = throttled_until(&counted).filter(|(until, _)| *until > now) {
        remember_block(&store, &client, (!every_name).then_some(name), until);
        count_refusal(
            db,
            &store,
            &client,
            if every_name { "*" } else { name },
            Refusal::Throttled,
        );
        return Err(SignInError::Throttled {
            retry_after: (until - now).to_std().unwrap_or_default(),
        });
    }

    // Counted first, as a failure until the password proves right.
    audit::record_sign_in_failure(db, &client, name, now).await?;
    schedule_write(&mut lock(pending()), db, &store);

    // With password sign-in off, a name that is not a break-glass account is checked as if it
    // did not exist: the same answer and the same time, so the accounts cannot be told apart.
    let found = users::find_user(db, name)
        .await?
        .filter(|_| password_allowed(oidc, name));
    // An unknown name costs the same hashing as a wrong password: no user enumeration by timing.
    let hash = found
        .as_ref()
        .map(|user| user.password_hash.clone())
        .unwrap_or_else(|| DUMMY_HASH.to_string());
    let password = password.to_string();
    let matches = tokio::task::spawn_blocking(move || verify_password(&password, &hash))
        .await
        .unwrap_or(false);
    let Some(user) = found.map(User::from_record).filter(|_| matches) else {
        // The delay this failure starts runs from the end of its check (in the database, from
        // its count, a check's time earlier).
        let failed = CountedFailures {
            of_name: counted.of_name + 1,
            name_last: Some(crate::clock::now()),
            of_client: counted.of_client + 1,
            client_last: Some(crate::clock::now()),
        };
        if let Some((until, every_name)) = throttled_until(&failed) {
            remember_block(&store, &client, (!every_name).then_some(name), until);
        }
        return Err(SignInError::Invalid);
    };
    let token = open_session(db, (&user, name), address, sessions, (&client, now)).await?;
    Ok((user, token))
}

/// A new session for `user`, who proved their password under `name`: the session row, the
/// audit entry and the counted failures of (`client`, `name`) since `counted_at` cleared, in one
/// transaction.
async fn open_session(
    db: &Db,
    (user, name): (&User, &str),
    address: &str,
    sessions: &Sessions,
    (client, counted_at): (&String, chrono::DateTime<Utc>),
) -> Result<String, SignInError> {
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    let token = open_session_on(&txn, user.id, sessions, crate::clock::now()).await?;
    audit_on(
        &txn,
        AuditEntry {
            actor: name,
            action: crate::model::AuditAction::SignIn,
            target: None,
            outcome: "succeeded",
            detail: None,
            address: Some(address),
        },
    )
    .await?;
    audit::clear_sign_in_failures_on(&txn, client, name, counted_at).await?;
    txn.commit().await?;
    Ok(token)
}
