//! Replay: a stored delivery through the same ingest transaction again, as a new archive row
//! linked to the original and the operator. Never a bypass: replaying an accepted event is a
//! recorded duplicate. A dry run is the same transaction, rolled back.
//!
//! A replay that does not fail (applied, stale, accepted, a duplicate) resolves the failure it
//! replays, in its transaction: the original, and its failed replays (`write::Statements::resolve`). A replay
//! that would fail as the original did (the same error class) is refused unless the operator
//! insists ([`Repeat`]); a bulk replay leaves those out, with the failures already resolved and
//! the replays themselves, and counts what it left out ([`Skipped`]).

use super::connection::{On, resolve};
use super::problem::error_class;
use super::read_delivery;
use super::{Outcome, Received, Recorded, apply_in, begin, record_invalid_in};
use crate::config::Config;
use crate::db::Db;
use crate::db::audit::{AuditEntry, audit_on};
use crate::db::events::StoredDelivery;
use crate::model::{AuditAction, Cause, EventRow, Skipped, Stage, Status};
use sea_orm::{DatabaseTransaction, DbErr, TransactionTrait};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("source {0:?} is no longer configured")]
    UnknownSource(String),
    /// The database refused the replayed data (a deterministic refusal, `super::refusal`): a
    /// 422, since trying again meets it again; nothing was written.
    #[error("{0}")]
    Refused(String),
    /// The replay would fail as the original did: nothing was written.
    #[error("the replay would fail as the original did ({class}): fix the cause first, or insist")]
    SameFailure { class: String },
    /// A confirmed bulk replay would replay another number of deliveries than the operator
    /// confirmed (something changed since the dry run): nothing was written.
    #[error("{now} deliveries would be replayed now, not {expected}")]
    CountChanged { expected: usize, now: usize },
    /// Its body and headers expired (`body_retention_days`): there is nothing to send again.
    #[error(
        "its body and headers expired at {} (body_retention_days): only its ids, outcome and the body's SHA-256 are kept",
        .0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )]
    BodyExpired(chrono::DateTime<chrono::Utc>),
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

impl ReplayError {
    /// A database error that is a refusal of the data becomes [`ReplayError::Refused`].
    fn classified(self) -> ReplayError {
        match self {
            ReplayError::Db(e) => match super::refusal(&e) {
                Some(reason) => ReplayError::Refused(reason),
                None => ReplayError::Db(e),
            },
            other => other,
        }
    }
}

/// The request headers of a stored delivery, for `header:` identity fields and its content type.
pub fn header_map(headers_json: &str) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (name, value) in crate::headers::stored_headers(headers_json) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            map.append(name, value);
        }
    }
    map
}

/// Whether a replay may fail as its original did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Refused ([`ReplayError::SameFailure`]): the cause is not fixed yet.
    Refused,
    /// The operator insists (the dashboard's typed override).
    Allowed,
}

/// Whether `outcome`, a replay's, is the failure of `original` again: both failed, with the
/// same error class.
pub fn fails_the_same_way(original: &EventRow, outcome: &Outcome) -> bool {
    original.status == Status::Failed
        && outcome.status() == Status::Failed
        && error_class(original.outcome, original.error_message.as_deref())
            == error_class(outcome.kind(), outcome.error_message().as_deref())
}

/// Runs a stored delivery through ingest. `dry_run` rolls everything back; otherwise the new
/// archive row and one audit row commit together. The replay may fail as the original did
/// (see [`replay_checked`]).
pub async fn replay(
    db: &Db,
    config: &Config,
    stored: &StoredDelivery,
    operator: &str,
    dry_run: bool,
) -> Result<Recorded, ReplayError> {
    replay_checked(db, config, stored, operator, dry_run, Repeat::Allowed).await
}

/// [`replay`], refusing (with `Repeat::Refused`) a replay that fails as the original did: its
/// transaction rolls back and the answer is [`ReplayError::SameFailure`]. A dry run is never
/// refused: it tells.
pub async fn replay_checked(
    db: &Db,
    config: &Config,
    stored: &StoredDelivery,
    operator: &str,
    dry_run: bool,
    repeat: Repeat,
) -> Result<Recorded, ReplayError> {
    run(db, config, stored, operator, dry_run, repeat)
        .await
        .map_err(ReplayError::classified)
}

/// One stored delivery through ingest inside `txn`, without the commit. When it does not fail,
/// it resolves the failure it replays (and the failed replays of that failure before it).
async fn replay_in(
    txn: &DatabaseTransaction,
    config: &Config,
    stored: &StoredDelivery,
    operator: &str,
) -> Result<Recorded, ReplayError> {
    if let Some(expired) = &stored.expired {
        return Err(ReplayError::BodyExpired(expired.at));
    }
    let source = config
        .source(&stored.row.source)
        .ok_or_else(|| ReplayError::UnknownSource(stored.row.source.clone()))?;
    let headers = header_map(&stored.headers_json);
    let read = read_delivery(source, &headers, &stored.body).await;
    let received = Received {
        source: &source.name,
        headers_json: &stored.headers_json,
        body: &stored.body,
        body_fields: read.form.into_fields(),
        received_at: chrono::Utc::now(),
        replay_of: Some(stored.row.id),
        replayed_by: Some(operator),
        signed_body_digest: source.auth().replay_digest(&headers, &stored.body),
        forward_to: &read.destinations[..],
    };
    let recorded = match read.parsed {
        Ok(envelope) => apply_in(txn, source.mapping.mode, &received, &envelope).await?,
        Err(invalid) => record_invalid_in(txn, &received, &invalid).await?,
    };
    if recorded.outcome.status() != Status::Failed {
        resolve(&mut On::Orm(txn), stored.row.id, recorded.archive_id).await?;
        // The failure's cause may have no open failure left: told in the replay's transaction.
        if stored.row.status == Status::Failed {
            let cause = Cause {
                source: stored.row.source.clone(),
                outcome: Stage::Ingest(stored.row.outcome),
                class: error_class(stored.row.outcome, stored.row.error_message.as_deref()),
            };
            crate::db::problems::marks::notice(txn, &cause).await?;
        }
    }
    Ok(recorded)
}

async fn run(
    db: &Db,
    config: &Config,
    stored: &StoredDelivery,
    operator: &str,
    dry_run: bool,
    repeat: Repeat,
) -> Result<Recorded, ReplayError> {
    let txn = begin(db).await?;
    let recorded = replay_in(&txn, config, stored, operator).await?;
    if dry_run {
        txn.rollback().await?;
        return Ok(Recorded {
            archive_id: 0,
            outcome: recorded.outcome,
        });
    }
    if repeat == Repeat::Refused && fails_the_same_way(&stored.row, &recorded.outcome) {
        txn.rollback().await?;
        return Err(ReplayError::SameFailure {
            class: error_class(
                recorded.outcome.kind(),
                recorded.outcome.error_message().as_deref(),
            )
            .unwrap_or_default(),
        });
    }
    let target = stored.row.id.to_string();
    let mut detail = format!("new archive row {}", recorded.archive_id);
    if stored.row.status == Status::Failed && recorded.outcome.status() != Status::Failed {
        detail.push_str(", which resolves the failure");
    }
    audit_on(
        &txn,
        AuditEntry {
            actor: operator,
            action: AuditAction::Replay,
            target: Some(&target),
            outcome: recorded.outcome.name(),
            detail: Some(&detail),
            address: None,
        },
    )
    .await?;
    txn.commit().await?;
    Ok(recorded)
}

/// What a bulk replay does: a dry run, or the replay of exactly `expected` deliveries (the
/// count the dry run answered and the operator confirmed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bulk {
    DryRun,
    Confirmed { expected: usize },
}

/// What a bulk replay did (or would do): the outcome of each delivery replayed, and what it
/// left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BulkReplay {
    pub outcomes: Vec<Outcome>,
    pub skipped: Skipped,
}

impl BulkReplay {
    /// Outcome → how many, in the order first met.
    pub fn breakdown(&self) -> Vec<(&'static str, usize)> {
        let mut breakdown: Vec<(&str, usize)> = Vec::new();
        for outcome in &self.outcomes {
            match breakdown
                .iter_mut()
                .find(|(name, _)| *name == outcome.name())
            {
                Some(entry) => entry.1 += 1,
                None => breakdown.push((outcome.name(), 1)),
            }
        }
        breakdown
    }
}

/// Replays many stored failures in one transaction, in order, with one audit row (the count,
/// the outcomes, what was left out and why, the ids replayed): it all commits, or nothing does.
/// Failures already resolved, replays themselves and failures whose replay would fail as they
/// did (each tried in a savepoint, rolled back) are left out. The dry run is the same
/// transaction rolled back, so it answers exactly what the replay will do. A confirmed replay
/// that would replay another number than `expected` writes nothing
/// ([`ReplayError::CountChanged`]).
pub async fn replay_many(
    db: &Db,
    config: &Config,
    ids: &[i64],
    operator: &str,
    mode: Bulk,
) -> Result<BulkReplay, ReplayError> {
    replay_many_unclassified(db, config, ids, operator, mode)
        .await
        .map_err(ReplayError::classified)
}

async fn replay_many_unclassified(
    db: &Db,
    config: &Config,
    ids: &[i64],
    operator: &str,
    mode: Bulk,
) -> Result<BulkReplay, ReplayError> {
    // Dropped without a commit on any error: every replay of this call rolls back.
    let txn = begin(db).await?;
    let mut done = BulkReplay::default();
    let mut replayed = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(stored) = crate::db::events::stored_delivery_on(&txn, *id).await? else {
            continue;
        };
        // A replay first: replaying its original resolves it too, earlier in this transaction.
        if stored.row.replayed_by.is_some() {
            done.skipped.replays += 1;
            continue;
        }
        if stored.row.resolved_by.is_some() {
            done.skipped.resolved += 1;
            continue;
        }
        let attempt = txn.begin().await?;
        match replay_in(&attempt, config, &stored, operator).await {
            Ok(recorded) if fails_the_same_way(&stored.row, &recorded.outcome) => {
                attempt.rollback().await?;
                done.skipped.same_failure += 1;
            }
            Ok(recorded) => {
                attempt.commit().await?;
                replayed.push(id.to_string());
                done.outcomes.push(recorded.outcome);
            }
            Err(ReplayError::UnknownSource(_)) => {
                attempt.rollback().await?;
                done.skipped.unknown_source += 1;
            }
            Err(ReplayError::BodyExpired(_)) => {
                attempt.rollback().await?;
                done.skipped.body_expired += 1;
            }
            Err(e) => return Err(e),
        }
    }
    let expected = match mode {
        Bulk::DryRun => {
            txn.rollback().await?;
            return Ok(done);
        }
        Bulk::Confirmed { expected } => expected,
    };
    if done.outcomes.len() != expected {
        txn.rollback().await?;
        return Err(ReplayError::CountChanged {
            expected,
            now: done.outcomes.len(),
        });
    }
    let mut detail = done
        .breakdown()
        .iter()
        .map(|(n, c)| format!("{n}: {c}"))
        .collect::<Vec<_>>()
        .join(", ");
    if done.skipped.total() > 0 {
        detail.push_str(&format!(
            "; skipped {}: {}",
            done.skipped.total(),
            done.skipped.in_words()
        ));
    }
    if !replayed.is_empty() {
        detail.push_str(&format!("; deliveries {}", replayed.join(", ")));
    }
    let count = done.outcomes.len().to_string();
    audit_on(
        &txn,
        AuditEntry {
            actor: operator,
            action: AuditAction::BulkReplay,
            target: Some(&count),
            outcome: "done",
            detail: Some(&detail),
            address: None,
        },
    )
    .await?;
    txn.commit().await?;
    Ok(done)
}

/// Why the failed deliveries of a filter are not replayed.
#[derive(Debug)]
pub enum FilterReplayError {
    /// The filter is not one (a 400 naming the field), or the database failed.
    Query(crate::db::conditions::QueryError),
    /// More than [`crate::model::BULK_REPLAY_LIMIT`] failed deliveries match.
    TooMany,
    Replay(ReplayError),
}

/// The failed deliveries `filter` matches (whatever status it names), replayed by `operator` as
/// `mode` says: how many matched, and what the replay did or would do. What `/events`' bulk
/// replay and `POST /api/v1/events/replay` both call.
pub async fn replay_filter(
    db: &Db,
    config: &Config,
    filter: &crate::model::EventFilter,
    operator: &str,
    mode: Bulk,
) -> Result<(usize, BulkReplay), FilterReplayError> {
    let limit = crate::model::BULK_REPLAY_LIMIT;
    let ids = crate::db::events::failed_ids(db, filter, limit)
        .await
        .map_err(FilterReplayError::Query)?;
    if ids.len() > limit {
        return Err(FilterReplayError::TooMany);
    }
    let done = replay_many(db, config, &ids, operator, mode)
        .await
        .map_err(FilterReplayError::Replay)?;
    Ok((ids.len(), done))
}
