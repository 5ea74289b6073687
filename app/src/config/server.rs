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
    "body_retention_days",
    "header_read_timeout_secs",
    "body_read_timeout_secs",
    "request_timeout_secs",
    "audit_retention_days",
    "rejected_rows_per_source",
    "rejected_retention_days",
    "public_url",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    pub max_body_bytes: usize,
    pub retention_days: u32,
    /// How long archive rows keep their bodies and headers, when not as long as the rows
    /// (`body_retention_days`, optional; a source may set its own).
    pub body_retention_days: Option<u32>,
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
    /// The origin senders post to (`https://hooks.example.com`, no trailing `/`): a recipe that
    /// signs the URL signs `{public_url}/hooks/{source}`, which hookbox cannot see behind a proxy.
    pub public_url: Option<String>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            retention_days: DEFAULT_RETENTION_DAYS,
            body_retention_days: None,
            header_read_timeout_secs: DEFAULT_HEADER_READ_TIMEOUT_SECS,
            body_read_timeout_secs: DEFAULT_BODY_READ_TIMEOUT_SECS,
            request_timeout_secs: DEFAULT_REQUEST_TIMEOUT_SECS,
            audit_retention_days: DEFAULT_AUDIT_RETENTION_DAYS,
            rejected_rows_per_source: DEFAULT_REJECTED_ROWS_PER_SOURCE,
            rejected_retention_days: DEFAULT_REJECTED_RETENTION_DAYS,
            public_url: None,
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
        body_retention_days: keys.number("body_retention_days", 1),
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
        public_url: keys
            .string("public_url")
            .and_then(|text| match public_url(&text) {
                Ok(url) => Some(url),
                Err(why) => {
                    keys.problem("public_url", why);
                    None
                }
            }),
    }
}

/// An origin as `public_url` takes it: http or https, a host, no path, query or fragment; the
/// trailing `/` dropped.
fn public_url(text: &str) -> Result<String, String> {
    let parsed = url::Url::parse(text).map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!("{text:?} is not an http or https URL with a host"));
    }
    if parsed.path() != "/" || parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!(
            "{text:?} has a path, query or fragment: give the origin only, e.g. https://hooks.example.com"
        ));
    }
    Ok(text.trim_end_matches('/').to_string())
}
