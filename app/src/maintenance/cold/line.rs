//! One archive row as one line of the cold archive: its columns as `GET /api/v1/events/{id}`
//! names them, its headers as stored (unredacted: the object is the row itself) and its body
//! whole (`body`: the JSON exactly as received, when it is JSON with no space around it; else
//! `body_base64`), and what restoring it needs besides.

use crate::db::dialect::Dialect;
use base64::Engine;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, QueryResult};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Line {
    pub id: i64,
    pub source: String,
    pub event_id: Option<String>,
    pub object_id: Option<String>,
    pub revision: Option<i64>,
    pub event_type: Option<String>,
    pub status: String,
    pub outcome: String,
    pub error: Option<String>,
    pub error_class: Option<String>,
    pub received_at: DateTime<Utc>,
    pub replay_of: Option<i64>,
    pub replayed_by: Option<String>,
    pub resolved_by: Option<i64>,
    pub feed_tx: i64,
    /// The headers as stored (null once they expired).
    pub headers: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Box<serde_json::value::RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// A form's fields as read when it arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_fields: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_expired_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_bytes: Option<i64>,
}

/// The columns a line is read from, in a `SELECT … FROM webhook_events`: the body whole (its
/// own, or the one it refers to).
pub(crate) fn columns(dialect: Dialect) -> String {
    format!(
        "id, source, event_id, object_id, revision, event_type, status, outcome, error_message,
         error_class, received_at, replay_of, replayed_by, resolved_by, feed_tx,
         {} AS headers, {}, {}, body_expired_at, body_sha256, body_bytes",
        dialect.json_text("headers"),
        crate::db::events::ARCHIVED_BODY,
        crate::db::events::ARCHIVED_FIELDS,
    )
}

impl Line {
    pub(crate) fn of(row: &QueryResult) -> Result<Line, DbErr> {
        let expired: Option<DateTime<Utc>> = row.try_get("", "body_expired_at")?;
        let raw: Option<Vec<u8>> = row.try_get("", "body")?;
        let (body, body_base64) = match (expired, raw) {
            (None, Some(raw)) => body_of(raw),
            _ => (None, None),
        };
        let headers: Option<String> = row.try_get("", "headers")?;
        Ok(Line {
            id: row.try_get("", "id")?,
            source: row.try_get("", "source")?,
            event_id: row.try_get("", "event_id")?,
            object_id: row.try_get("", "object_id")?,
            revision: row.try_get("", "revision")?,
            event_type: row.try_get("", "event_type")?,
            status: row.try_get("", "status")?,
            outcome: row.try_get("", "outcome")?,
            error: row.try_get("", "error_message")?,
            error_class: row.try_get("", "error_class")?,
            received_at: row.try_get("", "received_at")?,
            replay_of: row.try_get("", "replay_of")?,
            replayed_by: row.try_get("", "replayed_by")?,
            resolved_by: row.try_get("", "resolved_by")?,
            feed_tx: row.try_get("", "feed_tx")?,
            headers: match expired {
                Some(_) => None,
                None => headers.and_then(|h| serde_json::from_str(&h).ok()),
            },
            body,
            body_base64,
            body_fields: expired
                .is_none()
                .then(|| row.try_get::<Option<String>>("", "body_fields"))
                .transpose()?
                .flatten(),
            body_expired_at: expired,
            body_sha256: row.try_get("", "body_sha256")?,
            body_bytes: row.try_get("", "body_bytes")?,
        })
    }

    /// The body's bytes as received (empty once it expired).
    pub fn body_bytes_received(&self) -> Result<Vec<u8>, String> {
        match (&self.body, &self.body_base64) {
            (Some(json), _) => Ok(json.get().as_bytes().to_vec()),
            (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| format!("row {}: body_base64: {e}", self.id)),
            (None, None) => Ok(Vec::new()),
        }
    }

    /// Puts the row back in the archive with its own id, unless a row with that id is there:
    /// kept until `kept_until` whatever its source's retention; a `replay_of` whose row is gone
    /// is left null. Answers whether it was put back.
    pub(crate) async fn restore<C: ConnectionTrait>(
        &self,
        conn: &C,
        kept_until: DateTime<Utc>,
    ) -> Result<bool, DbErr> {
        let backend = conn.get_database_backend();
        let dialect = Dialect::of(backend);
        let body = self.body_bytes_received().map_err(DbErr::Custom)?;
        let (body_value, headers_value) = match self.body_expired_at {
            Some(_) => (None, None),
            None => (
                Some(body),
                Some(
                    self.headers
                        .clone()
                        .unwrap_or(serde_json::Value::Object(Default::default()))
                        .to_string(),
                ),
            ),
        };
        let (empty_body, empty_headers) = dialect.expired_values();
        let overriding = match dialect {
            Dialect::Postgres => "OVERRIDING SYSTEM VALUE",
            Dialect::Sqlite => "",
        };
        let sql = format!(
            "INSERT INTO webhook_events (id, source, event_id, object_id, revision, event_type,
                 status, outcome, error_message, error_class, received_at, replay_of, replayed_by,
                 resolved_by, feed_tx, headers, body, body_fields, body_expired_at, body_sha256,
                 body_bytes, kept_until)
             {overriding}
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
                 (SELECT r.id FROM webhook_events r WHERE r.id = $12), $13, $14, $15,
                 COALESCE({headers}, {empty_headers}), COALESCE($17, {empty_body}), $18, $19,
                 $20, $21, $22
             WHERE NOT EXISTS (SELECT 1 FROM webhook_events e WHERE e.id = $1)",
            headers = dialect.json("$16"),
        );
        let inserted = conn
            .execute_raw(crate::db::statement(
                backend,
                sql,
                vec![
                    self.id.into(),
                    self.source.clone().into(),
                    self.event_id.clone().into(),
                    self.object_id.clone().into(),
                    self.revision.into(),
                    self.event_type.clone().into(),
                    self.status.clone().into(),
                    self.outcome.clone().into(),
                    self.error.clone().into(),
                    self.error_class.clone().into(),
                    self.received_at.into(),
                    self.replay_of.into(),
                    self.replayed_by.clone().into(),
                    self.resolved_by.into(),
                    self.feed_tx.into(),
                    headers_value.into(),
                    body_value.into(),
                    self.body_fields.clone().into(),
                    self.body_expired_at.into(),
                    self.body_sha256.clone().into(),
                    self.body_bytes.into(),
                    kept_until.into(),
                ],
            ))
            .await?;
        Ok(inserted.rows_affected() > 0)
    }
}

/// A body as a line carries it: JSON text as it is when it has no space around it (so its bytes
/// come back exactly), else base64.
fn body_of(raw: Vec<u8>) -> (Option<Box<serde_json::value::RawValue>>, Option<String>) {
    let json = String::from_utf8(raw.clone())
        .ok()
        .filter(|text| text.trim() == text && crate::json::parse(text).is_ok())
        .and_then(|text| serde_json::value::RawValue::from_string(text).ok());
    match json {
        Some(json) => (Some(json), None),
        None => (
            None,
            Some(base64::engine::general_purpose::STANDARD.encode(&raw)),
        ),
    }
}
