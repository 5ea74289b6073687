//! Replay: a stored delivery through the same ingest transaction again, as a new archive row
//! linked to the original and the operator. Never a bypass: replaying an accepted event is a
//! recorded duplicate. A dry run is the same transaction, rolled back.

use super::{Outcome, Received, Recorded, apply_in, begin, record_invalid_in};
use crate::config::Config;
use crate::db::Db;
use crate::db::audit::{AuditEntry, audit_on};
use crate::db::events::StoredDelivery;
use crate::envelope::parse_envelope;
use crate::model::AuditAction;
use sea_orm::{DatabaseTransaction, DbErr};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("source {0:?} is no longer configured")]
    UnknownSource(String),
    /// The database refused the replayed data (a deterministic refusal, `super::refusal`): a
    /// 422, since trying again meets it again; nothing was written.
    #[error("{0}")]
    Refused(String),
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

/// The request headers of a stored delivery, for `header:` identity fields.
fn header_map(headers_json: &str) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    if let Ok(serde_json::Value::Object(headers)) =
        serde_json::from_str::<serde_json::Value>(headers_json)
    {
        for (name, value) in headers {
            if let (Ok(name), Some(Ok(value))) = (
                http::HeaderName::from_bytes(name.as_bytes()),
                value.as_str().map(http::HeaderValue::from_str),
            ) {
                map.append(name, value);
            }
        }
    }
    map
}

/// Runs a stored delivery through ingest. `dry_run` rolls everything back; otherwise the new
/// archive row and one audit row commit together.
pub async fn replay(
    db: &Db,
    config: &Config,
    stored: &StoredDelivery,
    operator: &str,
    dry_run: bool,
) -> Result<Recorded, ReplayError> {
    run(db, config, stored, operator, dry_run, true)
        .await
        .map_err(ReplayError::classified)
}

/// One stored delivery through ingest inside `txn`, without the commit.
async fn replay_in(
    txn: &DatabaseTransaction,
    config: &Config,
    stored: &StoredDelivery,
    operator: &str,
) -> Result<Recorded, ReplayError> {
    let source = config
        .source(&stored.row.source)
        .ok_or_else(|| ReplayError::UnknownSource(stored.row.source.clone()))?;
    let received = Received {
        source: &source.name,
        headers_json: &stored.headers_json,
        body: &stored.body,
        received_at: chrono::Utc::now(),
        replay_of: Some(stored.row.id),
        replayed_by: Some(operator),
        signed_body_digest: source
            .scheme
            .signs_body_only()
            .then(|| super::body_digest(&stored.body)),
        forward_to: &source.forward,
    };
    let headers = header_map(&stored.headers_json);
    Ok(
        match parse_envelope(&source.mapping, &headers, &stored.body) {
            Ok(envelope) => apply_in(txn, source.mapping.mode, &received, &envelope).await?,
            Err(invalid) => record_invalid_in(txn, &received, &invalid).await?,
        },
    )
}

async fn run(
    db: &Db,
    config: &Config,
    stored: &StoredDelivery,
    operator: &str,
    dry_run: bool,
    audited: bool,
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
    if !audited {
        txn.commit().await?;
        return Ok(recorded);
    }
    let target = stored.row.id.to_string();
    let detail = format!("new archive row {}", recorded.archive_id);
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

/// Dry-runs or replays many stored deliveries. The dry run takes each alone, rolled back. The
/// replay takes them all in one transaction with one audit row (the count, the outcomes and the
/// ids of the deliveries replayed): it all commits, or nothing does. Returns each outcome.
pub async fn replay_many(
    db: &Db,
    config: &Config,
    ids: &[i64],
    operator: &str,
    dry_run: bool,
) -> Result<Vec<Outcome>, ReplayError> {
    replay_many_unclassified(db, config, ids, operator, dry_run)
        .await
        .map_err(ReplayError::classified)
}

async fn replay_many_unclassified(
    db: &Db,
    config: &Config,
    ids: &[i64],
    operator: &str,
    dry_run: bool,
) -> Result<Vec<Outcome>, ReplayError> {
    let mut outcomes = Vec::with_capacity(ids.len());
    if dry_run {
        for id in ids {
            let Some(stored) = crate::db::events::stored_delivery(db, *id).await? else {
                continue;
            };
            match run(db, config, &stored, operator, true, false).await {
                Ok(recorded) => outcomes.push(recorded.outcome),
                Err(ReplayError::UnknownSource(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        return Ok(outcomes);
    }
    // Dropped without a commit on any error: every replay of this call rolls back.
    let txn = begin(db).await?;
    let mut replayed = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(stored) = crate::db::events::stored_delivery_on(&txn, *id).await? else {
            continue;
        };
        match replay_in(&txn, config, &stored, operator).await {
            Ok(recorded) => {
                replayed.push(id.to_string());
                outcomes.push(recorded.outcome);
            }
            Err(ReplayError::UnknownSource(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    let mut breakdown: Vec<(&str, usize)> = Vec::new();
    for outcome in &outcomes {
        match breakdown
            .iter_mut()
            .find(|(name, _)| *name == outcome.name())
        {
            Some(entry) => entry.1 += 1,
            None => breakdown.push((outcome.name(), 1)),
        }
    }
    let mut detail = breakdown
        .iter()
        .map(|(n, c)| format!("{n}: {c}"))
        .collect::<Vec<_>>()
        .join(", ");
    if !replayed.is_empty() {
        detail.push_str(&format!("; deliveries {}", replayed.join(", ")));
    }
    let count = outcomes.len().to_string();
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
    Ok(outcomes)
}
