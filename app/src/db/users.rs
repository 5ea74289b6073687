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
    created_at: DateTime<Utc>,
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

/// (name, role, created_at) of every user.
pub async fn list_users(db: &Db) -> Result<Vec<(String, Role, DateTime<Utc>)>, DbErr> {
    let rows = db
        .dashboard
        .query_all_raw(statement(
            db,
            "SELECT name, role, created_at FROM users ORDER BY name",
            vec![],
        ))
        .await?;
    rows.iter()
        .map(|row| {
            let user = Listed::from_query_result(row, "")?;
            Ok((user.name, user.role, user.created_at))
        })
        .collect()
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

/// Stores a new session, on any connection (the sign-in's transaction).
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
