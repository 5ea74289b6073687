//! `handshake_waits` (migration m20261203_000018): an operator waiting, with `hookbox handshake
//! SOURCE`, for a provider's unsigned first request that carries the source's signing secret.
//! The command opens a wait with the public half of a key pair it keeps; the endpoint fills the
//! oldest open wait with the secret sealed to that key, once; the command collects it and closes
//! the wait. What is sealed is the caller's to do: this module stores bytes.
//!
//! Bounds: a wait lasts at most [`MAX_WAIT_SECS`]; a source has at most [`MAX_OPEN_WAITS`] open
//! at once (expired ones are deleted as a wait opens); the endpoint never inserts a row.

use super::Db;
use super::statement;
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr};

/// The longest an operator may wait for a handshake.
pub const MAX_WAIT_SECS: u64 = 3600;
/// Open waits per source.
pub const MAX_OPEN_WAITS: i64 = 4;

/// Why a wait cannot be opened.
#[derive(Debug)]
pub enum WaitError {
    /// [`MAX_OPEN_WAITS`] are open for the source already.
    TooMany,
    Db(DbErr),
}

impl From<DbErr> for WaitError {
    fn from(e: DbErr) -> WaitError {
        WaitError::Db(e)
    }
}

/// Opens a wait on `source` for `secs` (at most [`MAX_WAIT_SECS`]) with `public_key`; its id.
pub async fn open_wait(
    db: &Db,
    source: &str,
    public_key: &[u8],
    secs: u64,
) -> Result<i64, WaitError> {
    let now = Utc::now();
    let secs = i64::try_from(secs.min(MAX_WAIT_SECS)).unwrap_or(0);
    db.writer
        .execute_raw(statement(
            db,
            "DELETE FROM handshake_waits WHERE expires_at < $1",
            vec![now.into()],
        ))
        .await?;
    let open = db
        .writer
        .query_one_raw(statement(
            db,
            "SELECT count(*) AS n FROM handshake_waits WHERE source = $1 AND sealed IS NULL",
            vec![source.into()],
        ))
        .await?
        .map(|row| row.try_get::<i64>("", "n"))
        .transpose()?
        .unwrap_or(0);
    if open >= MAX_OPEN_WAITS {
        return Err(WaitError::TooMany);
    }
    let row = db
        .writer
        .query_one_raw(statement(
            db,
            "INSERT INTO handshake_waits (source, public_key, created_at, expires_at)
             VALUES ($1, $2, $3, $4) RETURNING id",
            vec![
                source.into(),
                public_key.to_vec().into(),
                now.into(),
                (now + Duration::seconds(secs)).into(),
            ],
        ))
        .await?
        .ok_or_else(|| DbErr::RecordNotInserted)?;
    Ok(row.try_get::<i64>("", "id")?)
}

/// The oldest open, unexpired wait on `source`: its id and public key.
pub async fn open_wait_of(db: &Db, source: &str) -> Result<Option<(i64, Vec<u8>)>, DbErr> {
    db.writer
        .query_one_raw(statement(
            db,
            "SELECT id, public_key FROM handshake_waits
              WHERE source = $1 AND sealed IS NULL AND expires_at > $2
              ORDER BY id LIMIT 1",
            vec![source.into(), Utc::now().into()],
        ))
        .await?
        .map(|row| Ok((row.try_get("", "id")?, row.try_get("", "public_key")?)))
        .transpose()
}

/// Fills wait `id` with `sealed` unless another request filled it first; whether this one did.
pub async fn fill_wait(
    db: &Db,
    id: i64,
    sealed: &[u8],
    client_address: &str,
) -> Result<bool, DbErr> {
    let done = db
        .writer
        .execute_raw(statement(
            db,
            "UPDATE handshake_waits SET sealed = $1, answered_at = $2, client_address = $3
              WHERE id = $4 AND sealed IS NULL",
            vec![
                sealed.to_vec().into(),
                Utc::now().into(),
                client_address.into(),
                id.into(),
            ],
        ))
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A filled wait: the sealed secret, when and from where it came.
pub struct Filled {
    pub sealed: Vec<u8>,
    pub answered_at: DateTime<Utc>,
    pub client_address: String,
}

/// Wait `id` once it is filled; `None` while it is not.
pub async fn filled(db: &Db, id: i64) -> Result<Option<Filled>, DbErr> {
    let row = db
        .writer
        .query_one_raw(statement(
            db,
            "SELECT sealed, answered_at, client_address FROM handshake_waits
              WHERE id = $1 AND sealed IS NOT NULL",
            vec![id.into()],
        ))
        .await?;
    row.map(|row| {
        Ok(Filled {
            sealed: row.try_get("", "sealed")?,
            answered_at: row.try_get("", "answered_at")?,
            client_address: row
                .try_get::<Option<String>>("", "client_address")?
                .unwrap_or_default(),
        })
    })
    .transpose()
}

/// Deletes wait `id`, filled or not.
pub async fn close_wait(db: &Db, id: i64) -> Result<(), DbErr> {
    db.writer
        .execute_raw(statement(
            db,
            "DELETE FROM handshake_waits WHERE id = $1",
            vec![id.into()],
        ))
        .await?;
    Ok(())
}
