//! What operators say of a cause (`problem_states`), of either stage: acknowledged, resolved,
//! ignored, or open again. Resolving or ignoring hides failures nobody applied, so it is done
//! only once the caller confirms how many it covers ([`covered`]: the count the page shows, "9
//! deliveries were never applied"); ignoring takes a reason, resolving may. Each change is
//! audited in its transaction, the reason in the entry. The resolved and ignored causes are
//! listed, who, when and why, a page at a time ([`settled`]).

use super::super::Db;
use super::super::audit::{AuditEntry, audit_on};
use super::Failures;
use super::covered::{BOUND, covered, key};
use crate::model::{
    AuditAction, Cause, MAX_REASON_BYTES, ProblemState, SettledCause, SettledPage, StateChange,
};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait};

/// Resolved and ignored causes a page of [`settled`] lists.
pub const SETTLED_PAGE_SIZE: u32 = 50;
/// The last page [`settled`] reads (a page past it is refused): 50 000 causes.
pub const MAX_SETTLED_PAGE: u32 = 999;

/// Why a state could not be set.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// No open or ignored failure has this cause (a stale page, or a made-up cause).
    #[error("no failure has this cause: {0}")]
    NoSuchCause(String),
    /// Ignoring a cause without saying why.
    #[error("reason: required to ignore a cause (say why its failures need nobody)")]
    ReasonRequired,
    #[error("reason: at most {MAX_REASON_BYTES} bytes")]
    ReasonTooLong,
    /// The confirmed count is not the count now: failures came or went since the page asked.
    #[error("the cause covers {covers} now, not {confirmed}: {words}; confirm again")]
    CountChanged {
        covers: i64,
        confirmed: i64,
        words: String,
    },
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

/// Whether any failure no replay or retry resolved has `cause` (states aside).
async fn exists<C: ConnectionTrait>(conn: &C, cause: &Cause, class: &str) -> Result<bool, DbErr> {
    let f = Failures::of(cause.outcome);
    Ok(conn
        .query_one_raw(crate::db::statement(
            conn.get_database_backend(),
            format!(
                "SELECT 1 AS found FROM {} WHERE {} LIMIT 1",
                f.table,
                f.of_cause(BOUND)
            ),
            key(cause, class),
        ))
        .await?
        .is_some())
}

/// Sets what `operator` says of `cause` (`None`: open again, the state removed), with `reason`
/// (required to ignore), and audits it in the same transaction. Resolving or ignoring is done
/// only with `confirmed` equal to what it covers ([`covered`]); without `confirmed` it answers
/// the count and changes nothing. The cause must be one the page shows: one of its failures is
/// not resolved by a replay or a retry. Answers the count and whether anything changed.
pub async fn set_state(
    db: &Db,
    cause: &Cause,
    state: Option<ProblemState>,
    reason: Option<&str>,
    confirmed: Option<i64>,
    operator: &str,
) -> Result<StateChange, StateError> {
    let in_words = cause.in_words();
    let Some(class) = cause.class.as_deref() else {
        return Err(StateError::NoSuchCause(in_words));
    };
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    if reason.is_some_and(|r| r.len() > MAX_REASON_BYTES) {
        return Err(StateError::ReasonTooLong);
    }
    // Asked when confirming: the count comes first, the reason with the confirmation.
    if state == Some(ProblemState::Ignored) && confirmed.is_some() && reason.is_none() {
        return Err(StateError::ReasonRequired);
    }
    let backend = db.backend();
    // Taken before the count: a failure after it stays open (a resolved cause's later failures).
    let now = Utc::now();
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    let covers = covered(&txn, cause).await?;
    let answer = |changed| StateChange {
        covers,
        covers_words: cause.covers_words(covers),
        changed,
    };
    let changed = match state {
        Some(state) => {
            if !exists(&txn, cause, class).await? {
                return Err(StateError::NoSuchCause(in_words));
            }
            if matches!(state, ProblemState::Resolved | ProblemState::Ignored) {
                match confirmed {
                    None => return Ok(answer(false)),
                    Some(confirmed) if confirmed != covers => {
                        return Err(StateError::CountChanged {
                            covers,
                            confirmed,
                            words: cause.covers_words(covers),
                        });
                    }
                    Some(_) => {}
                }
            }
            let mut values = key(cause, class);
            values.extend([
                state.as_str().into(),
                now.into(),
                operator.into(),
                reason.map(str::to_string).into(),
            ]);
            txn.execute_raw(crate::db::statement(
                backend,
                "INSERT INTO problem_states (source, outcome, error_class, state, changed_at, changed_by, reason)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (source, outcome, error_class) DO UPDATE
                    SET state = excluded.state, changed_at = excluded.changed_at,
                        changed_by = excluded.changed_by, reason = excluded.reason",
                values,
            ))
            .await?;
            true
        }
        None => {
            txn.execute_raw(crate::db::statement(
                backend,
                "DELETE FROM problem_states WHERE source = $1 AND outcome = $2 AND error_class = $3",
                key(cause, class),
            ))
            .await?
            .rows_affected()
                > 0
        }
    };
    if changed {
        audit_change(&txn, cause, state, (covers, reason), operator).await?;
        // Resolving closes the cause, opening it again may reopen it: told in this transaction.
        super::marks::notice(&txn, cause).await?;
    }
    txn.commit().await?;
    Ok(answer(changed))
}

/// The audit entry of a changed state: who set which state on the cause, over how many
/// failures, and why.
async fn audit_change(
    txn: &sea_orm::DatabaseTransaction,
    cause: &Cause,
    state: Option<ProblemState>,
    (covers, reason): (i64, Option<&str>),
    operator: &str,
) -> Result<(), DbErr> {
    let action = match state {
        Some(ProblemState::Acknowledged) => AuditAction::AcknowledgeProblem,
        Some(ProblemState::Resolved) => AuditAction::ResolveProblem,
        Some(ProblemState::Ignored) => AuditAction::IgnoreProblem,
        None => AuditAction::ReopenProblem,
    };
    let detail = format!(
        "{}{}",
        cause.covers_words(covers),
        reason.map(|r| format!("; reason: {r}")).unwrap_or_default()
    );
    audit_on(
        txn,
        AuditEntry {
            actor: operator,
            action,
            target: Some(&cause.in_words()),
            outcome: state.map_or("open", ProblemState::as_str),
            detail: Some(&detail),
            address: None,
        },
    )
    .await
}

/// Page `page` (0 the first, at most [`MAX_SETTLED_PAGE`]) of the resolved and ignored causes,
/// the newest change first, [`SETTLED_PAGE_SIZE`] a page: who, when and why.
pub async fn settled(db: &Db, page: u32) -> Result<SettledPage, DbErr> {
    let page = page.min(MAX_SETTLED_PAGE);
    let states = format!(
        "state IN ('{}', '{}')",
        ProblemState::Resolved.as_str(),
        ProblemState::Ignored.as_str()
    );
    let total = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            format!("SELECT count(*) AS n FROM problem_states WHERE {states}"),
            vec![],
        ))
        .await?
        .map_or(Ok(0), |r| r.try_get::<i64>("", "n"))?;
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT source, outcome, error_class, state, changed_at, changed_by, reason
                 FROM problem_states WHERE {states}
                 ORDER BY changed_at DESC, source, outcome, error_class LIMIT $1 OFFSET $2"
            ),
            vec![
                i64::from(SETTLED_PAGE_SIZE).into(),
                (i64::from(page) * i64::from(SETTLED_PAGE_SIZE)).into(),
            ],
        ))
        .await?;
    let mut list = Vec::with_capacity(rows.len());
    for row in &rows {
        let changed_at: DateTime<Utc> = row.try_get("", "changed_at")?;
        list.push(SettledCause {
            cause: super::cause_of(row)?,
            state: row.try_get("", "state")?,
            changed_at: changed_at.to_rfc3339(),
            changed_by: row.try_get("", "changed_by")?,
            reason: row.try_get("", "reason")?,
        });
    }
    Ok(SettledPage {
        rows: list,
        total,
        page,
        page_size: SETTLED_PAGE_SIZE,
    })
}
