//! `users` and `sessions`: who may sign in, and the live sessions (stored as SHA-256 of the
//! browser's token, never the token). Password hashing and the throttle are `auth`'s.
//!
//! Reads run on the dashboard's pool; every write on [`Db::dashboard_writer`] (on SQLite the
//! single writer connection, bounded).

use super::Db;
use super::statement;
use crate::model::Role;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};

/// A user's row as sign-in needs it.
#[derive(Debug, FromQueryResult)]
pub struct UserRecord {
    pub id: i64,
    pub name: String,
    pub password_hash: String,
    pub role: Role,
}

#[derive(FromQueryResult)]
struct Listed {
    name: String,
    role: Role,
    issuer: Option<String>,
    created_at: DateTime<Utc>,
    last_sign_in_at: Option<DateTime<Utc>>,
}

/// A user of single sign-on as its sign-in finds it: by (issuer, subject).
#[derive(Debug, FromQueryResult)]
pub struct IdentityUser {
    pub id: i64,
    pub name: String,
    pub role: Role,
}

/// Adds a user, or sets the password hash and role of an existing one.
pub async fn upsert_user(
    db: &Db,
    name: &str,
    password_hash: &str,
    role: Role,
) -> Result<(), DbErr> {
    db.dashboard_writer()
        .await?
        .execute_raw(statement(
            db,
            "INSERT INTO users (name, password_hash, role, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (name) DO UPDATE SET password_hash = EXCLUDED.password_hash, role = EXCLUDED.role",
            vec![name.into(), password_hash.into(), role.as_str().into(), Utc::now().into()],
        ))
        .await?;
    Ok(())
}

pub async fn find_user(db: &Db, name: &str) -> Result<Option<UserRecord>, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(statement(
            db,
            "SELECT id, name, password_hash, role FROM users WHERE name = $1",
            vec![name.into()],
        ))
        .await?;
    row.map(|row| UserRecord::from_query_result(&row, ""))
        .transpose()
}

pub async fn count_users(db: &Db) -> Result<i64, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(statement(db, "SELECT count(*) AS users FROM users", vec![]))
        .await?;
    Ok(row
        .map(|row| row.try_get::<i64>("", "users"))
        .transpose()?
        .unwrap_or(0))
}

/// The users by name, at most `limit` of them (none: every one).
pub async fn list_users(db: &Db, limit: Option<u64>) -> Result<Vec<crate::model::UserRow>, DbErr> {
    let limit = limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default();
    let rows = db
        .dashboard
        .query_all_raw(statement(
            db,
            format!(
                "SELECT name, role, issuer, created_at, last_sign_in_at FROM users ORDER BY name{limit}"
            ),
            vec![],
        ))
        .await?;
    rows.iter()
        .map(|row| {
            let user = Listed::from_query_result(row, "")?;
            Ok(crate::model::UserRow {
                name: user.name,
                role: user.role,
                issuer: user.issuer,
                created_at: user.created_at.to_rfc3339(),
                last_sign_in_at: user.last_sign_in_at.map(|at| at.to_rfc3339()),
            })
        })
        .collect()
}

/// The user of (`issuer`, `subject`), locked for the sign-in's transaction where the database
/// locks rows.
pub async fn find_identity_on<C: ConnectionTrait>(
    conn: &C,
    issuer: &str,
    subject: &str,
) -> Result<Option<IdentityUser>, DbErr> {
    let backend = conn.get_database_backend();
    let row = conn
        .query_one_raw(statement(
            backend,
            format!(
                "SELECT id, name, role FROM users WHERE issuer = $1 AND subject = $2{}",
                crate::db::dialect::Dialect::of(backend).lock_for_update()
            ),
            vec![issuer.into(), subject.into()],
        ))
        .await?;
    row.map(|row| IdentityUser::from_query_result(&row, ""))
        .transpose()
}

pub async fn name_taken_on<C: ConnectionTrait>(conn: &C, name: &str) -> Result<bool, DbErr> {
    let row = conn
        .query_one_raw(statement(
            conn.get_database_backend(),
            "SELECT id FROM users WHERE name = $1",
            vec![name.into()],
        ))
        .await?;
    Ok(row.is_some())
}

/// A new user of single sign-on: no password (an empty hash, which no password matches).
pub async fn insert_identity_on<C: ConnectionTrait>(
    conn: &C,
    (issuer, subject): (&str, &str),
    name: &str,
    role: Role,
    at: DateTime<Utc>,
) -> Result<i64, DbErr> {
    let row = conn
        .query_one_raw(statement(
            conn.get_database_backend(),
            "INSERT INTO users (name, password_hash, role, created_at, issuer, subject)
             VALUES ($1, '', $2, $3, $4, $5) RETURNING id",
            vec![
                name.into(),
                role.as_str().into(),
                at.into(),
                issuer.into(),
                subject.into(),
            ],
        ))
        .await?
        .ok_or_else(|| DbErr::RecordNotInserted)?;
    row.try_get::<i64>("", "id")
}

/// The role a sign-in gave the user.
pub async fn set_role_on<C: ConnectionTrait>(conn: &C, id: i64, role: Role) -> Result<(), DbErr> {
    conn.execute_raw(statement(
        conn.get_database_backend(),
        "UPDATE users SET role = $2 WHERE id = $1",
        vec![id.into(), role.as_str().into()],
    ))
    .await?;
    Ok(())
}

/// Revokes every live session of the user `id`, on any connection (a sign-in's transaction).
pub async fn revoke_sessions_on<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    at: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let result = conn
        .execute_raw(statement(
            conn.get_database_backend(),
            "UPDATE sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL",
            vec![id.into(), at.into()],
        ))
        .await?;
    Ok(result.rows_affected())
}

/// Removes a user and with it every session; false when there was no such user.
pub async fn remove_user(db: &Db, name: &str) -> Result<bool, DbErr> {
    let result = db
        .dashboard_writer()
        .await?
        .execute_raw(statement(
            db,
            "DELETE FROM users WHERE name = $1",
            vec![name.into()],
        ))
        .await?;
    Ok(result.rows_affected() > 0)
}

/// Stores a new session, on any connection (the sign-in's transaction), and the time as the
/// user's last sign-in.
pub async fn insert_session_on<C: ConnectionTrait>(
    conn: &C,
    token_hash: &str,
    user_id: i64,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Result<(), DbErr> {
    conn.execute_raw(crate::db::statement(
        conn.get_database_backend(),
        "INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
        vec![token_hash.into(), user_id.into(), created_at.into(), expires_at.into()],
    ))
    .await?;
    conn.execute_raw(crate::db::statement(
        conn.get_database_backend(),
        "UPDATE users SET last_sign_in_at = $2 WHERE id = $1",
        vec![user_id.into(), created_at.into()],
    ))
    .await?;
    Ok(())
}

/// The user of a live (unexpired, unrevoked) session.
pub async fn session_user(db: &Db, token_hash: &str) -> Result<Option<UserRecord>, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(statement(
            db,
            "SELECT u.id, u.name, u.password_hash, u.role FROM sessions s JOIN users u ON u.id = s.user_id
             WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2",
            vec![token_hash.into(), Utc::now().into()],
        ))
        .await?;
    row.map(|row| UserRecord::from_query_result(&row, ""))
        .transpose()
}

pub async fn revoke_session(db: &Db, token_hash: &str) -> Result<(), DbErr> {
    db.dashboard_writer()
        .await?
        .execute_raw(statement(
            db,
            "UPDATE sessions SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL",
            vec![token_hash.into(), Utc::now().into()],
        ))
        .await?;
    Ok(())
}

/// Revokes every session of a user (e.g. after a password change).
pub async fn revoke_user_sessions(db: &Db, name: &str) -> Result<u64, DbErr> {
    let result = db
        .dashboard_writer()
        .await?
        .execute_raw(statement(
            db,
            "UPDATE sessions SET revoked_at = $2 WHERE revoked_at IS NULL AND user_id IN (SELECT id FROM users WHERE name = $1)",
            vec![name.into(), Utc::now().into()],
        ))
        .await?;
    Ok(result.rows_affected())
}
