//! Read queries behind the dashboard: the archive, one object's revisions, the overview counts and
//! the audit log. Every list is bounded and walks an index (see the migrations).

use crate::components::urlencode;
use crate::db::Db;
use crate::json::{self, Node, Value as JsonValue};
use crate::model::{
    AuditRow, CountRow, EventFilter, EventPage, EventRow, FieldChange, ObjectHistory, Overview,
    Revision,
};
use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use sea_orm::{
    ConnectionTrait, DatabaseBackend, DbErr, QueryResult, Statement, TransactionTrait, Value,
};

pub const PAGE_SIZE: usize = 50;
/// Revisions shown on an object's page.
pub const HISTORY_LIMIT: usize = 500;

const EVENT_COLUMNS: &str = "id, source, event_id, object_id, revision, event_type, status, outcome, error_message, received_at, replay_of, replayed_by";

/// A problem with a request's filters, shown to the user as it is.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    BadFilter(String),
    #[error("database: {0}")]
    Db(#[from] DbErr),
}

fn event_row(row: &QueryResult) -> Result<EventRow, DbErr> {
    Ok(EventRow {
        id: row.try_get_by_index(0)?,
        source: row.try_get_by_index(1)?,
        event_id: row.try_get_by_index(2)?,
        object_id: row.try_get_by_index(3)?,
        revision: row.try_get_by_index(4)?,
        event_type: row.try_get_by_index(5)?,
        status: row.try_get_by_index(6)?,
        outcome: row.try_get_by_index(7)?,
        error_message: row.try_get_by_index(8)?,
        received_at: row.try_get_by_index::<DateTime<Utc>>(9)?.to_rfc3339(),
        replay_of: row.try_get_by_index(10)?,
        replayed_by: row.try_get_by_index(11)?,
    })
}

/// `WHERE` conditions with numbered placeholders.
struct Conditions {
    sql: Vec<String>,
    values: Vec<Value>,
}

impl Conditions {
    fn new() -> Self {
        Conditions {
            sql: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Adds a condition; `?` in `template` becomes the next placeholder.
    fn push(&mut self, template: &str, value: impl Into<Value>) {
        self.values.push(value.into());
        let n = self.values.len();
        self.sql.push(template.replace('?', &format!("${n}")));
    }

    fn push_pair(&mut self, template: &str, a: impl Into<Value>, b: impl Into<Value>) {
        self.values.push(a.into());
        self.values.push(b.into());
        let n = self.values.len();
        self.sql
            .push(template.replacen('?', &format!("${}", n - 1), 1).replacen(
                '?',
                &format!("${n}"),
                1,
            ));
    }

    fn clause(&self) -> String {
        if self.sql.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", self.sql.join(" AND "))
        }
    }
}

/// The years a `from` / `to` filter may name: what both databases store and compare correctly
/// (SQLite compares times as text, so a fifth digit would sort wrong).
const FILTER_YEARS: std::ops::RangeInclusive<i32> = 1..=9999;

fn parse_time(field: &str, text: &str, end_of_day: bool) -> Result<DateTime<Utc>, QueryError> {
    let out_of_range = || {
        QueryError::BadFilter(format!(
            "{field}: {text:?} is out of range (years {} to {})",
            FILTER_YEARS.start(),
            FILTER_YEARS.end()
        ))
    };
    let time = if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        if !FILTER_YEARS.contains(&date.year()) {
            return Err(out_of_range());
        }
        let day = if end_of_day {
            date.succ_opt().ok_or_else(out_of_range)?
        } else {
            date
        };
        // The day after 9999-12-31 is past the range: its last instant bounds it instead.
        let bound = start_of(day);
        if bound.year() > *FILTER_YEARS.end() {
            bound - Duration::microseconds(1)
        } else {
            bound
        }
    } else {
        let time = DateTime::parse_from_rfc3339(text)
            .map_err(|_| {
                QueryError::BadFilter(format!(
                    "{field}: {text:?} is not a date (2026-11-29) or an RFC 3339 time"
                ))
            })?
            .with_timezone(&Utc);
        if !FILTER_YEARS.contains(&time.year()) {
            return Err(out_of_range());
        }
        time
    };
    Ok(time)
}

const STATUSES: &[&str] = &["processed", "skipped", "failed"];
const OUTCOMES: &[&str] = &[
    "applied",
    "stale",
    "accepted",
    "duplicate",
    "reused_event_id",
    "reused_revision",
    "invalid",
];

fn filter_conditions(filter: &EventFilter) -> Result<Conditions, QueryError> {
    let mut c = Conditions::new();
    add_filter_conditions(&mut c, filter)?;
    Ok(c)
}

fn add_filter_conditions(c: &mut Conditions, filter: &EventFilter) -> Result<(), QueryError> {
    let given = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(status) = given(&filter.status) {
        if !STATUSES.contains(&status.as_str()) {
            return Err(QueryError::BadFilter(format!(
                "status: {status:?} is not one of {}",
                STATUSES.join(", ")
            )));
        }
        c.push("status = ?", status);
    }
    if let Some(outcome) = given(&filter.outcome) {
        if !OUTCOMES.contains(&outcome.as_str()) {
            return Err(QueryError::BadFilter(format!(
                "outcome: {outcome:?} is not one of {}",
                OUTCOMES.join(", ")
            )));
        }
        c.push("outcome = ?", outcome);
    }
    if let Some(source) = given(&filter.source) {
        c.push("source = ?", source);
    }
    if let Some(from) = given(&filter.from) {
        c.push("received_at >= ?", parse_time("from", &from, false)?);
    }
    if let Some(to) = given(&filter.to) {
        c.push("received_at < ?", parse_time("to", &to, true)?);
    }
    if let Some(q) = given(&filter.q) {
        c.push_pair("(event_id = ? OR object_id = ?)", q.clone(), q);
    }
    Ok(())
}

fn cursor_of(row: &EventRow) -> String {
    format!("{}~{}", row.received_at, row.id)
}

fn parse_cursor(cursor: &str) -> Result<(DateTime<Utc>, i64), QueryError> {
    let bad = || QueryError::BadFilter("cursor: not a cursor from a previous page".into());
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
        add_filter_conditions(&mut c, &unsearched)?;
        if let Some((at, id)) = cursor {
            c.push_pair("(received_at, id) < (?, ?)", at, id);
        }
        if let Some((template, value)) = extra {
            c.push(template, value);
        }
        let parts = c.sql.split_off(start);
        Ok(if parts.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", parts.join(" AND "))
        })
    };
    let order = "ORDER BY received_at DESC, id DESC";
    let limit = PAGE_SIZE + 1;
    let sql = match q {
        None => format!(
            "SELECT {EVENT_COLUMNS} FROM webhook_events {} {order} LIMIT {limit}",
            branch(None)?
        ),
        Some(q) => {
            let by_event = branch(Some(("event_id = ?", q.clone())))?;
            let by_object = branch(Some(("object_id = ?", q)))?;
            format!(
                "SELECT {EVENT_COLUMNS} FROM (
                   SELECT * FROM (SELECT {EVENT_COLUMNS} FROM webhook_events {by_event} {order} LIMIT {limit}) AS by_event
                   UNION
                   SELECT * FROM (SELECT {EVENT_COLUMNS} FROM webhook_events {by_object} {order} LIMIT {limit}) AS by_object
                 ) AS found {order} LIMIT {limit}"
            )
        }
    };
    let rows = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(db.backend(), sql, c.values))
        .await?;
    let mut rows = rows.iter().map(event_row).collect::<Result<Vec<_>, _>>()?;
    let next_cursor = if rows.len() > PAGE_SIZE {
        rows.truncate(PAGE_SIZE);
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
    let c = filter_conditions(&EventFilter {
        status: Some("failed".into()),
        ..filter.clone()
    })?;
    let sql = format!(
        "SELECT id FROM webhook_events {} ORDER BY received_at, id LIMIT {}",
        c.clause(),
        limit + 1
    );
    let rows = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(db.backend(), sql, c.values))
        .await?;
    Ok(rows
        .iter()
        .map(|r| r.try_get_by_index::<i64>(0))
        .collect::<Result<_, _>>()?)
}

/// One archive row with its headers and raw body.
pub struct StoredDelivery {
    pub row: EventRow,
    pub headers_json: String,
    pub body: Vec<u8>,
}

pub async fn stored_delivery(db: &Db, id: i64) -> Result<Option<StoredDelivery>, DbErr> {
    stored_delivery_on(&db.conn, id).await
}

/// [`stored_delivery`] on a given connection or transaction.
pub async fn stored_delivery_on<C: ConnectionTrait>(
    conn: &C,
    id: i64,
) -> Result<Option<StoredDelivery>, DbErr> {
    let backend = conn.get_database_backend();
    let headers = if backend == DatabaseBackend::Postgres {
        "headers::text"
    } else {
        "headers"
    };
    let sql = format!("SELECT {EVENT_COLUMNS}, {headers}, body FROM webhook_events WHERE id = $1");
    let row = conn
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            sql,
            vec![id.into()],
        ))
        .await?;
    row.map(|row| {
        Ok(StoredDelivery {
            row: event_row(&row)?,
            headers_json: row.try_get_by_index(12)?,
            body: row.try_get_by_index(13)?,
        })
    })
    .transpose()
}

/// Every delivery of one event (retries, replays), oldest first.
pub async fn deliveries_of(db: &Db, source: &str, event_id: &str) -> Result<Vec<EventRow>, DbErr> {
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM webhook_events WHERE event_id = $1 AND source = $2 ORDER BY id LIMIT 200"
    );
    let rows = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            sql,
            vec![event_id.into(), source.into()],
        ))
        .await?;
    rows.iter().map(event_row).collect()
}

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
            format!("SELECT revision, {snapshot}, updated_at FROM object_state WHERE source = $1 AND object_id = $2"),
            vec![source.into(), object_id.into()],
        ))
        .await?;
    let (current_revision, current_snapshot, updated_at) = match current {
        Some(row) => (
            Some(row.try_get_by_index::<i64>(0)?),
            Some(pretty(&row.try_get_by_index::<String>(1)?)),
            Some(row.try_get_by_index::<DateTime<Utc>>(2)?.to_rfc3339()),
        ),
        None => (None, None, None),
    };
    let rows = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            format!(
                "SELECT i.revision, i.event_id, i.received_at, i.{snapshot},
                    (SELECT e.outcome FROM webhook_events e
                      WHERE e.event_id = i.event_id AND e.source = i.source AND e.outcome IN ('applied', 'stale')
                      ORDER BY e.id LIMIT 1)
                 FROM webhook_inbox i
                 WHERE i.source = $1 AND i.object_id = $2 AND i.revision IS NOT NULL
                 ORDER BY i.revision DESC LIMIT {HISTORY_LIMIT}"
            ),
            vec![source.into(), object_id.into()],
        ))
        .await?;
    struct Row {
        revision: i64,
        event_id: String,
        received_at: DateTime<Utc>,
        snapshot: String,
        first_outcome: Option<String>,
    }
    let rows = rows
        .iter()
        .map(|r| {
            Ok(Row {
                revision: r.try_get_by_index(0)?,
                event_id: r.try_get_by_index(1)?,
                received_at: r.try_get_by_index(2)?,
                snapshot: r.try_get_by_index(3)?,
                first_outcome: r.try_get_by_index(4)?,
            })
        })
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

/// JSON laid out for reading; anything else as it is.
pub fn pretty(text: &str) -> String {
    match json::parse(text) {
        Ok(node) => {
            let mut out = String::new();
            write_pretty(&node, text, 0, &mut out);
            out
        }
        Err(_) => text.to_string(),
    }
}

/// Pretty-printing from the exact reader, so numbers are shown exactly as stored.
fn write_pretty(node: &Node<'_>, source: &str, indent: usize, out: &mut String) {
    let pad = |n: usize| "  ".repeat(n);
    match &node.value {
        JsonValue::Object(members) if !members.is_empty() => {
            out.push_str("{\n");
            for (i, (key, value)) in members.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push_str(": ");
                write_pretty(value, source, indent + 1, out);
                out.push_str(if i + 1 < members.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
        JsonValue::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                write_pretty(item, source, indent + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        _ => out.push_str(node.raw(source).trim()),
    }
}

/// Leaves of a JSON document by pointer (arrays count as one leaf), with their canonical form.
fn leaves<'a>(
    node: &Node<'a>,
    source: &'a str,
    path: String,
    out: &mut Vec<(String, String, String)>,
) {
    match &node.value {
        JsonValue::Object(members) if !members.is_empty() => {
            for (key, value) in members {
                let key = key.replace('~', "~0").replace('/', "~1");
                leaves(value, source, format!("{path}/{key}"), out);
            }
        }
        _ => out.push((path, node.raw(source).trim().to_string(), node.canonical())),
    }
}

/// Field-level changes between two snapshots.
pub fn diff(before: &str, after: &str) -> Vec<FieldChange> {
    let (Ok(b), Ok(a)) = (json::parse(before), json::parse(after)) else {
        return Vec::new();
    };
    let (mut old, mut new) = (Vec::new(), Vec::new());
    leaves(&b, before, String::new(), &mut old);
    leaves(&a, after, String::new(), &mut new);
    let mut changes = Vec::new();
    for (path, raw, canonical) in &new {
        match old.iter().rev().find(|(p, _, _)| p == path) {
            Some((_, _, c)) if c == canonical => {}
            Some((_, old_raw, _)) => changes.push(FieldChange {
                path: path.clone(),
                before: Some(old_raw.clone()),
                after: Some(raw.clone()),
            }),
            None => changes.push(FieldChange {
                path: path.clone(),
                before: None,
                after: Some(raw.clone()),
            }),
        }
    }
    for (path, raw, _) in &old {
        if !new.iter().any(|(p, _, _)| p == path) && !changes.iter().any(|c| &c.path == path) {
            changes.push(FieldChange {
                path: path.clone(),
                before: Some(raw.clone()),
                after: None,
            });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

fn add_status(row: &mut CountRow, status: &str, n: i64) {
    match status {
        "processed" => row.processed += n,
        "skipped" => row.skipped += n,
        _ => row.failed += n,
    }
}

/// Adds `n` deliveries of `status` to the row labelled `label`.
fn add_count(rows: &mut Vec<CountRow>, label: &str, status: &str, n: i64) {
    match rows.iter_mut().find(|r| r.label == label) {
        Some(row) => add_status(row, status, n),
        None => {
            let mut row = CountRow {
                label: label.to_string(),
                processed: 0,
                skipped: 0,
                failed: 0,
            };
            add_status(&mut row, status, n);
            rows.push(row);
        }
    }
}

/// How long after a day ends its counts are rolled up: every transaction that began that day
/// has committed by then (deliveries take seconds; the grace period is 30 s).
const ROLLUP_DELAY: Duration = Duration::hours(1);

fn start_of(day: NaiveDate) -> DateTime<Utc> {
    day.and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc())
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Rolls up the finished days in `days` that are not yet in `archive_day_counts`, one
/// transaction per day (migration m20261130_000005). Concurrent callers write the same rows; the
/// primary keys keep one copy.
async fn roll_up_days(db: &Db, days: &[NaiveDate], now: DateTime<Utc>) -> Result<(), DbErr> {
    let (Some(first), Some(last)) = (days.first(), days.last()) else {
        return Ok(());
    };
    let counted: Vec<String> = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            "SELECT day FROM archive_days_counted WHERE day >= $1 AND day <= $2",
            vec![first.to_string().into(), last.to_string().into()],
        ))
        .await?
        .iter()
        .map(|row| row.try_get_by_index(0))
        .collect::<Result<_, _>>()?;
    for day in days.iter().filter(|d| !counted.contains(&d.to_string())) {
        let txn = db.conn.begin().await?;
        txn.execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO archive_day_counts (day, source, status, n)
             SELECT $1, source, status, count(*) FROM webhook_events
              WHERE received_at >= $2 AND received_at < $3
              GROUP BY source, status
             ON CONFLICT DO NOTHING",
            vec![
                day.to_string().into(),
                start_of(*day).into(),
                start_of(*day + Duration::days(1)).into(),
            ],
        ))
        .await?;
        txn.execute_raw(Statement::from_sql_and_values(
            db.backend(),
            "INSERT INTO archive_days_counted (day, counted_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            vec![day.to_string().into(), now.into()],
        ))
        .await?;
        txn.commit().await?;
    }
    Ok(())
}

/// The overview: counts over the last 24 hours, and per source and per day over the chart's
/// seven days (today and the six before, UTC).
///
/// Finished days come from the daily rollup (filled here on first need); only today, and
/// yesterday during the first hour after midnight, are counted live, together with the rolling
/// 24 hours, in one index-only range scan (migration m20261130_000004).
pub async fn overview(db: &Db, sources_configured: usize) -> Result<Overview, DbErr> {
    let now = Utc::now();
    let today = now.date_naive();
    let chart: Vec<NaiveDate> = (0..7).rev().map(|i| today - Duration::days(i)).collect();
    let live_from_day = if now >= start_of(today) + ROLLUP_DELAY {
        today
    } else {
        today - Duration::days(1)
    };
    let finished: Vec<NaiveDate> = chart
        .iter()
        .copied()
        .filter(|d| *d < live_from_day)
        .collect();
    roll_up_days(db, &finished, now).await?;

    let mut by_source_24h = Vec::new();
    let mut by_source_7d = Vec::new();
    let mut by_day: Vec<CountRow> = chart
        .iter()
        .map(|day| CountRow {
            label: day.to_string(),
            processed: 0,
            skipped: 0,
            failed: 0,
        })
        .collect();

    let rolled = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            "SELECT day, source, status, n FROM archive_day_counts WHERE day >= $1 AND day < $2",
            vec![
                chart[0].to_string().into(),
                live_from_day.to_string().into(),
            ],
        ))
        .await?;
    for row in &rolled {
        let day: String = row.try_get_by_index(0)?;
        let source: String = row.try_get_by_index(1)?;
        let status: String = row.try_get_by_index(2)?;
        let n: i64 = row.try_get_by_index(3)?;
        add_count(&mut by_source_7d, &source, &status, n);
        if let Some(bar) = by_day.iter_mut().find(|bar| bar.label == day) {
            add_status(bar, &status, n);
        }
    }

    // The live part: by source, status, chart day (an index into `chart` for the live days; -1
    // before them, rows that only count in the 24 hours) and whether in the last 24 hours. The
    // day is found by comparing with its bounds, not by formatting each row's time.
    let live_from = start_of(live_from_day);
    let mut values: Vec<Value> = vec![
        live_from.min(now - Duration::hours(24)).into(),
        (now - Duration::hours(24)).into(),
    ];
    let mut day = String::from("CASE");
    for (i, d) in chart.iter().enumerate().rev() {
        if *d < live_from_day {
            break;
        }
        values.push(start_of(*d).into());
        day.push_str(&format!(" WHEN received_at >= ${} THEN {i}", values.len()));
    }
    day.push_str(" ELSE -1 END");
    let live = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            format!(
                "SELECT source, status, {day}, CASE WHEN received_at >= $2 THEN 1 ELSE 0 END, count(*)
                 FROM webhook_events WHERE received_at >= $1 GROUP BY 1, 2, 3, 4"
            ),
            values,
        ))
        .await?;
    for row in &live {
        let source: String = row.try_get_by_index(0)?;
        let status: String = row.try_get_by_index(1)?;
        let day: i32 = row.try_get_by_index(2)?;
        let last_24h: i32 = row.try_get_by_index(3)?;
        let n: i64 = row.try_get_by_index(4)?;
        if last_24h == 1 {
            add_count(&mut by_source_24h, &source, &status, n);
        }
        if let Some(bar) = usize::try_from(day).ok().and_then(|d| by_day.get_mut(d)) {
            add_status(bar, &status, n);
            add_count(&mut by_source_7d, &source, &status, n);
        }
    }
    by_source_24h.sort_by(|a, b| a.label.cmp(&b.label));
    by_source_7d.sort_by(|a, b| a.label.cmp(&b.label));
    let has_events = db
        .conn
        .query_one_raw(Statement::from_string(
            db.backend(),
            "SELECT id FROM webhook_events LIMIT 1",
        ))
        .await?
        .is_some();
    let newest_failures = list_events(
        db,
        &EventFilter {
            status: Some("failed".into()),
            ..Default::default()
        },
        None,
    )
    .await
    .map_err(|e| match e {
        QueryError::Db(e) => e,
        QueryError::BadFilter(m) => DbErr::Custom(m),
    })?
    .rows
    .into_iter()
    .take(10)
    .collect();
    let last_verify = crate::maintenance::verify::last_run(db).await?;
    Ok(Overview {
        sources_configured,
        has_events,
        by_source_24h,
        by_source_7d,
        by_day,
        newest_failures,
        last_verify,
    })
}

/// Where a search box entry leads: an object's page when exactly one object has that id, else
/// the archive filtered by it.
pub async fn search_target(db: &Db, q: &str) -> Result<String, DbErr> {
    let q = q.trim();
    let rows = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(
            db.backend(),
            "SELECT source FROM object_state WHERE object_id = $1 LIMIT 2",
            vec![q.into()],
        ))
        .await?;
    if rows.len() == 1 {
        let source: String = rows[0].try_get_by_index(0)?;
        return Ok(format!("/objects/{}/{}", urlencode(&source), urlencode(q)));
    }
    Ok(format!("/events?q={}", urlencode(q)))
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
            Ok(AuditRow {
                id: r.try_get_by_index(0)?,
                at: r.try_get_by_index::<DateTime<Utc>>(1)?.to_rfc3339(),
                actor: r.try_get_by_index(2)?,
                action: r.try_get_by_index(3)?,
                target: r.try_get_by_index(4)?,
                outcome: r.try_get_by_index(5)?,
                detail: r.try_get_by_index(6)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_names_changed_added_and_removed_fields() {
        let changes = diff(
            r#"{"status":"new","total":1.0,"gone":true,"n":{"a":1}}"#,
            r#"{"status":"paid","total":1,"n":{"a":2},"extra":null}"#,
        );
        let paths: Vec<_> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.before.as_deref(), c.after.as_deref()))
            .collect();
        assert_eq!(
            paths,
            vec![
                ("/extra", None, Some("null")),
                ("/gone", Some("true"), None),
                ("/n/a", Some("1"), Some("2")),
                ("/status", Some("\"new\""), Some("\"paid\"")),
            ]
        );
    }

    #[test]
    fn out_of_range_filter_dates_are_refused_naming_the_field() {
        for (field, text, end_of_day) in [
            ("to", "+262142-12-31", true),
            ("from", "+262142-12-31", false),
            ("from", "-262143-01-01", false),
            ("to", "0000-12-31", true),
            ("to", "+10000-01-01", true),
            ("from", "9999-12-31T23:00:00-23:00", false),
        ] {
            match parse_time(field, text, end_of_day) {
                Err(QueryError::BadFilter(reason)) => assert!(
                    reason.starts_with(&format!("{field}: ")) && reason.contains("out of range"),
                    "{text}: {reason}"
                ),
                other => panic!("{text}: {other:?}"),
            }
        }
        let last = parse_time("to", "9999-12-31", true).expect("the last day");
        assert_eq!(last.to_rfc3339(), "9999-12-31T23:59:59.999999+00:00");
        let next_day = parse_time("to", "2026-11-29", true).expect("a day");
        assert_eq!(next_day.to_rfc3339(), "2026-11-30T00:00:00+00:00");
    }

    #[test]
    fn pretty_printing_keeps_numbers_exact() {
        assert_eq!(
            pretty(r#"{"n":12345678901234567890.10}"#),
            "{\n  \"n\": 12345678901234567890.10\n}"
        );
        assert_eq!(pretty("not json"), "not json");
    }
}
