//! `object_state` and the inbox's revisions of one object, and the accepted deliveries of an
//! object without revisions (a dedup source's): the object page.

use super::Db;
use super::dialect::Dialect;
use super::events::{EVENT_COLUMNS, event_row};
use crate::model::{FoundObject, ObjectDeliveries, ObjectHistory, Revision};
use crate::present::{DIFF_MAX_BYTES, Diff, cut, diff, pretty};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};

/// Revisions shown on an object's page.
pub const HISTORY_LIMIT: usize = 500;
/// The most field changes one object page names, all revisions together.
pub const PAGE_MAX_CHANGES: usize = 2000;
/// The longest one object page spends comparing revisions; the rest are shown uncompared.
pub const PAGE_DIFF_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// Accepted deliveries shown on the page of an object without revisions, newest first.
pub const DELIVERIES_LIMIT: usize = 100;

/// Whether any archived delivery is about the object.
pub async fn has_deliveries(db: &Db, source: &str, object_id: &str) -> Result<bool, DbErr> {
    Ok(db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT 1 AS found FROM webhook_events WHERE object_id = $2 AND source = $1 LIMIT 1",
            vec![source.into(), object_id.into()],
        ))
        .await?
        .is_some())
}

/// The newest archived deliveries of an object whose forward deliveries its page shows.
pub const FORWARDED_DELIVERIES: usize = 50;

/// Where the object's newest [`FORWARDED_DELIVERIES`] archived deliveries were forwarded, and
/// with what result (the forward deliveries they produced, as the event page shows them:
/// [`super::destinations::produced_by`]), greatest revision first; and whether the object has
/// older deliveries not looked at.
pub async fn forwarded(
    db: &Db,
    source: &str,
    object_id: &str,
) -> Result<(Vec<crate::model::ForwardRow>, bool), DbErr> {
    let ids = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT id FROM webhook_events WHERE source = $1 AND object_id = $2 ORDER BY id DESC LIMIT {}",
                FORWARDED_DELIVERIES + 1
            ),
            vec![source.into(), object_id.into()],
        ))
        .await?
        .iter()
        .map(|r| r.try_get::<i64>("", "id"))
        .collect::<Result<Vec<_>, _>>()?;
    let older = ids.len() > FORWARDED_DELIVERIES;
    let ids = &ids[..ids.len().min(FORWARDED_DELIVERIES)];
    let mut rows = super::destinations::produced_by(db, ids).await?;
    rows.sort_by_key(|r| (std::cmp::Reverse(r.revision), std::cmp::Reverse(r.id)));
    Ok((rows, older))
}

/// Whether the inbox accepted an event of the object that carries no revision: what a dedup
/// source's events are (for a source no longer configured, whose mode is not known otherwise).
pub async fn has_unrevisioned(db: &Db, source: &str, object_id: &str) -> Result<bool, DbErr> {
    Ok(db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT 1 AS found FROM webhook_inbox WHERE source = $1 AND object_id = $2 AND revision IS NULL LIMIT 1",
            vec![source.into(), object_id.into()],
        ))
        .await?
        .is_some())
}

/// The newest `limit` accepted deliveries of an object (archive rows processed: applied, stale
/// or accepted), newest first, and how many of its events the inbox accepted (counted up to
/// [`FoundObject::ACCEPTED_COUNTED`]; the archive may have purged older deliveries).
pub async fn accepted_deliveries(
    db: &Db,
    source: &str,
    object_id: &str,
    limit: usize,
) -> Result<ObjectDeliveries, DbErr> {
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT {EVENT_COLUMNS} FROM webhook_events
                 WHERE object_id = $2 AND source = $1 AND status = 'processed'
                 ORDER BY received_at DESC, id DESC LIMIT {limit}"
            ),
            vec![source.into(), object_id.into()],
        ))
        .await?;
    let rows = rows.iter().map(event_row).collect::<Result<Vec<_>, _>>()?;
    let accepted = super::support_search::accepted_counts(db, &[(source, object_id)])
        .await?
        .first()
        .copied()
        .unwrap_or(0);
    Ok(ObjectDeliveries {
        dedup: true,
        rows,
        limit,
        accepted: accepted.min(FoundObject::ACCEPTED_COUNTED),
        accepted_more: accepted > FoundObject::ACCEPTED_COUNTED,
    })
}

/// The object's projection and its accepted revisions, greatest first; the current snapshot
/// laid out and [`cut`] for the page unless `whole_snapshot` (bounded then by what ingest
/// admits: a snapshot is part of a body).
pub async fn object_history(
    db: &Db,
    source: &str,
    object_id: &str,
    whole_snapshot: bool,
) -> Result<ObjectHistory, DbErr> {
    let dialect = Dialect::of(db.backend());
    let snapshot = dialect.json_text("snapshot");
    let current = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            format!("SELECT revision, {snapshot} AS snapshot, updated_at FROM object_state WHERE source = $1 AND object_id = $2"),
            vec![source.into(), object_id.into()],
        ))
        .await?;
    let (current_revision, current_snapshot, updated_at) = match current {
        Some(row) => (
            Some(row.try_get::<i64>("", "revision")?),
            Some(row.try_get::<String>("", "snapshot")?),
            Some(row.try_get::<DateTime<Utc>>("", "updated_at")?.to_rfc3339()),
        ),
        None => (None, None, None),
    };
    let snapshot_bytes = current_snapshot.as_ref().map_or(0, |s| s.len() as u64);
    // A snapshot too large to compare is not read at all.
    let text = dialect.json_text("i.snapshot");
    let compared = format!(
        "CASE WHEN {} <= {DIFF_MAX_BYTES} THEN {text} END",
        dialect.text_bytes(&text)
    );
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT i.revision, i.event_id, i.received_at, {compared} AS snapshot,
                    (SELECT e.outcome FROM webhook_events e
                      WHERE e.event_id = i.event_id AND e.source = i.source AND e.outcome IN ('applied', 'stale')
                      ORDER BY e.id LIMIT 1) AS first_outcome
                 FROM webhook_inbox i
                 WHERE i.source = $1 AND i.object_id = $2 AND i.revision IS NOT NULL
                 ORDER BY i.revision DESC LIMIT {HISTORY_LIMIT}"
            ),
            vec![source.into(), object_id.into()],
        ))
        .await?;
    let rows = rows
        .iter()
        .map(|r| HistoryRow::from_query_result(r, ""))
        .collect::<Result<Vec<_>, DbErr>>()?;
    let rows_meta: Vec<(i64, String, String)> = rows
        .iter()
        .map(|r| (r.revision, r.event_id.clone(), r.received_at.to_rfc3339()))
        .collect();
    let stale = stale_of(&rows);
    // The layout and the comparisons are CPU work on what a sender stored: on a blocking
    // thread in its turn (`crate::blocking`), never on the async workers deliveries run on.
    let ((current_snapshot, snapshot_cut), diffs) = crate::blocking::run(move || {
        let shown = match current_snapshot.as_deref().map(pretty) {
            Some(laid_out) => match cut(&laid_out) {
                (part, true) if !whole_snapshot => (Some(part.to_string()), true),
                _ => (Some(laid_out), false),
            },
            None => (None, false),
        };
        let snapshots: Vec<Option<&str>> = rows.iter().map(|r| r.snapshot.as_deref()).collect();
        (shown, compare_revisions(&snapshots))
    })
    .await
    .ok_or_else(|| DbErr::Custom("comparing revisions failed".into()))?;
    let revisions = revisions_of(rows_meta, stale, diffs, current_revision);
    Ok(ObjectHistory {
        source: source.to_string(),
        object_id: object_id.to_string(),
        current_revision,
        current_snapshot,
        snapshot_cut,
        snapshot_bytes,
        updated_at,
        revisions,
    })
}

/// An accepted revision as the history reads it.
#[derive(FromQueryResult)]
struct HistoryRow {
    revision: i64,
    event_id: String,
    received_at: DateTime<Utc>,
    /// `None`: larger than `DIFF_MAX_BYTES`.
    snapshot: Option<String>,
    first_outcome: Option<String>,
}

/// Whether each revision was stale: its first outcome said so; where the archive was purged,
/// it arrived after a greater revision had.
fn stale_of(rows: &[HistoryRow]) -> Vec<bool> {
    let mut by_arrival: Vec<&HistoryRow> = rows.iter().collect();
    by_arrival.sort_by_key(|r| (r.received_at, r.revision));
    let mut arrived_after_greater = std::collections::HashSet::new();
    let mut greatest = i64::MIN;
    for row in by_arrival {
        if greatest > row.revision {
            arrived_after_greater.insert(row.revision);
        }
        greatest = greatest.max(row.revision);
    }
    rows.iter()
        .map(|row| match row.first_outcome.as_deref() {
            Some(outcome) => outcome == "stale",
            None => arrived_after_greater.contains(&row.revision),
        })
        .collect()
}

/// The accepted revisions as the page shows them, greatest first.
fn revisions_of(
    rows: Vec<(i64, String, String)>,
    stale: Vec<bool>,
    diffs: Vec<Diff>,
    current_revision: Option<i64>,
) -> Vec<Revision> {
    rows.into_iter()
        .zip(stale)
        .zip(diffs)
        .map(|(((revision, event_id, received_at), stale), d)| Revision {
            revision,
            event_id,
            received_at,
            current: Some(revision) == current_revision,
            stale,
            changes: d.changes,
            changes_note: d.note,
        })
        .collect()
}

/// The changes of each revision from the next one in `snapshots` (greatest first; `None` is a
/// snapshot too large to compare), within [`PAGE_MAX_CHANGES`] and [`PAGE_DIFF_TIME`] for the
/// whole page: past either, a revision's changes are left out and say so.
fn compare_revisions(snapshots: &[Option<&str>]) -> Vec<Diff> {
    let started = std::time::Instant::now();
    let mut named = 0;
    (0..snapshots.len())
        .map(|i| {
            let Some(previous) = snapshots.get(i + 1) else {
                return Diff::default();
            };
            let (Some(before), Some(after)) = (previous, snapshots[i]) else {
                return Diff {
                    note: Some(format!(
                        "not compared: a snapshot is larger than {} kB",
                        DIFF_MAX_BYTES / 1024
                    )),
                    ..Diff::default()
                };
            };
            let spent = if named >= PAGE_MAX_CHANGES {
                Some(format!("the page already names {PAGE_MAX_CHANGES} changes"))
            } else if started.elapsed() > PAGE_DIFF_TIME {
                Some(format!(
                    "the page's {} s for comparisons ran out",
                    PAGE_DIFF_TIME.as_secs()
                ))
            } else {
                None
            };
            if let Some(why) = spent {
                return Diff {
                    note: Some(format!("not compared: {why}")),
                    ..Diff::default()
                };
            }
            let mut d = diff(before, after);
            let room = PAGE_MAX_CHANGES - named;
            if d.changes.len() > room {
                d.left_out += d.changes.len() - room;
                d.changes.truncate(room);
                d.note = Some(format!("{} more changes not shown", d.left_out));
            }
            named += d.changes.len();
            d
        })
        .collect()
}

/// An object's projection as programs read it: the current revision, the snapshot as JSON text,
/// when it was updated and the event that carried that revision (`GET /api/v1/…/objects/{id}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentObject {
    pub revision: i64,
    pub snapshot: String,
    pub updated_at: DateTime<Utc>,
    pub event_id: Option<String>,
}

/// The projection's row of `object_id` of `source`, if it has one.
pub async fn current_object(
    db: &Db,
    source: &str,
    object_id: &str,
) -> Result<Option<CurrentObject>, DbErr> {
    let snapshot = Dialect::of(db.backend()).json_text("o.snapshot");
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT o.revision, {snapshot} AS snapshot, o.updated_at,
                        (SELECT i.event_id FROM webhook_inbox i
                          WHERE i.source = o.source AND i.object_id = o.object_id
                            AND i.revision = o.revision LIMIT 1) AS event_id
                   FROM object_state o WHERE o.source = $1 AND o.object_id = $2"
            ),
            vec![source.into(), object_id.into()],
        ))
        .await?;
    row.map(|row| {
        Ok(CurrentObject {
            revision: row.try_get("", "revision")?,
            snapshot: row.try_get("", "snapshot")?,
            updated_at: row.try_get("", "updated_at")?,
            event_id: row.try_get("", "event_id")?,
        })
    })
    .transpose()
}

/// One accepted revision of an object, as programs page through them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedRevision {
    pub revision: i64,
    pub event_id: String,
    pub received_at: DateTime<Utc>,
}

/// A page of `object_id`'s accepted revisions, greatest first, below `before` when given:
/// at most `limit`, and whether more follow.
pub async fn revisions_page(
    db: &Db,
    source: &str,
    object_id: &str,
    before: Option<i64>,
    limit: usize,
) -> Result<(Vec<AcceptedRevision>, bool), DbErr> {
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT revision, event_id, received_at FROM webhook_inbox
                  WHERE source = $1 AND object_id = $2 AND revision IS NOT NULL AND revision < $3
                  ORDER BY revision DESC LIMIT {}",
                limit + 1
            ),
            vec![
                source.into(),
                object_id.into(),
                before.unwrap_or(i64::MAX).into(),
            ],
        ))
        .await?;
    let mut page = rows
        .iter()
        .map(|row| {
            Ok(AcceptedRevision {
                revision: row.try_get("", "revision")?,
                event_id: row.try_get("", "event_id")?,
                received_at: row.try_get("", "received_at")?,
            })
        })
        .collect::<Result<Vec<_>, DbErr>>()?;
    let more = page.len() > limit;
    page.truncate(limit);
    Ok((page, more))
}
