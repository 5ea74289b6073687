//! Single sign-on's side of sign-in (contract section 17): the started flows, kept in the
//! database so a sign-in may start on one hookbox process and end on another; the user of an
//! identity the provider proved, found by (issuer, `sub`) and given the role its claim maps to
//! at every sign-in; and the record of every refusal. The protocol (discovery, the code, the ID
//! token's signature) is the server's `oidc`.
//!
//! Bounds, since anyone may start a sign-in: a client has at most [`MAX_FLOWS_PER_CLIENT`]
//! unfinished flows and all clients [`MAX_FLOWS`]; a flow lives [`FLOW_MINUTES`] and is taken
//! once. A refusal that took a flow is an audit row (each flow at most one); a callback that
//! names no live flow is counted in `sign_in_failures` as [`UNKNOWN_FLOW`] (a row per client and
//! minute), like a wrong password.

use super::sessions::open_session_on;
use super::throttle::client_key;
use super::{User, valid_user_name};
use crate::config::Sessions;
use crate::config::oidc::Oidc;
use crate::db::Db;
use crate::db::audit::{self, AuditEntry, audit_on};
use crate::db::sign_in_flows::{self, FlowBounds};
use crate::db::users;
use crate::model::{AuditAction, Role};
use chrono::Duration;
use sea_orm::{DbErr, TransactionTrait};
use sha2::{Digest, Sha256};

pub use crate::db::sign_in_flows::{Flow, StoreError};

/// How long a started sign-in may take.
pub const FLOW_MINUTES: i64 = 10;
/// Unfinished sign-ins of one client (an IPv4 address, an IPv6 /64).
pub const MAX_FLOWS_PER_CLIENT: i64 = 20;
/// Unfinished sign-ins of all clients.
pub const MAX_FLOWS: i64 = 10_000;
/// The cookie that holds a started sign-in's PKCE verifier: the flow is finished only in the
/// browser that started it.
pub const FLOW_COOKIE: &str = "hookbox_sign_in";
/// The name a callback that names no live flow is counted under among failed sign-ins (no user
/// name has a space or parentheses).
pub const UNKNOWN_FLOW: &str = "(single sign-on: unknown or used state)";

/// What the provider proved of the person signing in.
#[derive(Debug, Clone)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    /// `preferred_username`, else `email`: the name a new user is given.
    pub name_hint: Option<String>,
    /// The values of the role claim.
    pub values: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// No value of the role claim maps to a role (audited; the user's sessions end).
    #[error("no value of the role claim maps to a role")]
    NoRole,
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

/// The S256 PKCE challenge of `verifier`, as the provider computes it.
pub fn pkce_challenge(verifier: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Stores a started sign-in of the client at `address` under `state`.
pub async fn store_flow(
    db: &Db,
    state: &str,
    (nonce, challenge): (&str, &str),
    next: &str,
    address: &str,
) -> Result<(), StoreError> {
    let now = crate::clock::now();
    let flow = Flow {
        nonce: nonce.to_string(),
        challenge: challenge.to_string(),
        next: next.to_string(),
        expires_at: now + Duration::minutes(FLOW_MINUTES),
    };
    let bounds = FlowBounds {
        per_client: MAX_FLOWS_PER_CLIENT,
        total: MAX_FLOWS,
    };
    sign_in_flows::store(db, (state, &flow), &client_key(address), now, bounds).await
}

/// Takes the live flow of `state` (once). `Ok(None)`: no live flow (unknown, used or expired),
/// counted as a failed sign-in of the client at `address`. What then refuses the flow taken (a
/// cookie of another browser, the provider's answer) the caller audits with [`refuse`].
pub async fn take_flow(db: &Db, state: &str, address: &str) -> Result<Option<Flow>, DbErr> {
    let now = crate::clock::now();
    let flow = if state.is_empty() || state.len() > 128 {
        None
    } else {
        sign_in_flows::take(db, state, now).await?
    };
    if flow.is_none() {
        audit::record_sign_in_failure(db, &client_key(address), UNKNOWN_FLOW, now).await?;
    }
    Ok(flow)
}

/// An audit row for a single sign-on refused after its flow was taken: `reason` names what
/// failed (never a token or a secret).
pub async fn refuse(
    db: &Db,
    actor: Option<&str>,
    reason: &str,
    address: &str,
) -> Result<(), DbErr> {
    audit::audit(
        db,
        AuditEntry {
            actor: actor.unwrap_or("(single sign-on)"),
            action: AuditAction::SignIn,
            target: None,
            outcome: "refused",
            detail: Some(&format!("single sign-on: {reason}")),
            address: Some(address),
        },
    )
    .await
}

/// Signs in the person the provider proved: their user (created at the first sign-in) gets the
/// role the claim maps to now, and a session. Returns the user and the session token. With no
/// role, refused: audited, and the user's live sessions end.
pub async fn sign_in_identity(
    db: &Db,
    oidc: &Oidc,
    identity: &Identity,
    address: &str,
    sessions: &Sessions,
) -> Result<(User, String), IdentityError> {
    let role = oidc.role_of(identity.values.iter().map(String::as_str));
    // Two first sign-ins of one person at once: the second finds the user the first created.
    match sign_in_once(db, oidc, identity, role, address, sessions).await {
        Err(IdentityError::Db(e)) if is_unique_violation(&e) => {
            sign_in_once(db, oidc, identity, role, address, sessions).await
        }
        other => other,
    }
}

fn is_unique_violation(e: &DbErr) -> bool {
    matches!(
        e.sql_err(),
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
    )
}

async fn sign_in_once(
    db: &Db,
    oidc: &Oidc,
    identity: &Identity,
    role: Option<Role>,
    address: &str,
    sessions: &Sessions,
) -> Result<(User, String), IdentityError> {
    let now = crate::clock::now();
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    let found = users::find_identity_on(&txn, &identity.issuer, &identity.subject).await?;
    let Some(role) = role else {
        let actor = found
            .as_ref()
            .map(|user| user.name.clone())
            .or_else(|| identity.name_hint.clone());
        if let Some(user) = &found {
            users::revoke_sessions_on(&txn, user.id, now).await?;
        }
        let detail = format!(
            "single sign-on: no value of the claim {:?} is in operator_values or viewer_values",
            oidc.role_claim
        );
        audit_on(
            &txn,
            AuditEntry {
                actor: actor.as_deref().unwrap_or("(single sign-on)"),
                action: AuditAction::SignIn,
                target: None,
                outcome: "refused",
                detail: Some(&detail),
                address: Some(address),
            },
        )
        .await?;
        txn.commit().await?;
        return Err(IdentityError::NoRole);
    };
    let (user, detail) = match found {
        Some(user) => {
            let mut detail = "single sign-on".to_string();
            if user.role != role {
                users::set_role_on(&txn, user.id, role).await?;
                detail.push_str(&format!(
                    "; role {} → {}",
                    user.role.as_str(),
                    role.as_str()
                ));
                if role < user.role {
                    // A role taken away ends the sessions that had it.
                    users::revoke_sessions_on(&txn, user.id, now).await?;
                }
            }
            let user = User {
                id: user.id,
                name: user.name,
                role,
            };
            (user, detail)
        }
        None => {
            let name = new_name(&txn, identity).await?;
            let id = users::insert_identity_on(
                &txn,
                (&identity.issuer, &identity.subject),
                &name,
                role,
                now,
            )
            .await?;
            let detail = format!("single sign-on; new user, {}", role.as_str());
            (User { id, name, role }, detail)
        }
    };
    let token = open_session_on(&txn, user.id, sessions, now).await?;
    audit_on(
        &txn,
        AuditEntry {
            actor: &user.name,
            action: AuditAction::SignIn,
            target: None,
            outcome: "succeeded",
            detail: Some(&detail),
            address: Some(address),
        },
    )
    .await?;
    txn.commit().await?;
    Ok((user, token))
}

/// The name of a new user: the provider's `preferred_username` or `email`, kept to the letters a
/// user name may have; when another user has it, with a suffix of the identity's hash (a local
/// account is never taken over by a name).
async fn new_name<C: sea_orm::ConnectionTrait>(
    conn: &C,
    identity: &Identity,
) -> Result<String, DbErr> {
    let hint: String = identity
        .name_hint
        .as_deref()
        .unwrap_or("user")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "._-@".contains(*c))
        .take(48)
        .collect();
    let base = if hint.is_empty() { "user".into() } else { hint };
    if valid_user_name(&base) && !users::name_taken_on(conn, &base).await? {
        return Ok(base);
    }
    let digest = hex::encode(Sha256::digest(
        format!("{}\n{}", identity.issuer, identity.subject).as_bytes(),
    ));
    Ok(format!("{base}-{}", &digest[..10]))
}
