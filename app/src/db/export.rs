//! Export of the archive: the deliveries of an `/events` filter (newest first, at most
//! [`EXPORT_CAP`]). The rows' places (id, time, body size) are read [`EXPORT_BATCH`] at a time by
//! keyset, then their bodies in batches of at most [`EXPORT_BATCH_BYTES`] (one row when a body
//! alone is larger), each batch written out before the next is read, so an export holds one
//! bounded batch in memory whatever its rows' size. Headers are never exported (they carry
//! signatures); bodies are exported as text, exactly as received when UTF-8.

use super::Db;
use super::dialect::Dialect;
use super::events::ARCHIVED_BODY;
use super::filter::{QueryError, filter_conditions};
use super::search_bounds::{SearchError, SearchPermit};
use crate::model::{EventFilter, OutcomeKind, Status};
use chrono::{DateTime, SecondsFormat, Utc};
use sea_orm::{ConnectionTrait, FromQueryResult};

/// The most rows one export holds (the newest of the filter).
pub const EXPORT_CAP: usize = 100_000;
/// Row places read per statement.
pub const EXPORT_BATCH: usize = 1000;
/// The most body bytes read per statement (a larger body is read alone).
pub const EXPORT_BATCH_BYTES: usize = 1024 * 1024;

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Ndjson,
    Csv,
}

impl Format {
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "ndjson" => Some(Format::Ndjson),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Ndjson => "ndjson",
            Format::Csv => "csv",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Ndjson => "application/x-ndjson; charset=utf-8",
            Format::Csv => "text/csv; charset=utf-8",
        }
    }

    /// What comes before the first row.
    pub fn header(self) -> &'static str {
        match self {
            Format::Ndjson => "",
            Format::Csv => {
                "id,received_at,source,event_id,object_id,revision,event_type,status,outcome,error_message,body\n"
            }
        }
    }
}

/// One exported archive row.
#[derive(Debug, Clone, FromQueryResult)]
pub struct ExportRow {
    pub id: i64,
    pub received_at: DateTime<Utc>,
    pub source: String,
    pub event_id: Option<String>,
    pub object_id: Option<String>,
    pub revision: Option<i64>,
    pub event_type: Option<String>,
    pub status: Status,
    pub outcome: OutcomeKind,
    pub error_message: Option<String>,
    /// None once it expired (`maintenance::expiry`).
    pub body: Option<Vec<u8>>,
    pub body_expired_at: Option<DateTime<Utc>>,
}

/// The position after a row, for the next batch.
pub type After = (DateTime<Utc>, i64);

/// Where a row of the export stands, and its body's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub received_at: DateTime<Utc>,
    pub id: i64,
    pub body_bytes: usize,
}

impl Place {
    pub fn after(&self) -> After {
        (self.received_at, self.id)
    }
}

/// Checks a filter before an export starts: a bad one is a 400 naming it.
pub fn check_filter(db: &Db, filter: &EventFilter) -> Result<(), QueryError> {
    filter_conditions(filter, db.backend()).map(|_| ())
}

/// Whether an export of `filter` searches bodies (a `match`): then it is a payload search, with
/// a search's bounds ([`super::search`]): one place among the searches a user and the process
/// run at once, held for the whole export ([`begin`]), and each statement under the search
/// deadline.
pub fn searches(filter: &EventFilter) -> bool {
    filter
        .r#match
        .as_deref()
        .is_some_and(|m| !m.trim().is_empty())
}

/// Starts an export of `filter` for `who`: a bad filter is refused, and an export that searches
/// bodies takes a search's place (`None` for one that does not), or is refused as busy.
pub fn begin(
    db: &Db,
    filter: &EventFilter,
    who: &str,
) -> Result<Option<SearchPermit>, SearchError> {
    check_filter(db, filter)?;
    if !searches(filter) {
        return Ok(None);
    }
    super::filter::check_lengths(filter)?;
    Ok(Some(super::search_bounds::begin_search(who)?))
}

/// The places of the filter's next `limit` rows after `after` (newest first): no body is read.
/// A search of bodies runs under `deadline` and is cancelled in the database past it.
pub async fn places(
    db: &Db,
    filter: &EventFilter,
    after: Option<After>,
    limit: usize,
    deadline: std::time::Duration,
) -> Result<Vec<Place>, SearchError> {
    let mut c = filter_conditions(filter, db.backend())?;
    if let Some((at, id)) = after {
        c.and_with2(at, id, |p, q| format!("(received_at, id) < ({p}, {q})"));
    }
    // Both read the size from the row's header (a TOAST pointer, a record's type code),
    // not from the body; a row that refers to an earlier row's identical body (`body_of`)
    // counts that body's size, which its export carries.
    let dialect = Dialect::of(db.backend());
    let size = format!(
        "COALESCE((SELECT {} FROM webhook_events original WHERE original.id = webhook_events.body_of), {}, 0)",
        dialect.byte_length("original.body"),
        dialect.byte_length("webhook_events.body")
    );
    let sql = format!(
        "SELECT id, received_at, {size} AS body_bytes
         FROM webhook_events {} ORDER BY received_at DESC, id DESC LIMIT {limit}",
        c.clause()
    );
    let statement = crate::db::statement(db.backend(), sql, c.values);
    let rows = if searches(filter) {
        super::search_bounds::query_within(db, statement, deadline).await?
    } else {
        db.dashboard.query_all_raw(statement).await?
    };
    rows.iter()
        .map(|r| {
            Ok::<_, SearchError>(Place {
                id: r.try_get("", "id")?,
                received_at: r.try_get("", "received_at")?,
                body_bytes: usize::try_from(r.try_get::<i64>("", "body_bytes")?).unwrap_or(0),
            })
        })
        .collect()
}

/// How many of `places` (from the front) the next batch takes: as many as fit in
/// [`EXPORT_BATCH_BYTES`] of bodies, at least one.
pub fn batch_len(places: impl IntoIterator<Item = Place>) -> usize {
    let mut bytes = 0usize;
    let mut n = 0;
    for place in places {
        bytes = bytes.saturating_add(place.body_bytes);
        if n > 0 && bytes > EXPORT_BATCH_BYTES {
            break;
        }
        n += 1;
    }
    n
}

/// The rows of `ids` with their bodies, newest first (a row deleted since its place was read is
/// left out).
pub async fn rows(db: &Db, ids: &[i64]) -> Result<Vec<ExportRow>, QueryError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders: Vec<String> = (1..=ids.len()).map(|n| format!("${n}")).collect();
    let sql = format!(
        "SELECT id, received_at, source, event_id, object_id, revision, event_type, status, outcome,
                error_message, {ARCHIVED_BODY}, body_expired_at
         FROM webhook_events WHERE id IN ({}) ORDER BY received_at DESC, id DESC",
        placeholders.join(", ")
    );
    let values = ids.iter().map(|&id| id.into()).collect::<Vec<_>>();
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(db.backend(), sql, values))
        .await?;
    Ok(rows
        .iter()
        .map(|r| ExportRow::from_query_result(r, ""))
        .collect::<Result<Vec<_>, _>>()?)
}

impl ExportRow {
    /// The row in `format`, one line.
    pub fn line(&self, format: Format) -> String {
        let body = match (&self.body, self.body_expired_at) {
            (Some(body), None) => Some(String::from_utf8_lossy(body)),
            _ => None,
        };
        let received_at = self
            .received_at
            .to_rfc3339_opts(SecondsFormat::Micros, true);
        match format {
            Format::Ndjson => {
                let mut line = serde_json::json!({
                    "id": self.id,
                    "received_at": received_at,
                    "source": self.source,
                    "event_id": self.event_id,
                    "object_id": self.object_id,
                    "revision": self.revision,
                    "event_type": self.event_type,
                    "status": self.status,
                    "outcome": self.outcome,
                    "error_message": self.error_message,
                    "body": body,
                })
                .to_string();
                line.push('\n');
                line
            }
            Format::Csv => {
                let text = |v: Option<&str>| csv_field(v.unwrap_or(""));
                let mut line = [
                    self.id.to_string(),
                    csv_field(&received_at),
                    csv_field(&self.source),
                    text(self.event_id.as_deref()),
                    text(self.object_id.as_deref()),
                    self.revision.map(|r| r.to_string()).unwrap_or_default(),
                    text(self.event_type.as_deref()),
                    csv_field(self.status.as_str()),
                    csv_field(self.outcome.as_str()),
                    text(self.error_message.as_deref()),
                    csv_field(body.as_deref().unwrap_or("")),
                ]
                .join(",");
                line.push('\n');
                line
            }
        }
    }
}

/// A CSV field, quoted (RFC 4180), and defused for spreadsheets: a field starting with `=`,
/// `+`, `-`, `@`, a tab or a carriage return gets a leading `'`, so that opening the export
/// never runs a formula a sender wrote into a delivery.
fn csv_field(text: &str) -> String {
    let defused = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    format!("\"{}\"", defused.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_takes_what_fits_in_its_bytes_and_at_least_one_row() {
        let place = |body_bytes| Place {
            received_at: DateTime::<Utc>::MIN_UTC,
            id: 1,
            body_bytes,
        };
        let quarter = EXPORT_BATCH_BYTES / 4;
        assert_eq!(batch_len([place(quarter); 10]), 4);
        assert_eq!(batch_len([place(10 * EXPORT_BATCH_BYTES), place(1)]), 1);
        assert_eq!(batch_len([place(10); 1000]), 1000);
        assert_eq!(batch_len([]), 0);
    }

    #[test]
    fn a_csv_field_is_quoted_and_never_a_formula() {
        assert_eq!(csv_field(r#"a "b", c"#), r#""a ""b"", c""#);
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("line\nbreak"), "\"line\nbreak\"");
    }
}
