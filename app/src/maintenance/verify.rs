//! `hookbox verify`: checks that the projection, the inbox and the archive agree (as the
//! guarantees of `docs/webhooks.md` imply), reports every drift with a suggested repair, and with
//! `--repair` re-derives drifted projection rows from the inbox. Every run is recorded in
//! `verify_runs` for the dashboard.
//!
//! The invariants:
//! - each object of a snapshot source (inbox rows with a revision) has an `object_state` row at
//!   its greatest inbox revision, with that row's snapshot (PostgreSQL compares `jsonb`; SQLite the
//!   canonical forms, computed here for the projection);
//! - no `object_state` row exists without an inbox revision behind it;
//! - each inbox row younger than the retention cutoff has an archive row of the same
//!   (source, event id) (older ones may have been purged);
//! - no `processed` archive row (`applied`, `stale`, `accepted`) lacks its inbox row, and an
//!   `applied` or `stale` row names the revision its inbox row holds.

use super::purge::Cutoffs;
use crate::db::Db;
use crate::db::conditions::Conditions;
use crate::db::dialect::Dialect;
use crate::ingest;
use crate::json;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DatabaseBackend, DbErr};
use std::fmt;

/// One disagreement between the tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// `object_state` is not the greatest inbox revision (or not its snapshot).
    ProjectionDiffers {
        source: String,
        object_id: String,
        projected_revision: i64,
        greatest_revision: i64,
    },
    /// The inbox has revisions of an object that `object_state` lacks.
    ProjectionMissing {
        source: String,
        object_id: String,
        greatest_revision: i64,
    },
    /// `object_state` has an object of which the inbox holds no revision.
    ProjectionWithoutInbox {
        source: String,
        object_id: String,
        projected_revision: i64,
    },
    /// An inbox row younger than the retention cutoff without any archive row.
    ArchiveMissing { source: String, event_id: String },
    /// A processed archive row that its inbox row contradicts.
    ArchiveContradicts {
        archive_id: i64,
        source: String,
        event_id: Option<String>,
        outcome: String,
        problem: String,
    },
}

impl Drift {
    /// Whether `--repair` fixes it (projection rows are derived data; the inbox and the archive
    /// are records and are never rewritten).
    pub fn repairable(&self) -> bool {
        matches!(
            self,
            Drift::ProjectionDiffers { .. } | Drift::ProjectionMissing { .. }
        )
    }

    fn kind(&self) -> &'static str {
        match self {
            Drift::ProjectionDiffers { .. } => "projection rows differing from the inbox",
            Drift::ProjectionMissing { .. } => "objects missing from object_state",
            Drift::ProjectionWithoutInbox { .. } => "projection rows without inbox revisions",
            Drift::ArchiveMissing { .. } => "inbox rows without an archive row",
            Drift::ArchiveContradicts { .. } => "archive rows contradicting the inbox",
        }
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Drift::ProjectionDiffers {
                source,
                object_id,
                projected_revision,
                greatest_revision,
            } if projected_revision == greatest_revision => write!(
                f,
                "object {source}/{object_id}: object_state.snapshot differs from the inbox snapshot of revision {greatest_revision}; repair: `hookbox verify --repair` copies the inbox snapshot"
            ),
            Drift::ProjectionDiffers {
                source,
                object_id,
                projected_revision,
                greatest_revision,
            } => write!(
                f,
                "object {source}/{object_id}: object_state is at revision {projected_revision}, the greatest inbox revision is {greatest_revision}; repair: `hookbox verify --repair` sets it to revision {greatest_revision} and its snapshot"
            ),
            Drift::ProjectionMissing {
                source,
                object_id,
                greatest_revision,
            } => write!(
                f,
                "object {source}/{object_id}: missing from object_state, the greatest inbox revision is {greatest_revision}; repair: `hookbox verify --repair` inserts revision {greatest_revision} and its snapshot"
            ),
            Drift::ProjectionWithoutInbox {
                source,
                object_id,
                projected_revision,
            } => write!(
                f,
                "object {source}/{object_id}: object_state holds revision {projected_revision} but the inbox has no revision of it; repair by hand: find where the row came from, then DELETE it from object_state"
            ),
            Drift::ArchiveMissing { source, event_id } => write!(
                f,
                "event {source}/{event_id}: in the inbox but not in the archive (webhook_events); repair by hand: the delivery's raw record is lost, check backups and whatever deleted it"
            ),
            Drift::ArchiveContradicts {
                archive_id,
                source,
                event_id,
                outcome,
                problem,
            } => write!(
                f,
                "archive row {archive_id} ({source}/{}, {outcome}): {problem}; repair by hand: archive rows are history, find out what changed the tables",
                event_id.as_deref().unwrap_or("no event id")
            ),
        }
    }
}

/// What one run found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub drifts: Vec<Drift>,
    /// How many drifts `--repair` fixed.
    pub repaired: usize,
}

impl Report {
    /// Drifts still there after the run.
    pub fn remaining(&self) -> usize {
        self.drifts.len() - self.repaired
    }

    /// One line for `verify_runs.summary` and the dashboard: how many drifts of each kind, e.g.
    /// `objects missing from object_state: 1; repaired: 0`.
    pub fn summary(&self) -> String {
        if self.drifts.is_empty() {
            return "no drift".into();
        }
        let mut kinds: Vec<(&'static str, usize)> = Vec::new();
        for drift in &self.drifts {
            match kinds.iter_mut().find(|(kind, _)| *kind == drift.kind()) {
                Some((_, n)) => *n += 1,
                None => kinds.push((drift.kind(), 1)),
            }
        }
        let found = kinds
            .iter()
            .map(|(kind, n)| format!("{kind}: {n}"))
            .collect::<Vec<_>>()
            .join("; ");
        format!("{found}; repaired: {}", self.repaired)
    }
}

/// Checks every invariant; with `repair`, re-derives each drifted projection row from the inbox.
/// Inbox rows past their source's retention (`retention`) may have lost their archive rows to the purge.
/// The run is recorded in `verify_runs`.
pub async fn verify(db: &Db, retention: impl Into<Cutoffs>, repair: bool) -> Result<Report, DbErr> {
    let retention = retention.into();
    let ran_at = Utc::now();
    let mut drifts = projection_drifts(db).await?;
    drifts.extend(archive_drifts(db, &retention).await?);
    let mut repaired = 0;
    if repair {
        for drift in &drifts {
            if let Drift::ProjectionDiffers {
                source, object_id, ..
            }
            | Drift::ProjectionMissing {
                source, object_id, ..
            } = drift
            {
                repair_projection(db, source, object_id).await?;
                repaired += 1;
            }
        }
    }
    let report = Report { drifts, repaired };
    record(db, ran_at, &report).await?;
    Ok(report)
}

/// Re-derives one object's projection from the inbox in one short READ COMMITTED transaction, as
/// ingest does: the greatest inbox revision and its snapshot, whatever the row held before (it
/// may move down when a corrupted row stood above the inbox).
///
/// Why it is safe beside ingest: on PostgreSQL the projection row is locked first, so the inbox
/// is read after every delivery that advanced the row has committed, and a delivery waiting on
/// the lock re-checks its revision against the repaired row. When there is no row to lock, the
/// insert only advances (like ingest's), so it never lowers a row a delivery created meanwhile.
/// On SQLite the single statement takes the write lock before it reads.
pub async fn repair_projection(db: &Db, source: &str, object_id: &str) -> Result<(), DbErr> {
    let txn = ingest::begin(db).await?;
    // Not a spelling (`db::dialect`) but a step: PostgreSQL locks the projection row first, in a
    // statement of its own; SQLite's transaction already holds the single write lock.
    let locked = match db.backend() {
        DatabaseBackend::Postgres => txn
            .query_one_raw(crate::db::statement(
                DatabaseBackend::Postgres,
                "SELECT revision FROM object_state WHERE source = $1 AND object_id = $2 FOR UPDATE",
                vec![source.into(), object_id.into()],
            ))
            .await?
            .is_some(),
        _ => true,
    };
    let rederive = format!(
        "INSERT INTO object_state AS cur (source, object_id, revision, snapshot, updated_at)
         SELECT source, object_id, revision, snapshot, $3 FROM webhook_inbox
          WHERE source = $1 AND object_id = $2 AND revision IS NOT NULL
          ORDER BY revision DESC LIMIT 1
         ON CONFLICT (source, object_id) DO UPDATE
            SET revision = excluded.revision, snapshot = excluded.snapshot, updated_at = excluded.updated_at
         {}",
        if locked {
            ""
        } else {
            "WHERE cur.revision < excluded.revision"
        }
    );
    txn.execute_raw(crate::db::statement(
        db.backend(),
        rederive,
        vec![source.into(), object_id.into(), Utc::now().into()],
    ))
    .await?;
    txn.commit().await
}

async fn record(db: &Db, ran_at: DateTime<Utc>, report: &Report) -> Result<(), DbErr> {
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    crate::db::verify_runs::record_run(
        db,
        ran_at,
        count(report.drifts.len()),
        count(report.repaired),
        &report.summary(),
    )
    .await
}

/// Each object's greatest inbox revision (and snapshot) beside its projection row.
const GREATEST_REVISIONS: &str = "FROM webhook_inbox i
    LEFT JOIN object_state s ON s.source = i.source AND s.object_id = i.object_id
    WHERE i.revision IS NOT NULL AND i.object_id IS NOT NULL
      AND i.revision = (SELECT max(m.revision) FROM webhook_inbox m
                         WHERE m.source = i.source AND m.object_id = i.object_id)";

async fn projection_drifts(db: &Db) -> Result<Vec<Drift>, DbErr> {
    let mut drifts = Vec::new();
    // Not a spelling (`db::dialect`) but two ways of comparing: `jsonb` equality in the
    // database on PostgreSQL, the canonical form in Rust on SQLite (which has no JSON type).
    match db.backend() {
        // One statement, one snapshot: a delivery commits its inbox row and its projection
        // change together, so a concurrent delivery is seen whole or not at all.
        DatabaseBackend::Postgres => {
            let rows = db
                .maintenance()
                .query_all_raw(crate::db::statement(
                    DatabaseBackend::Postgres,
                    format!(
                        "SELECT i.source, i.object_id, i.revision AS greatest, s.revision AS projected {GREATEST_REVISIONS}
                           AND (s.revision IS DISTINCT FROM i.revision OR s.snapshot IS DISTINCT FROM i.snapshot)
                         ORDER BY i.source, i.object_id"
                    ), vec![]))
                .await?;
            for row in rows {
                drifts.push(projection_drift(
                    row.try_get("", "source")?,
                    row.try_get("", "object_id")?,
                    row.try_get("", "greatest")?,
                    row.try_get("", "projected")?,
                ));
            }
        }
        // SQLite keeps the sent text; equality is the canonical form (`app::json`), which the
        // inbox stores and the projection's text yields here.
        backend => {
            let rows = db
                .maintenance()
                .query_all_raw(crate::db::statement(
                    backend,
                    format!(
                        "SELECT i.source, i.object_id, i.revision AS greatest, s.revision AS projected,
                                i.snapshot_canonical, s.snapshot AS projected_snapshot
                         {GREATEST_REVISIONS} ORDER BY i.source, i.object_id"
                    ), vec![]))
                .await?;
            for row in rows {
                let greatest: i64 = row.try_get("", "greatest")?;
                let projected: Option<i64> = row.try_get("", "projected")?;
                let inbox_canonical: Option<String> = row.try_get("", "snapshot_canonical")?;
                let projected_snapshot: Option<String> = row.try_get("", "projected_snapshot")?;
                let projected_canonical = projected_snapshot
                    .as_deref()
                    .and_then(|text| json::parse(text).ok())
                    .map(|node| node.canonical());
                if projected != Some(greatest)
                    || projected_canonical.is_none()
                    || projected_canonical != inbox_canonical
                {
                    drifts.push(projection_drift(
                        row.try_get("", "source")?,
                        row.try_get("", "object_id")?,
                        greatest,
                        projected,
                    ));
                }
            }
        }
    }
    let orphans = db
        .maintenance()
        .query_all_raw(crate::db::statement(
            db.backend(),
            "SELECT s.source, s.object_id, s.revision FROM object_state s
             WHERE NOT EXISTS (SELECT 1 FROM webhook_inbox i
                                WHERE i.source = s.source AND i.object_id = s.object_id
                                  AND i.revision IS NOT NULL)
             ORDER BY s.source, s.object_id",
            vec![],
        ))
        .await?;
    for row in orphans {
        drifts.push(Drift::ProjectionWithoutInbox {
            source: row.try_get("", "source")?,
            object_id: row.try_get("", "object_id")?,
            projected_revision: row.try_get("", "revision")?,
        });
    }
    Ok(drifts)
}

fn projection_drift(
    source: String,
    object_id: String,
    greatest_revision: i64,
    projected_revision: Option<i64>,
) -> Drift {
    match projected_revision {
        Some(projected_revision) => Drift::ProjectionDiffers {
            source,
            object_id,
            projected_revision,
            greatest_revision,
        },
        None => Drift::ProjectionMissing {
            source,
            object_id,
            greatest_revision,
        },
    }
}

async fn archive_drifts(db: &Db, retention: &Cutoffs) -> Result<Vec<Drift>, DbErr> {
    let mut drifts = Vec::new();
    let mut c = Conditions::new();
    let past = retention.past(&mut c, "i.source", "i.received_at");
    let unarchived = db
        .maintenance()
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT i.source, i.event_id FROM webhook_inbox i
                 WHERE NOT {past}
                   AND NOT EXISTS (SELECT 1 FROM webhook_events e
                                    WHERE e.event_id = i.event_id AND e.source = i.source)
                 ORDER BY i.source, i.event_id"
            ),
            c.values,
        ))
        .await?;
    for row in unarchived {
        drifts.push(Drift::ArchiveMissing {
            source: row.try_get("", "source")?,
            event_id: row.try_get("", "event_id")?,
        });
    }
    let revision_differs = Dialect::of(db.backend()).is_distinct("e.revision", "i.revision");
    let contradicted = db
        .maintenance()
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT e.id, e.source, e.event_id, e.outcome, e.revision AS archived_revision,
                        i.event_id AS inbox_event, i.revision AS inbox_revision
                 FROM webhook_events e
                 LEFT JOIN webhook_inbox i ON i.source = e.source AND i.event_id = e.event_id
                 WHERE e.status = 'processed'
                   AND (i.event_id IS NULL
                        OR (e.outcome IN ('applied', 'stale') AND {revision_differs}))
                 ORDER BY e.id"
            ),
            vec![],
        ))
        .await?;
    for row in contradicted {
        let outcome: String = row.try_get("", "outcome")?;
        let archived_revision: Option<i64> = row.try_get("", "archived_revision")?;
        let inbox_event: Option<String> = row.try_get("", "inbox_event")?;
        let inbox_revision: Option<i64> = row.try_get("", "inbox_revision")?;
        let problem = match inbox_event {
            None => format!("claims {outcome} but the inbox has no row of this event"),
            Some(_) => format!(
                "claims {outcome} at revision {} but the inbox row holds revision {}",
                revision_text(archived_revision),
                revision_text(inbox_revision)
            ),
        };
        drifts.push(Drift::ArchiveContradicts {
            archive_id: row.try_get("", "id")?,
            source: row.try_get("", "source")?,
            event_id: row.try_get("", "event_id")?,
            outcome,
            problem,
        });
    }
    Ok(drifts)
}

fn revision_text(revision: Option<i64>) -> String {
    revision.map_or_else(|| "none".into(), |r| r.to_string())
}
