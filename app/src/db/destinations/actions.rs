//! What operators do to a destination: pause and resume it, retry one dead delivery or every
//! dead delivery of a filter (a count first, then the typed confirmation). Audited.

use super::super::Db;
use super::super::audit::{AuditEntry, audit_on};
use super::super::conditions::{QueryError, given};
use super::deliveries::conditions;
use crate::model::{AnswerClass, AnswerCount, AuditAction, ForwardFilter, ForwardStatus};
use chrono::Utc;
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait, Value};

/// Who did it, from where: the audit row's actor and address.
pub struct Actor<'a> {
    pub name: &'a str,
    pub address: &'a str,
}

/// Pauses (`true`) or resumes a destination: a paused one keeps its queue and is not attempted.
/// Audited. Returns whether anything changed.
pub async fn set_paused(
    db: &Db,
    destination: &str,
    paused: bool,
    actor: &Actor<'_>,
) -> Result<bool, DbErr> {
    let txn = db.writer.begin().await?;
    let backend = txn.get_database_backend();
    let changed = if paused {
        txn.execute_raw(crate::db::statement(
            backend,
            "INSERT INTO forward_destinations (destination, paused_at, paused_by) VALUES ($1, $2, $3)
             ON CONFLICT (destination) DO UPDATE SET paused_at = excluded.paused_at, paused_by = excluded.paused_by
             WHERE forward_destinations.paused_at IS NULL",
            vec![destination.into(), Utc::now().into(), actor.name.into()],
        ))
        .await?
        .rows_affected()
    } else {
        txn.execute_raw(crate::db::statement(
            backend,
            "UPDATE forward_destinations SET paused_at = NULL, paused_by = NULL
             WHERE destination = $1 AND paused_at IS NOT NULL",
            vec![destination.into()],
        ))
        .await?
        .rows_affected()
    } > 0;
    let action = if paused {
        AuditAction::PauseDestination
    } else {
        AuditAction::ResumeDestination
    };
    audit_on(
        &txn,
        AuditEntry {
            actor: actor.name,
            action,
            target: Some(destination),
            outcome: if changed { "done" } else { "unchanged" },
            detail: None,
            address: Some(actor.address),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(changed)
}

/// Why a retry did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RetryError {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Query(#[from] QueryError),
}

impl From<DbErr> for RetryError {
    fn from(e: DbErr) -> Self {
        RetryError::Query(QueryError::Db(e))
    }
}

/// Makes one dead delivery of `destination` due now, with the retry schedule started again.
/// Audited. Refused when there is no such delivery or it is not dead.
pub async fn retry_one(
    db: &Db,
    destination: &str,
    id: i64,
    actor: &Actor<'_>,
) -> Result<(), RetryError> {
    let txn = db.writer.begin().await?;
    let backend = txn.get_database_backend();
    let status = txn
        .query_one_raw(crate::db::statement(
            backend,
            "SELECT status FROM forward_deliveries WHERE id = $1 AND destination = $2",
            vec![id.into(), destination.into()],
        ))
        .await?
        .map(|r| r.try_get::<ForwardStatus>("", "status"))
        .transpose()?;
    match status {
        None => {
            return Err(RetryError::Refused(format!(
                "{destination} has no forward delivery {id}"
            )));
        }
        Some(ForwardStatus::Dead) => {}
        Some(other) => {
            return Err(RetryError::Refused(format!(
                "forward delivery {id} is {other}, not dead: only dead deliveries are retried"
            )));
        }
    }
    revive(
        &txn,
        "id = $1 AND destination = $2",
        vec![id.into(), destination.into()],
    )
    .await?;
    audit_on(
        &txn,
        AuditEntry {
            actor: actor.name,
            action: AuditAction::RetryForward,
            target: Some(&format!("{destination}/{id}")),
            outcome: "done",
            detail: None,
            address: Some(actor.address),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// Dead rows matching `condition` (on `values`, `$1` …) become pending and due now, their
/// schedule started again.
async fn revive<C: ConnectionTrait>(
    txn: &C,
    condition: &str,
    mut values: Vec<Value>,
) -> Result<u64, DbErr> {
    values.push(Utc::now().into());
    let now = values.len();
    Ok(txn
        .execute_raw(crate::db::statement(
            txn.get_database_backend(),
            format!(
                "UPDATE forward_deliveries SET status = '{pending}', next_attempt_at = ${now},
                        schedule_base = attempts, lease_until = NULL, leased_by = NULL
                 WHERE status = '{dead}' AND {condition}",
                pending = ForwardStatus::Pending.as_str(),
                dead = ForwardStatus::Dead.as_str()
            ),
            values,
        ))
        .await?
        .rows_affected())
}

/// The deliveries a bulk retry takes, in words.
pub fn retry_scope(destination: &str, filter: &ForwardFilter) -> String {
    let mut parts = vec![destination.to_string()];
    for (label, value) in [
        ("source", &filter.source),
        ("event or object id", &filter.q),
    ] {
        if let Some(v) = given(value) {
            parts.push(format!("{label} {v}"));
        }
    }
    parts.push("status dead".to_string());
    parts.join(", ")
}

/// What a bulk retry counted or did: how many, whether they were retried, and how many ended on
/// each class of answer ([`AnswerClass`]), most first.
#[derive(Debug)]
pub struct Retried {
    pub matched: i64,
    pub retried: bool,
    pub by_answer: Vec<AnswerCount>,
}

/// Counts the dead deliveries of the filter (its status is ignored: a retry takes the dead), by
/// their last answer's class; with `confirmation` equal to `retry N` for that count, makes them
/// all due now. Audited when done.
pub async fn retry_dead(
    db: &Db,
    destination: &str,
    filter: &ForwardFilter,
    confirmation: Option<&str>,
    actor: &Actor<'_>,
) -> Result<Retried, RetryError> {
    let filter = ForwardFilter {
        status: Some(ForwardStatus::Dead.as_str().to_string()),
        ..filter.clone()
    };
    let c = conditions(destination, &filter)?;
    let txn = db.writer.begin().await?;
    let backend = txn.get_database_backend();
    // One row per distinct last status (a few hundred at most), classed by the forwarder's rule.
    let counted = txn
        .query_all_raw(crate::db::statement(
            backend,
            format!(
                "SELECT last_status_code AS code, count(*) AS n FROM forward_deliveries {} GROUP BY last_status_code",
                c.clause()
            ),
            c.values.clone(),
        ))
        .await?;
    let mut by_answer: Vec<AnswerCount> = Vec::new();
    for row in &counted {
        let code: Option<i32> = row.try_get("", "code")?;
        let n: i64 = row.try_get("", "n")?;
        let class = AnswerClass::of(code.and_then(|c| u16::try_from(c).ok()));
        match by_answer.iter_mut().find(|a| a.class == class) {
            Some(a) => a.count += n,
            None => by_answer.push(AnswerCount { class, count: n }),
        }
    }
    by_answer.sort_by_key(|a| (std::cmp::Reverse(a.count), a.class));
    let matched: i64 = by_answer.iter().map(|a| a.count).sum();
    let answer = |retried| Retried {
        matched,
        retried,
        by_answer: by_answer.clone(),
    };
    let expected = format!("retry {matched}");
    match confirmation.map(str::trim) {
        None | Some("") => return Ok(answer(false)),
        Some(typed) if typed == expected => {}
        Some(_) => {
            return Err(RetryError::Refused(format!(
                "type \"{expected}\" to confirm (the count may have changed)"
            )));
        }
    }
    if matched == 0 {
        return Ok(answer(false));
    }
    let retried = revive(&txn, &c.sql.join(" AND "), c.values).await?;
    let scope = retry_scope(destination, &filter);
    audit_on(
        &txn,
        AuditEntry {
            actor: actor.name,
            action: AuditAction::BulkRetryForward,
            target: Some(destination),
            outcome: "done",
            detail: Some(&format!("{retried} dead deliveries of {scope}")),
            address: Some(actor.address),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(Retried {
        matched: i64::try_from(retried).unwrap_or(i64::MAX),
        ..answer(true)
    })
}
