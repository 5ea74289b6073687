//! `audit_log`: who signed in, failed to, or replayed what. Writes go through [`audit_on`] so
//! they can join the transaction of the change they record; reads are the audit page.

use super::Db;
use super::filter::Conditions;
use crate::model::{AuditAction, AuditRow};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult, Statement};

#[derive(FromQueryResult)]
struct AuditRecord {
    id: i64,
    at: DateTime<Utc>,
    actor: String,
    action: String,
    target: Option<String>,
    outcome: String,
    detail: Option<String>,
}

pub async fn audit_entries(
    db: &Db,
    action: Option<&str>,
    actor: Option<&str>,
) -> Result<Vec<AuditRow>, DbErr> {
    let mut c = Conditions::new();
    if let Some(action) = action.filter(|a| !a.is_empty()) {
        c.push("action = ?", action.to_string());
    }
    if let Some(actor) = actor.filter(|a| !a.is_empty()) {
        c.push("actor = ?", actor.to_string());
    }
    let sql = format!(
        "SELECT id, at, actor, action, target, outcome, detail FROM audit_log {} ORDER BY at DESC, id DESC LIMIT 200",
        c.clause()
    );
    let rows = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(db.backend(), sql, c.values))
        .await?;
    rows.iter()
        .map(|r| {
            let r = AuditRecord::from_query_result(r, "")?;
            Ok(AuditRow {
                id: r.id,
                at: r.at.to_rfc3339(),
                actor: r.actor,
                action: r.action,
                target: r.target,
                outcome: r.outcome,
                detail: r.detail,
            })
        })
        .collect()
}

/// One audit row to write.
pub struct AuditEntry<'a> {
    pub actor: &'a str,
    pub action: &'a str,
    pub target: Option<&'a str>,
    pub outcome: &'a str,
    pub detail: Option<&'a str>,
    pub address: Option<&'a str>,
}

/// Writes one audit row on any connection (a transaction too, so it commits with the change).
pub async fn audit_on<C: ConnectionTrait>(conn: &C, entry: AuditEntry<'_>) -> Result<(), DbErr> {
    conn.execute_raw(Statement::from_sql_and_values(
        conn.get_database_backend(),
        "INSERT INTO audit_log (at, actor, action, target, outcome, detail, address) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        vec![
            Utc::now().into(),
            entry.actor.into(),
            entry.action.into(),
            entry.target.into(),
            entry.outcome.into(),
            entry.detail.into(),
            entry.address.into(),
        ],
    ))
    .await?;
    Ok(())
}

/// Records a sign-in attempt as failed (until its password proves right); returns its row id.
pub async fn record_sign_in_attempt(db: &Db, name: &str, address: &str) -> Result<i64, DbErr> {
    db.conn
        .query_one_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO audit_log (at, actor, action, target, outcome, detail, address)
             VALUES ($1, $2, $4, NULL, 'failed', NULL, $3) RETURNING id",
            vec![
                Utc::now().into(),
                name.into(),
                address.into(),
                AuditAction::SignIn.as_str().into(),
            ],
        ))
        .await?
        .ok_or(DbErr::RecordNotInserted)?
        .try_get::<i64>("", "id")
}

/// Sets the outcome of a recorded attempt (`succeeded`, `throttled`).
pub async fn set_attempt_outcome(db: &Db, id: i64, outcome: &str) -> Result<(), DbErr> {
    db.conn
        .execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "UPDATE audit_log SET outcome = $2 WHERE id = $1",
            vec![id.into(), outcome.into()],
        ))
        .await?;
    Ok(())
}

/// Who a failed sign-in is counted against.
#[derive(Debug, Clone, Copy)]
pub enum Attempted<'a> {
    Name(&'a str),
    Address(&'a str),
}

/// Failed sign-ins of a user name or from an address since `since`.
pub async fn failed_sign_ins_since(
    db: &Db,
    by: Attempted<'_>,
    since: DateTime<Utc>,
) -> Result<i64, DbErr> {
    let (column, value) = match by {
        Attempted::Name(name) => ("actor", name),
        Attempted::Address(address) => ("address", address),
    };
    let sql = format!(
        "SELECT count(*) AS failures FROM audit_log WHERE action = $3 AND outcome = 'failed' AND {column} = $1 AND at > $2"
    );
    Ok(db
        .conn
        .query_one_raw(Statement::from_sql_and_values(
            db.backend(),
            sql,
            vec![
                value.into(),
                since.into(),
                AuditAction::SignIn.as_str().into(),
            ],
        ))
        .await?
        .map(|r| r.try_get::<i64>("", "failures"))
        .transpose()?
        .unwrap_or(0))
}
