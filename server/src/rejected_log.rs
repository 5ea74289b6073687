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
//! - Every row is bounded in bytes ([`ROW_BYTES`]), however large the request's head: the
//!   requested source name is cut to [`SOURCE_BYTES`], the cause to [`CAUSE_BYTES`], and the
//!   headers are a JSON object of at most [`HEADERS_BYTES`].
//!
//! A row holds the headers `app::headers` classifies as safe, values cut to
//! [`HEADER_VALUE_BYTES`]; any other header (a signature, a credential, anything unknown) as
//! `[redacted, N bytes]`, its name cut to [`HEADER_NAME_BYTES`]; at most [`HEADERS_KEPT`] of
//! them. Never the body: its size and SHA-256.

use app::db::Db;
use app::db::rejected::{self, MAX_BATCH, NewRejected};
use app::headers::cut;
use axum::http::HeaderMap;
use sea_orm::{DatabaseBackend, DatabaseConnection};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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
        let row = bounded(row);
        let sent = self
            .to_writer
            .as_ref()
            .is_some_and(|to_writer| to_writer.try_send(row).is_ok());
        if !sent {
            metrics::counter!("hookbox_rejected_log_dropped_total").increment(1);
        }
    }
}

/// The writer: runs until `stop` is cancelled, then writes what is buffered and returns.
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
    pub async fn run(mut self, stop: CancellationToken) {
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
                        () = stop.cancelled() => {
                            self.drain(&mut batch).await;
                            return;
                        }
                    }
                }
                _ = age_check.tick() => self.purge_old().await,
                () = stop.cancelled() => {
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
        DatabaseBackend::Postgres => &db.dashboard,
        _ => &db.writer,
    }
}

/// The most bytes of the requested source name kept.
pub const SOURCE_BYTES: usize = 200;
/// The most bytes of a cause kept.
pub const CAUSE_BYTES: usize = 512;
/// The most headers kept (by name, redacted or not); the rest are counted under `…`.
pub const HEADERS_KEPT: usize = 32;
/// The most bytes of a header's name, and of a safe header's value, kept.
pub const HEADER_NAME_BYTES: usize = 64;
pub const HEADER_VALUE_BYTES: usize = 256;
/// The most bytes of a row's headers, as the JSON text stored.
pub const HEADERS_BYTES: usize = 8 * 1024;
/// The most bytes of a row's source, cause and headers together (8,904). The other columns are
/// bounded by what they hold: a configured source's name, a reason, an address, a request id of
/// at most 64 bytes, a size and a digest.
pub const ROW_BYTES: usize = SOURCE_BYTES + CAUSE_BYTES + HEADERS_BYTES;

/// What the summary entry `…` takes at most (`"…":"N more headers (M bytes) not kept"`, with
/// numbers of 20 digits).
const SUMMARY_BYTES: usize = 96;

/// `row` within [`ROW_BYTES`], whoever built it.
fn bounded(mut row: NewRejected) -> NewRejected {
    if row.source.len() > SOURCE_BYTES {
        row.source = cut(&row.source, SOURCE_BYTES);
    }
    if row.cause.len() > CAUSE_BYTES {
        row.cause = cut(&row.cause, CAUSE_BYTES);
    }
    if row.headers.len() > HEADERS_BYTES {
        row.headers = serde_json::json!({"…": "the headers were over the log's bound"}).to_string();
    }
    row
}

/// The headers of a request refused for `source` (`None`: not configured) as the log keeps them:
/// a JSON object of at most [`HEADERS_BYTES`], safe headers first (values cut to
/// [`HEADER_VALUE_BYTES`]), every other one `[redacted, N bytes]`, names cut to
/// [`HEADER_NAME_BYTES`], at most [`HEADERS_KEPT`] names and a count of the rest under `…`.
pub fn logged_headers(headers: &HeaderMap, source: Option<&app::config::Source>) -> String {
    use app::headers::{HeaderClass, classify, headers_json, redacted};
    let classified: Vec<(&str, bool)> = headers
        .keys()
        .map(|name| {
            let safe = classify(name.as_str(), source) == HeaderClass::Safe;
            (name.as_str(), safe)
        })
        .collect();
    let safe_first = classified
        .iter()
        .filter(|(_, safe)| *safe)
        .chain(classified.iter().filter(|(_, safe)| !*safe));
    // Kept in the order of their names, as the archive keeps headers.
    let mut map = std::collections::BTreeMap::new();
    // `{}` and, for the summary, room kept from the start.
    let mut size = 2 + SUMMARY_BYTES;
    let (mut more, mut more_bytes) = (0usize, 0usize);
    for &(name, safe) in safe_first {
        let values = headers.get_all(name);
        let bytes: usize = values.iter().map(|v| v.len()).sum();
        let key = cut(name, HEADER_NAME_BYTES);
        let value = if safe {
            let joined = values
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()))
                .collect::<Vec<_>>()
                .join(", ");
            cut(&joined, HEADER_VALUE_BYTES)
        } else {
            redacted(bytes)
        };
        // Its bytes in the JSON text: both strings quoted and escaped, a colon and a comma.
        let entry = json_len(&key) + json_len(&value) + 2;
        if map.len() >= HEADERS_KEPT || map.contains_key(&key) || size + entry > HEADERS_BYTES {
            more += 1;
            more_bytes += name.len() + bytes;
            continue;
        }
        size += entry;
        map.insert(key, value);
    }
    if more > 0 {
        map.insert(
            "…".into(),
            format!("{more} more headers ({more_bytes} bytes) not kept"),
        );
    }
    headers_json(map.iter().map(|(n, v)| (n.as_str(), v.as_str())))
}

/// The length of `text` as a JSON string.
fn json_len(text: &str) -> usize {
    serde_json::to_string(text).map_or(text.len() * 6 + 2, |s| s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                http::HeaderName::from_bytes(name.as_bytes()).expect("name"),
                http::HeaderValue::from_str(value).expect("value"),
            );
        }
        headers
    }

    #[test]
    fn only_safe_headers_are_kept_and_the_rest_redacted_with_their_length_only() {
        let headers = header_map(&[
            ("authorization", "Bearer hunter2"),
            ("stripe-signature", "t=1,v1=abcdef"),
            ("x-hub-signature-256", "sha256=00"),
            ("x-shopify-hmac-sha256", "c2VjcmV0"),
            ("x-api-key", "k-123"),
            ("x-gitlab-token", "glt-1"),
            ("x-pwd", "pw"),
            ("verif-hash", "vh"),
            ("x-jwt", "e30.e30.x"),
            ("cookie", "s=1"),
            ("user-agent", "Stripe/1.0"),
            ("webhook-timestamp", "1700000000"),
        ]);
        let logged: serde_json::Value =
            serde_json::from_str(&logged_headers(&headers, None)).expect("json");
        assert_eq!(logged["authorization"], "[redacted, 14 bytes]");
        assert_eq!(logged["stripe-signature"], "[redacted, 13 bytes]");
        assert_eq!(logged["x-hub-signature-256"], "[redacted, 9 bytes]");
        assert_eq!(logged["x-shopify-hmac-sha256"], "[redacted, 8 bytes]");
        assert_eq!(logged["x-api-key"], "[redacted, 5 bytes]");
        assert_eq!(logged["x-gitlab-token"], "[redacted, 5 bytes]");
        assert_eq!(logged["x-pwd"], "[redacted, 2 bytes]");
        assert_eq!(logged["verif-hash"], "[redacted, 2 bytes]");
        assert_eq!(logged["x-jwt"], "[redacted, 9 bytes]");
        assert_eq!(logged["cookie"], "[redacted, 3 bytes]");
        assert_eq!(logged["user-agent"], "Stripe/1.0");
        assert_eq!(logged["webhook-timestamp"], "1700000000");
    }

    #[test]
    fn names_values_and_their_count_are_bounded_in_bytes() {
        let mut pairs: Vec<(String, String)> = (0..90)
            .map(|i| (format!("x-h{i}-{}", "n".repeat(3000)), "v".repeat(3000)))
            .collect();
        pairs.push(("user-agent".into(), "\"".repeat(5000)));
        pairs.push(("accept".into(), "é".repeat(5000)));
        let pairs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let text = logged_headers(&header_map(&pairs), None);
        assert!(text.len() <= HEADERS_BYTES, "{}", text.len());
        let logged: serde_json::Value = serde_json::from_str(&text).expect("json");
        let map = logged.as_object().expect("object");
        assert_eq!(map.len(), HEADERS_KEPT + 1);
        // The safe ones first, whatever came before them.
        assert_eq!(
            map["user-agent"].as_str().expect("text").len(),
            HEADER_VALUE_BYTES
        );
        assert!(map["accept"].as_str().expect("text").len() <= HEADER_VALUE_BYTES);
        assert!(map.keys().all(|k| k.len() <= HEADER_NAME_BYTES), "{map:?}");
        assert_eq!(map["…"], "60 more headers (360360 bytes) not kept");
    }

    #[test]
    fn a_row_is_bounded_whoever_built_it() {
        let row = bounded(NewRejected {
            received_at: chrono::Utc::now(),
            bucket: "(unknown)".into(),
            source: "s".repeat(10_000),
            reason: app::model::RefusalReason::UnknownSource,
            cause: "c".repeat(10_000),
            client_address: "192.0.2.1".into(),
            request_id: None,
            headers: format!("{{\"x\":\"{}\"}}", "v".repeat(10_000)),
            body_bytes: None,
            body_sha256: None,
        });
        assert!(row.source.len() <= SOURCE_BYTES);
        assert!(row.cause.len() <= CAUSE_BYTES);
        assert!(row.headers.len() <= HEADERS_BYTES);
        assert!(row.source.len() + row.cause.len() + row.headers.len() <= ROW_BYTES);
    }

    #[test]
    fn cut_replaces_control_characters_and_marks_the_cut() {
        assert_eq!(cut("a\0b\nc", 10), "a\u{fffd}b\u{fffd}c");
        assert_eq!(cut("abcdef", 5), "ab…");
        assert_eq!(cut("abc", 3), "abc");
    }
}
