//! `[server]`: the limits and retention periods of the whole process, each with its default.

use super::keys::Keys;

pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
pub const DEFAULT_RETENTION_DAYS: u32 = 90;
/// How long a client may take to send a request's headers (and how long an idle keep-alive
/// connection stays open).
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_BODY_READ_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_AUDIT_RETENTION_DAYS: u32 = 365;
pub const DEFAULT_REJECTED_ROWS_PER_SOURCE: u32 = 10_000;
pub const DEFAULT_REJECTED_RETENTION_DAYS: u32 = 7;

const SERVER_KEYS: &[&str] = &[
    "max_body_bytes",
    "retention_days",
    "header_read_timeout_secs",
    "body_read_timeout_secs",
    "request_timeout_secs",
    "audit_retention_days",
    "rejected_rows_per_source",
    "rejected_retention_days",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    pub max_body_bytes: usize,
    pub retention_days: u32,
    pub header_read_timeout_secs: u64,
    /// How long a webhook body may take to arrive, in all (not per chunk): then 408.
    pub body_read_timeout_secs: u64,
    /// The deadline of every request, head to answer: then 408.
    pub request_timeout_secs: u64,
    /// How long audit rows (sign-ins, replays) are kept.
    pub audit_retention_days: u32,
    /// The refused-requests log keeps at most this many rows per source (and as many for all
    /// unknown source names together), the newest.
    pub rejected_rows_per_source: u32,
    /// ... and none older than this.
    pub rejected_retention_days: u32,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            retention_days: DEFAULT_RETENTION_DAYS,
            header_read_timeout_secs: DEFAULT_HEADER_READ_TIMEOUT_SECS,
            body_read_timeout_secs: DEFAULT_BODY_READ_TIMEOUT_SECS,
            request_timeout_secs: DEFAULT_REQUEST_TIMEOUT_SECS,
            audit_retention_days: DEFAULT_AUDIT_RETENTION_DAYS,
            rejected_rows_per_source: DEFAULT_REJECTED_ROWS_PER_SOURCE,
            rejected_retention_days: DEFAULT_REJECTED_RETENTION_DAYS,
        }
    }
}

pub(super) fn read_server(mut keys: Keys<'_>) -> ServerSettings {
    keys.refuse_unknown(SERVER_KEYS);
    ServerSettings {
        max_body_bytes: keys
            .number("max_body_bytes", 1)
            .unwrap_or(DEFAULT_MAX_BODY_BYTES),
        retention_days: keys
            .number("retention_days", 1)
            .unwrap_or(DEFAULT_RETENTION_DAYS),
        header_read_timeout_secs: keys
            .number("header_read_timeout_secs", 1)
            .unwrap_or(DEFAULT_HEADER_READ_TIMEOUT_SECS),
        body_read_timeout_secs: keys
            .number("body_read_timeout_secs", 1)
            .unwrap_or(DEFAULT_BODY_READ_TIMEOUT_SECS),
        request_timeout_secs: keys
            .number("request_timeout_secs", 1)
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT_SECS),
        audit_retention_days: keys
            .number("audit_retention_days", 1)
            .unwrap_or(DEFAULT_AUDIT_RETENTION_DAYS),
        rejected_rows_per_source: keys
            .number("rejected_rows_per_source", 1)
            .unwrap_or(DEFAULT_REJECTED_ROWS_PER_SOURCE),
        rejected_retention_days: keys
            .number("rejected_retention_days", 1)
            .unwrap_or(DEFAULT_REJECTED_RETENTION_DAYS),
    }
}
