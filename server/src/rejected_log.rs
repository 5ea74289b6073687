//! The refused-requests log: every request `/hooks/{source}` refuses before ingest becomes a row
//! of `rejected_requests`, written so that a flood of junk can neither slow ingest nor fill the
//! disk.
//!
//! - The endpoint hands each row to a bounded in-memory buffer ([`BUFFER`] rows) and never
//!   waits: when the buffer is full the row is dropped and counted in
//!   `hookbox_rejected_log_dropped_total`.
//! - One writer task per process takes what is buffered, at most [`MAX_BATCH`] rows, in one
//!   `INSERT`, and at most one batch every [`BATCH_INTERVAL`]: the log's share of the database
//!   stays bounded however fast junk arrives (beyond about 2,500 rows a second rows are dropped).
//!   On PostgreSQL it writes on the dashboard's pool, never taking a connection ingest waits for;
//!   on SQLite on the single writer connection, one short transaction per batch.
//! - After each batch the sources it touched are cut to their newest `rows_per_source` rows, and
//!   every [`AGE_CHECK`] rows older than `keep_days` are deleted (the daily purge does too).
//!
//! A row holds the headers with credentials and signatures redacted, the body's size and
//! SHA-256, never the body.

use app::db::Db;
use app::db::rejected::{self, MAX_BATCH, NewRejected};
use axum::http::HeaderMap;
use sea_orm::{DatabaseBackend, DatabaseConnection};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};

/// Rows waiting for the writer, at most.
pub const BUFFER: usize = 1024;

/// The writer's pause between batches.
pub const BATCH_INTERVAL: Duration = Duration::from_millis(200);

/// How often the writer deletes rows past their age.
pub const AGE_CHECK: Duration = Duration::from_secs(10 * 60);

/// What is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `server.rejected_rows_per_source` (10,000): the newest rows of each configured source,
    /// and as many for all unknown source names together.
    pub rows_per_source: u32,
    /// `server.rejected_retention_days` (7).
    pub keep_days: u32,
}

impl Limits {
    pub fn of(settings: &app::config::ServerSettings) -> Limits {
        Limits {
            rows_per_source: settings.rejected_rows_per_source,
            keep_days: settings.rejected_retention_days,
        }
    }
}

/// The endpoint's side: hands rows to the writer without waiting.
#[derive(Clone, Default)]
pub struct RejectedLog {
    to_writer: Option<mpsc::Sender<NewRejected>>,
}

impl RejectedLog {
    /// Buffers `row` for the writer; drops and counts it when the buffer is full (or no writer
    /// runs).
    pub fn record(&self, row: NewRejected) {
        let sent = self
            .to_writer
            .as_ref()
            .is_some_and(|to_writer| to_writer.try_send(row).is_ok());
        if !sent {
            metrics::counter!("hookbox_rejected_log_dropped_total").increment(1);
        }
    }
}

/// The writer: runs until `stop` is notified, then writes what is buffered and returns.
pub struct Writer {
    from_endpoint: mpsc::Receiver<NewRejected>,
    db: Db,
    limits: Limits,
}

/// A log and its writer (spawn [`Writer::run`]).
pub fn start(db: Db, limits: Limits) -> (RejectedLog, Writer) {
    let (to_writer, from_endpoint) = mpsc::channel(BUFFER);
    (
        RejectedLog {
            to_writer: Some(to_writer),
        },
        Writer {
            from_endpoint,
            db,
            limits,
        },
    )
}

impl Writer {
    pub async fn run(mut self, stop: Arc<Notify>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        let mut age_check = tokio::time::interval(AGE_CHECK);
        age_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                taken = self.from_endpoint.recv_many(&mut batch, MAX_BATCH) => {
                    if taken == 0 {
                        return;
                    }
                    self.write(&mut batch).await;
                    // Rows arriving meanwhile wait in the buffer (or are dropped when it is
                    // full): the log never takes more than one batch per interval.
                    tokio::select! {
                        () = tokio::time::sleep(BATCH_INTERVAL) => {}
                        () = stop.notified() => {
                            self.drain(&mut batch).await;
                            return;
                        }
                    }
                }
                _ = age_check.tick() => self.purge_old().await,
                () = stop.notified() => {
                    self.drain(&mut batch).await;
                    return;
                }
            }
        }
    }

    /// At shutdown: what is buffered, in batches.
    async fn drain(&mut self, batch: &mut Vec<NewRejected>) {
        while let Ok(row) = self.from_endpoint.try_recv() {
            batch.push(row);
            if batch.len() == MAX_BATCH {
                self.write(batch).await;
            }
        }
        self.write(batch).await;
    }

    /// Inserts `batch` (emptying it), then cuts the sources it touched to their bound.
    async fn write(&self, batch: &mut Vec<NewRejected>) {
        if batch.is_empty() {
            return;
        }
        let conn = log_connection(&self.db);
        let buckets: BTreeSet<String> = batch.iter().map(|row| row.bucket.clone()).collect();
        let result = async {
            rejected::insert_batch(conn, batch).await?;
            for bucket in &buckets {
                rejected::trim_bucket(conn, bucket, self.limits.rows_per_source).await?;
            }
            Ok::<_, sea_orm::DbErr>(())
        }
        .await;
        match result {
            Ok(()) => {
                metrics::counter!("hookbox_rejected_log_rows_total").increment(batch.len() as u64)
            }
            Err(error) => {
                tracing::warn!(%error, rows = batch.len(), "refused requests not recorded");
                metrics::counter!("hookbox_rejected_log_write_failures_total").increment(1);
                metrics::counter!("hookbox_rejected_log_dropped_total")
                    .increment(batch.len() as u64);
            }
        }
        batch.clear();
    }

    async fn purge_old(&self) {
        let cutoff =
            app::maintenance::purge::retention_cutoff(chrono::Utc::now(), self.limits.keep_days);
        if let Err(error) = rejected::purge_older_than(
            log_connection(&self.db),
            cutoff,
            app::maintenance::purge::DEFAULT_BATCH,
        )
        .await
        {
            tracing::warn!(%error, "old refused requests not purged; tried again later");
        }
    }
}

/// On PostgreSQL the dashboard's pool (ingest's connections stay ingest's); on SQLite the single
/// writer connection (a write through the read pool would poll for the lock).
fn log_connection(db: &Db) -> &DatabaseConnection {
    match db.backend() {
        DatabaseBackend::Postgres => &db.conn,
        _ => &db.writer,
    }
}

/// The most characters of the requested source name kept.
pub const SOURCE_CHARS: usize = 200;
/// The most headers kept, and characters of each value.
pub const HEADERS_KEPT: usize = 64;
pub const HEADER_VALUE_CHARS: usize = 512;

/// Header names whose values are credentials or signatures, or may be: never stored.
const SECRET_NAME_PARTS: &[&str] = &[
    "auth",
    "cookie",
    "signature",
    "hmac",
    "token",
    "secret",
    "key",
    "password",
    "session",
];

/// Whether a header's value is kept out of the log.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_NAME_PARTS.iter().any(|part| name.contains(part))
}

/// The headers as the log keeps them: a JSON object, credentials and signatures replaced by
/// their length, values cut to [`HEADER_VALUE_CHARS`], at most [`HEADERS_KEPT`] names.
pub fn logged_headers(headers: &HeaderMap) -> String {
    let mut map = serde_json::Map::new();
    for name in headers.keys().take(HEADERS_KEPT) {
        let values = headers.get_all(name);
        let value = if is_secret_header(name.as_str()) {
            let bytes: usize = values.iter().map(|v| v.len()).sum();
            format!("[redacted, {bytes} bytes]")
        } else {
            let joined = values
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect::<Vec<_>>()
                .join(", ");
            cut(&joined, HEADER_VALUE_CHARS)
        };
        map.insert(name.as_str().to_string(), serde_json::Value::String(value));
    }
    if headers.keys_len() > HEADERS_KEPT {
        map.insert(
            "…".into(),
            serde_json::Value::String(format!(
                "{} more headers not kept",
                headers.keys_len() - HEADERS_KEPT
            )),
        );
    }
    serde_json::Value::Object(map).to_string()
}

/// At most `chars` characters of `text`, control characters (NUL among them, which PostgreSQL's
/// text refuses) replaced, and an ellipsis where it was cut.
pub fn cut(text: &str, chars: usize) -> String {
    let mut out: String = text
        .chars()
        .take(chars)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    if text.chars().nth(chars).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_signatures_are_redacted_with_their_length_only() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer hunter2"),
            ("stripe-signature", "t=1,v1=abcdef"),
            ("x-hub-signature-256", "sha256=00"),
            ("x-shopify-hmac-sha256", "c2VjcmV0"),
            ("x-api-key", "k-123"),
            ("cookie", "s=1"),
            ("user-agent", "Stripe/1.0"),
            ("webhook-timestamp", "1700000000"),
        ] {
            headers.insert(
                http::HeaderName::from_static(name),
                http::HeaderValue::from_static(value),
            );
        }
        let logged: serde_json::Value =
            serde_json::from_str(&logged_headers(&headers)).expect("json");
        assert_eq!(logged["authorization"], "[redacted, 14 bytes]");
        assert_eq!(logged["stripe-signature"], "[redacted, 13 bytes]");
        assert_eq!(logged["x-hub-signature-256"], "[redacted, 9 bytes]");
        assert_eq!(logged["x-shopify-hmac-sha256"], "[redacted, 8 bytes]");
        assert_eq!(logged["x-api-key"], "[redacted, 5 bytes]");
        assert_eq!(logged["cookie"], "[redacted, 3 bytes]");
        assert_eq!(logged["user-agent"], "Stripe/1.0");
        assert_eq!(logged["webhook-timestamp"], "1700000000");
    }

    #[test]
    fn long_values_and_many_headers_are_bounded() {
        let mut headers = HeaderMap::new();
        for i in 0..100 {
            let name = http::HeaderName::from_bytes(format!("x-h{i}").as_bytes()).expect("name");
            headers.insert(
                name,
                http::HeaderValue::from_str(&"v".repeat(5000)).expect("v"),
            );
        }
        let logged: serde_json::Value =
            serde_json::from_str(&logged_headers(&headers)).expect("json");
        let map = logged.as_object().expect("object");
        assert_eq!(map.len(), HEADERS_KEPT + 1);
        assert_eq!(map["…"], "36 more headers not kept");
        assert_eq!(
            map["x-h0"].as_str().expect("text").chars().count(),
            HEADER_VALUE_CHARS + 1
        );
    }

    #[test]
    fn cut_replaces_control_characters_and_marks_the_cut() {
        assert_eq!(cut("a\0b\nc", 10), "a\u{fffd}b\u{fffd}c");
        assert_eq!(cut("abcdef", 3), "abc…");
        assert_eq!(cut("abc", 3), "abc");
    }
}
