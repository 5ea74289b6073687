//! `sign_in_flows`: single sign-ons started and not yet finished (`auth::oidc`). A flow is taken
//! once, by the callback that finishes it; one that is not is gone after its expiry. Every write
//! on [`Db::dashboard_writer`].

use super::{Db, statement};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult, TransactionTrait};

/// A started sign-in, as the callback finds it.
#[derive(Debug, Clone, FromQueryResult)]
pub struct Flow {
    pub nonce: String,
    /// The PKCE challenge (S256 of the verifier the browser's cookie holds).
    pub challenge: String,
    /// The local path to go to after.
    pub next: String,
    pub expires_at: DateTime<Utc>,
}

/// What a start may not exceed: unexpired flows of one client, and of all clients.
#[derive(Debug, Clone, Copy)]
pub struct FlowBounds {
    pub per_client: i64,
    pub total: i64,
}

/// Why a flow was not stored.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("this client has {0} sign-ins started and unfinished")]
    ClientFull(i64),
    #[error("{0} sign-ins are started and unfinished")]
    Full(i64),
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

/// Stores a started flow of `client`, after deleting the expired ones; refused past `bounds`.
pub async fn store(
    db: &Db,
    (state, flow): (&str, &Flow),
    client: &str,
    now: DateTime<Utc>,
    bounds: FlowBounds,
) -> Result<(), StoreError> {
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    let backend = txn.get_database_backend();
    txn.execute_raw(statement(
        backend,
        "DELETE FROM sign_in_flows WHERE expires_at <= $1",
        vec![now.into()],
    ))
    .await?;
    let count = |sql: &'static str, values: Vec<sea_orm::Value>| {
        let txn = &txn;
        async move {
            let row = txn.query_one_raw(statement(backend, sql, values)).await?;
            Ok::<i64, DbErr>(match row {
                Some(row) => row.try_get::<i64>("", "flows")?,
                None => 0,
            })
        }
    };
    let of_client = count(
        "SELECT count(*) AS flows FROM sign_in_flows WHERE client = $1",
        vec![client.into()],
    )
    .await?;
    if of_client >= bounds.per_client {
        return Err(StoreError::ClientFull(of_client));
    }
    let all = count("SELECT count(*) AS flows FROM sign_in_flows", vec![]).await?;
    if all >= bounds.total {
        return Err(StoreError::Full(all));
    }
    txn.execute_raw(statement(
        backend,
        "INSERT INTO sign_in_flows (state, nonce, challenge, next, client, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        vec![
            state.into(),
            flow.nonce.clone().into(),
            flow.challenge.clone().into(),
            flow.next.clone().into(),
            client.into(),
            now.into(),
            flow.expires_at.into(),
        ],
    ))
    .await?;
    txn.commit().await?;
    Ok(())
}

/// Takes the unexpired flow of `state`: it is deleted, so a second callback with the same state
/// (a replay, or the same one twice) finds nothing.
pub async fn take(db: &Db, state: &str, now: DateTime<Utc>) -> Result<Option<Flow>, DbErr> {
    let row = db
        .dashboard_writer()
        .await?
        .query_one_raw(statement(
            db.backend(),
            "DELETE FROM sign_in_flows WHERE state = $1
             RETURNING nonce, challenge, next, expires_at",
            vec![state.into()],
        ))
        .await?;
    Ok(row
        .map(|row| Flow::from_query_result(&row, ""))
        .transpose()?
        .filter(|flow| flow.expires_at > now))
}
