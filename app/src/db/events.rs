//! `webhook_events`, the archive: pages of it by filter and cursor, one stored delivery with its
//! headers and body, every delivery of one event, the failed ones of a filter. Every list is
//! bounded and walks an index (see the migrations).

use super::Db;
use super::dialect::Dialect;
use super::filter::{Conditions, QueryError, add_filter_conditions, filter_conditions};
use crate::model::{EventFilter, EventPage, EventRow, OutcomeKind, Status};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult, QueryResult, Statement};

pub const PAGE_SIZE: usize = 50;

/// The columns of an archive row in a list, decoded by name into [`EventRecord`].
pub(crate) const EVENT_COLUMNS: &str = "id, source, event_id, object_id, revision, event_type, status, outcome, error_message, received_at, replay_of, replayed_by, resolved_by";

/// An archive row as the database returns it.
#[derive(Debug, FromQueryResult)]
pub(crate) struct EventRecord {
    id: i64,
    source: String,
    event_id: Option<String>,
    object_id: Option<String>,
    revision: Option<i64>,
    event_type: Option<String>,
    status: Status,
    outcome: OutcomeKind,
    error_message: Option<String>,
    received_at: DateTime<Utc>,
    replay_of: Option<i64>,
    replayed_by: Option<String>,
    resolved_by: Option<i64>,
}

impl From<EventRecord> for EventRow {
    fn from(r: EventRecord) -> EventRow {
        EventRow {
            id: r.id,
            source: r.source,
            event_id: r.event_id,
            object_id: r.object_id,
            revision: r.revision,
            event_type: r.event_type,
            status: r.status,
            outcome: r.outcome,
            error_message: r.error_message,
            received_at: r.received_at.to_rfc3339(),
            replay_of: r.replay_of,
            replayed_by: r.replayed_by,
            resolved_by: r.resolved_by,
        }
    }
}

/// One list row of `webhook_events`, by column name.
pub(crate) fn event_row(row: &QueryResult) -> Result<EventRow, DbErr> {
    EventRecord::from_query_result(row, "").map(EventRow::from)
}

fn cursor_of(row: &EventRow) -> String {
    format!("{}~{}", row.received_at, row.id)
}

fn parse_cursor(cursor: &str) -> Result<(DateTime<Utc>, i64), QueryError> {
    let bad = || QueryError::BadFilter("cursor: not a cursor from a previous page".into());
    if cursor.len() > super::filter::MAX_FILTER_BYTES {
        return Err(bad());
    }
    let (at, id) = cursor.rsplit_once('~').ok_or_else(bad)?;
    let at = DateTime::parse_from_rfc3339(at)
        .map_err(|_| bad())?
        .with_timezone(&Utc);
    Ok((at, id.parse().map_err(|_| bad())?))
}

/// One page of the archive, newest first, keyset-paginated on (received_at, id).
///
/// A search (`q`, an event id or an object id) is two branches, one per column, each walking its
/// own index in page order (`ix_webhook_events_event`, `ix_webhook_events_object_received`) and
/// stopping after a page: with `event_id = q OR object_id = q`, PostgreSQL collects every delivery
/// of the object before sorting them, 10,000 heap rows for a busy object.
pub async fn list_events(
    db: &Db,
    filter: &EventFilter,
    cursor: Option<&str>,
) -> Result<EventPage, QueryError> {
    list_page(db, filter, cursor, PAGE_SIZE).await
}

/// [`list_events`] with pages of `size` rows.
async fn list_page(
    db: &Db,
    filter: &EventFilter,
    cursor: Option<&str>,
    size: usize,
) -> Result<EventPage, QueryError> {
    let statement = page_statement(db, filter, cursor, size)?;
    let rows = db.dashboard.query_all_raw(statement).await?;
    page_of(&rows, size)
}

/// The most rows a page of the API holds (`limit`).
pub const MAX_PAGE_SIZE: usize = 500;

/// A page of the archive for `who` (a user, a token), `size` rows (at most [`MAX_PAGE_SIZE`]):
/// a plain list, or with a `match` a payload search, bounded in time (`request_timeout`) and in
/// number (one per caller, a few per process). What `/events` and `GET /api/v1/events` both
/// call.
pub async fn find_events(
    db: &Db,
    filter: &EventFilter,
    cursor: Option<&str>,
    size: usize,
    who: &str,
    request_timeout: std::time::Duration,
) -> Result<EventPage, super::search_bounds::SearchError> {
    let size = size.clamp(1, MAX_PAGE_SIZE);
    let searching = filter
        .r#match
        .as_deref()
        .is_some_and(|m| !m.trim().is_empty());
    if !searching {
        return Ok(list_page(db, filter, cursor, size).await?);
    }
    super::filter::check_lengths(filter)?;
    let deadline = super::search_bounds::search_deadline(request_timeout);
    let _permit = super::search_bounds::begin_search(who)?;
    let statement = page_statement(db, filter, cursor, size)?;
    let rows = super::search_bounds::query_within(db, statement, deadline).await?;
    Ok(page_of(&rows, size)?)
}

/// The statement of one page of [`list_events`].
fn page_statement(
    db: &Db,
    filter: &EventFilter,
    cursor: Option<&str>,
    size: usize,
) -> Result<Statement, QueryError> {
    // `q` leaves the filter below (each branch names it): its bound is checked here.
    super::filter::check_lengths(filter)?;
    let cursor = cursor
        .filter(|c| !c.is_empty())
        .map(parse_cursor)
        .transpose()?;
    let q = filter
        .q
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_string);
    let unsearched = EventFilter {
        q: None,
        ..filter.clone()
    };
    let mut c = Conditions::new();
    // The conditions of one branch: the filter, the cursor, and `extra`.
    let mut branch = |extra: Option<(&str, String)>| -> Result<String, QueryError> {
        let start = c.sql.len();
        add_filter_conditions(&mut c, &unsearched, db.backend())?;
        if let Some((at, id)) = cursor {
            c.and_with2(at, id, |p, q| format!("(received_at, id) < ({p}, {q})"));
        }
        if let Some((column, value)) = extra {
            c.and_with(value, |p| format!("{column} = {p}"));
        }
        let parts = c.sql.split_off(start);
        Ok(if parts.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", parts.join(" AND "))
        })
    };
    let order = "ORDER BY received_at DESC, id DESC";
    let limit = size + 1;
    let sql = match q {
        None => format!(
            "SELECT {EVENT_COLUMNS} FROM webhook_events {} {order} LIMIT {limit}",
            branch(None)?
        ),
        Some(q) => {
            let by_event = branch(Some(("event_id", q.clone())))?;
            let by_object = branch(Some(("object_id", q)))?;
            format!(
                "SELECT {EVENT_COLUMNS} FROM (
                   SELECT * FROM (SELECT {EVENT_COLUMNS} FROM webhook_events {by_event} {order} LIMIT {limit}) AS by_event
                   UNION
                   SELECT * FROM (SELECT {EVENT_COLUMNS} FROM webhook_events {by_object} {order} LIMIT {limit}) AS by_object
                 ) AS found {order} LIMIT {limit}"
            )
        }
    };
    Ok(crate::db::statement(db.backend(), sql, c.values))
}

/// A page from its rows (one more than a page: the next cursor).
fn page_of(rows: &[QueryResult], size: usize) -> Result<EventPage, QueryError> {
    let mut rows = rows.iter().map(event_row).collect::<Result<Vec<_>, _>>()?;
    let next_cursor = if rows.len() > size {
        rows.truncate(size);
        rows.last().map(cursor_of)
    } else {
        None
    };
    Ok(EventPage { rows, next_cursor })
}

/// Ids of the failed deliveries matching a filter, at most `limit` + 1 (to tell "too many").
pub async fn failed_ids(
    db: &Db,
    filter: &EventFilter,
    limit: usize,
) -> Result<Vec<i64>, QueryError> {
    let c = filter_conditions(
        &EventFilter {
            status: Some(Status::Failed.as_str().into()),
            ..filter.clone()
        },
        db.backend(),
    )?;
    let sql = format!(
        "SELECT id FROM webhook_events {} ORDER BY received_at, id LIMIT {}",
        c.clause(),
        limit + 1
    );
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(db.backend(), sql, c.values))
        .await?;
    Ok(rows
        .iter()
        .map(|r| r.try_get::<i64>("", "id"))
        .collect::<Result<_, _>>()?)
}

/// An archive row's body as received, in a `SELECT … FROM webhook_events`: its own, or through
/// `body_of` the identical body of the earlier row it refers to (empty when that row was purged).
pub(crate) const ARCHIVED_BODY: &str = "COALESCE((SELECT original.body FROM webhook_events original WHERE original.id = webhook_events.body_of), webhook_events.body) AS body";

/// The fields a form body was read as when it arrived (the original's, for a row that refers to
/// its body).
pub(crate) const ARCHIVED_FIELDS: &str = "COALESCE((SELECT original.body_fields FROM webhook_events original WHERE original.id = webhook_events.body_of), webhook_events.body_fields) AS body_fields";

/// Whether the row's body is at hand: its own, or its original's not purged since.
pub(crate) const BODY_KEPT: &str = "(webhook_events.body_of IS NULL OR EXISTS (SELECT 1 FROM webhook_events original WHERE original.id = webhook_events.body_of)) AS body_kept";

/// What is left of a body past its source's body retention (`maintenance::expiry`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExpiredBody {
    pub at: DateTime<Utc>,
    /// The SHA-256 of the body as received, hex.
    pub sha256: String,
    pub bytes: i64,
}

/// One archive row with its headers and raw body.
pub struct StoredDelivery {
    pub row: EventRow,
    /// `{}` once the body expired.
    pub headers_json: String,
    /// Empty once the body expired.
    pub body: Vec<u8>,
    /// When the body and headers expired, and the body's digest and size.
    pub expired: Option<ExpiredBody>,
    /// The JSON object a form body was read as when it arrived (`envelope::FormRead`).
    pub body_fields: Option<String>,
    /// The earlier archive row of the same event whose identical body this row refers to instead
    /// of keeping a copy (a re-posted duplicate).
    pub body_of: Option<i64>,
    /// False when that earlier row was purged since: the body is gone.
    pub body_kept: bool,
}

pub async fn stored_delivery(db: &Db, id: i64) -> Result<Option<StoredDelivery>, DbErr> {
    stored_delivery_on(&db.dashboard, id).await
}

/// [`stored_delivery`] on a given connection or transaction.
pub async fn stored_delivery_on<C: ConnectionTrait>(
    conn: &C,
    id: i64,
) -> Result<Option<StoredDelivery>, DbErr> {
    let backend = conn.get_database_backend();
    let headers = format!("{} AS headers", Dialect::of(backend).json_text("headers"));
    let sql = format!(
        "SELECT {EVENT_COLUMNS}, {headers}, {ARCHIVED_BODY}, {ARCHIVED_FIELDS}, body_of, {BODY_KEPT},
                body_expired_at, body_sha256, body_bytes
         FROM webhook_events WHERE id = $1"
    );
    let row = conn
        .query_one_raw(crate::db::statement(backend, sql, vec![id.into()]))
        .await?;
    row.map(|row| {
        let expired = match row.try_get::<Option<DateTime<Utc>>>("", "body_expired_at")? {
            Some(at) => Some(ExpiredBody {
                at,
                sha256: row
                    .try_get::<Option<String>>("", "body_sha256")?
                    .unwrap_or_default(),
                bytes: row.try_get::<Option<i64>>("", "body_bytes")?.unwrap_or(0),
            }),
            None => None,
        };
        Ok(StoredDelivery {
            row: event_row(&row)?,
            headers_json: row
                .try_get::<Option<String>>("", "headers")?
                .unwrap_or_else(|| "{}".into()),
            body: row
                .try_get::<Option<Vec<u8>>>("", "body")?
                .unwrap_or_default(),
            expired,
            body_fields: row.try_get("", "body_fields")?,
            body_of: row.try_get("", "body_of")?,
            body_kept: row.try_get("", "body_kept")?,
        })
    })
    .transpose()
}

/// The event the inbox holds an object's revision under (what a `reused_revision` delivery met),
/// and the archive id of its first delivery when the archive still has one.
pub async fn revision_holder(
    db: &Db,
    source: &str,
    object_id: &str,
    revision: i64,
) -> Result<Option<(String, Option<i64>)>, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT i.event_id AS event_id,
                    (SELECT min(e.id) FROM webhook_events e WHERE e.source = i.source AND e.event_id = i.event_id) AS archive_id
             FROM webhook_inbox i WHERE i.source = $1 AND i.object_id = $2 AND i.revision = $3 LIMIT 1",
            vec![source.into(), object_id.into(), revision.into()],
        ))
        .await?;
    row.map(|r| Ok((r.try_get("", "event_id")?, r.try_get("", "archive_id")?)))
        .transpose()
}

/// Every delivery of one event (retries, replays), oldest first.
pub async fn deliveries_of(db: &Db, source: &str, event_id: &str) -> Result<Vec<EventRow>, DbErr> {
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM webhook_events WHERE event_id = $1 AND source = $2 ORDER BY id LIMIT 200"
    );
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            sql,
            vec![event_id.into(), source.into()],
        ))
        .await?;
    rows.iter().map(event_row).collect()
}
