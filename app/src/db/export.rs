//! Export of the archive: the deliveries of an `/events` filter (newest first, at most
//! [`EXPORT_CAP`]) read in batches of [`EXPORT_BATCH`] by keyset, each batch written out before
//! the next is read, so an export holds one batch in memory whatever its size. Headers are never
//! exported (they carry signatures); bodies are exported as text, exactly as received when UTF-8.

use super::Db;
use super::filter::{QueryError, filter_conditions};
use crate::model::EventFilter;
use chrono::{DateTime, SecondsFormat, Utc};
use sea_orm::{ConnectionTrait, FromQueryResult, Statement};

/// The most rows one export holds (the newest of the filter).
pub const EXPORT_CAP: usize = 100_000;
/// Rows read per statement.
pub const EXPORT_BATCH: usize = 1000;

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
    pub status: String,
    pub outcome: String,
    pub error_message: Option<String>,
    pub body: Vec<u8>,
}

/// The position after a row, for the next batch.
pub type After = (DateTime<Utc>, i64);

/// Checks a filter before an export starts: a bad one is a 400 naming it.
pub fn check_filter(db: &Db, filter: &EventFilter) -> Result<(), QueryError> {
    filter_conditions(filter, db.backend()).map(|_| ())
}

/// The next batch of the filter's rows after `after` (newest first).
pub async fn batch(
    db: &Db,
    filter: &EventFilter,
    after: Option<After>,
    limit: usize,
) -> Result<Vec<ExportRow>, QueryError> {
    let mut c = filter_conditions(filter, db.backend())?;
    if let Some((at, id)) = after {
        c.push_pair("(received_at, id) < (?, ?)", at, id);
    }
    let sql = format!(
        "SELECT id, received_at, source, event_id, object_id, revision, event_type, status, outcome,
                error_message, body
         FROM webhook_events {} ORDER BY received_at DESC, id DESC LIMIT {limit}",
        c.clause()
    );
    let rows = db
        .conn
        .query_all_raw(Statement::from_sql_and_values(db.backend(), sql, c.values))
        .await?;
    Ok(rows
        .iter()
        .map(|r| ExportRow::from_query_result(r, ""))
        .collect::<Result<Vec<_>, _>>()?)
}

impl ExportRow {
    /// The row in `format`, one line.
    pub fn line(&self, format: Format) -> String {
        let body = String::from_utf8_lossy(&self.body);
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
                    csv_field(&self.status),
                    csv_field(&self.outcome),
                    text(self.error_message.as_deref()),
                    csv_field(&body),
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
    fn a_csv_field_is_quoted_and_never_a_formula() {
        assert_eq!(csv_field(r#"a "b", c"#), r#""a ""b"", c""#);
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("line\nbreak"), "\"line\nbreak\"");
    }
}
