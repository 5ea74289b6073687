//! `object_state` and the inbox's revisions of one object: the object page.

use super::Db;
use crate::model::{ObjectHistory, Revision};
use crate::present::{diff, pretty};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DatabaseBackend, DbErr, FromQueryResult, Statement};

/// Revisions shown on an object's page.
pub const HISTORY_LIMIT: usize = 500;

/// The object's projection and its accepted revisions, greatest first.
pub async fn object_history(
    db: &Db,
    source: &str,
    object_id: &str,
) -> Result<ObjectHistory, DbErr> {
    let pg = db.backend() == DatabaseBackend::Postgres;
    let snapshot = if pg { "snapshot::text" } else { "snapshot" };
    let current = db
        .conn
        .query_one_raw(Statement::from_sql_and_values(
            db.backend(),
            format!("SELECT revision, {snapshot} AS snapshot, updated_at FROM object_state WHERE source = $1 AND object_id = $2"),
            vec![source.into(), object_id.into()],
        ))
        .await?;
    let (current_revision, current_snapshot, updated_at) = match current {
        Some(row) => (
            Some(row.try_get::<i64>("", "revision")?),
            Some(pretty(&row.try_get::<String>("", "snapshot")?)),
            Some(row.try_get::<DateTime<Utc>>("", "updated_at")?.to_rfc3339()),
        ),
        None => (None, None, None),
    };
    let rows = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            format!(
                "SELECT i.revision, i.event_id, i.received_at, i.{snapshot} AS snapshot,
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
    #[derive(FromQueryResult)]
    struct Row {
        revision: i64,
        event_id: String,
        received_at: DateTime<Utc>,
        snapshot: String,
        first_outcome: Option<String>,
    }
    let rows = rows
        .iter()
        .map(|r| Row::from_query_result(r, ""))
        .collect::<Result<Vec<_>, DbErr>>()?;

    // Stale: its first outcome said so; where the archive was purged, it arrived after a
    // greater revision had.
    let mut by_arrival: Vec<&Row> = rows.iter().collect();
    by_arrival.sort_by_key(|r| (r.received_at, r.revision));
    let mut arrived_after_greater = std::collections::HashSet::new();
    let mut greatest = i64::MIN;
    for row in by_arrival {
        if greatest > row.revision {
            arrived_after_greater.insert(row.revision);
        }
        greatest = greatest.max(row.revision);
    }
    let revisions = rows
        .iter()
        .enumerate()
        .map(|(i, row)| Revision {
            revision: row.revision,
            event_id: row.event_id.clone(),
            received_at: row.received_at.to_rfc3339(),
            current: Some(row.revision) == current_revision,
            stale: match row.first_outcome.as_deref() {
                Some(outcome) => outcome == "stale",
                None => arrived_after_greater.contains(&row.revision),
            },
            changes: rows
                .get(i + 1)
                .map(|previous| diff(&previous.snapshot, &row.snapshot))
                .unwrap_or_default(),
        })
        .collect();
    Ok(ObjectHistory {
        source: source.to_string(),
        object_id: object_id.to_string(),
        current_revision,
        current_snapshot,
        updated_at,
        revisions,
    })
}
