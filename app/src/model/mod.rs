//! Data the dashboard's server functions send to the browser. Shared by both halves, so nothing
//! here may depend on the server-only domain.

mod answer;
mod charts;
mod feed;
mod find;
mod keeping;
mod notifications;
mod problems;
mod routes;
mod sources;
mod users;
pub use answer::*;
pub use charts::*;
pub use feed::*;
pub use find::*;
pub use keeping::*;
pub use notifications::*;
pub use problems::*;
pub use routes::*;
pub use sources::*;
pub use users::*;

use serde::{Deserialize, Serialize};

/// The cookie that remembers the viewer's time zone: `UTC`, or the IANA zone the browser reports
/// (`Europe/Berlin`); absent means UTC. Read by the server (`guard::viewer_zone`) and the browser.
pub const ZONE_COOKIE: &str = "hookbox_tz";

mod vocabulary;
use vocabulary::vocabulary;

vocabulary! {
    /// Where an API token stands: usable, past its expiry, or revoked.
    TokenState {
        Live = "live",
        Expired = "expired",
        Revoked = "revoked",
    }
}

vocabulary! {
    #[serde_variant_names]
    /// What a user or an API token may do: read (a viewer), or also act (an operator). Ordered:
    /// an operator may do all a viewer may.
    #[derive(PartialOrd, Ord)]
    Role {
        Viewer = "viewer",
        Operator = "operator",
    }
}

vocabulary! {
    /// An archive row's `status`.
    Status {
        Processed = "processed",
        Skipped = "skipped",
        Failed = "failed",
    }
}

vocabulary! {
    /// An archive row's `outcome`: what became of a delivery.
    OutcomeKind {
        Applied = "applied",
        Stale = "stale",
        Accepted = "accepted",
        Duplicate = "duplicate",
        ReusedEventId = "reused_event_id",
        ReusedRevision = "reused_revision",
        Invalid = "invalid",
    }
}

impl OutcomeKind {
    /// Whether the outcome is handed to the source's destinations (a new event: applied, or
    /// accepted by a dedup source).
    pub fn forwards(self) -> bool {
        matches!(self, OutcomeKind::Applied | OutcomeKind::Accepted)
    }

    /// The one mapping of an outcome to its status.
    pub fn status(self) -> Status {
        match self {
            OutcomeKind::Applied | OutcomeKind::Stale | OutcomeKind::Accepted => Status::Processed,
            OutcomeKind::Duplicate => Status::Skipped,
            OutcomeKind::ReusedEventId | OutcomeKind::ReusedRevision | OutcomeKind::Invalid => {
                Status::Failed
            }
        }
    }
}

vocabulary! {
    /// What an audit row records.
    AuditAction {
        SignIn = "sign_in",
        Replay = "replay",
        BulkReplay = "bulk_replay",
        PauseDestination = "pause_destination",
        ResumeDestination = "resume_destination",
        RetryForward = "retry_forward",
        BulkRetryForward = "bulk_retry_forward",
        Export = "export",
        /// An operator said of a cause (`/problems`): someone is on it, it is fixed, it is
        /// expected, or none of these any more.
        AcknowledgeProblem = "acknowledge_problem",
        ResolveProblem = "resolve_problem",
        IgnoreProblem = "ignore_problem",
        ReopenProblem = "reopen_problem",
        /// A delivered forward delivery sent again (one, or every one since a time).
        ResendForward = "resend_forward",
        /// An API token made or revoked (`hookbox token`, `/tokens`).
        AddToken = "add_token",
        RevokeToken = "revoke_token",
        /// A feed consumer created, its selection changed, deleted, or its cursor moved by a
        /// seek (`/api/v1/feed/consumers`); commits are not audited.
        CreateFeedConsumer = "create_feed_consumer",
        ChangeFeedConsumer = "change_feed_consumer",
        DeleteFeedConsumer = "delete_feed_consumer",
        SeekFeedConsumer = "seek_feed_consumer",
    }
}

/// The signed-in user, as the pages see them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Me {
    pub name: String,
    pub role: Role,
}

/// One archive row in a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    pub id: i64,
    pub source: String,
    pub event_id: Option<String>,
    pub object_id: Option<String>,
    pub revision: Option<i64>,
    pub event_type: Option<String>,
    pub status: Status,
    pub outcome: OutcomeKind,
    pub error_message: Option<String>,
    /// RFC 3339, UTC.
    pub received_at: String,
    pub replay_of: Option<i64>,
    pub replayed_by: Option<String>,
    /// A failure's replay that resolved it (applied, stale, accepted or a duplicate).
    #[serde(default)]
    pub resolved_by: Option<i64>,
}

/// A bulk replay handles at most this many deliveries at once.
pub const BULK_REPLAY_LIMIT: usize = 500;

/// The filters of `/events`, as they stand in the URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventFilter {
    pub status: Option<String>,
    pub outcome: Option<String>,
    pub source: Option<String>,
    /// A date (`2026-11-29`) or an RFC 3339 time, inclusive.
    pub from: Option<String>,
    /// A date (the whole day counts) or an RFC 3339 time, exclusive.
    pub to: Option<String>,
    /// The zone whose days `from` and `to` name when they are dates: an IANA name
    /// (`Europe/Berlin`) or `UTC`. UTC when absent; the pages send the viewer's zone.
    #[serde(default)]
    pub tz: Option<String>,
    /// An event id or an object id.
    pub q: Option<String>,
    /// A JSON object the delivery's body contains (PostgreSQL's `@>`): `{"customer":"cus_123"}`.
    #[serde(rename = "match")]
    pub r#match: Option<String>,
    /// `1`: open failures only (failed, not a replay, not resolved, its cause neither ignored
    /// nor resolved since; `db::problems`).
    #[serde(default)]
    pub open: Option<String>,
    /// A failure's error class (a cause on `/problems`).
    #[serde(default)]
    pub class: Option<String>,
    /// The event type, event id and object id, each exactly (the API's filters).
    #[serde(default, rename = "type")]
    pub event_type: Option<String>,
    #[serde(default)]
    pub event_id: Option<String>,
    #[serde(default)]
    pub object_id: Option<String>,
    /// The sources a caller may see (an API token's); `None`: every one. Never read from a
    /// request: set by the server for the caller.
    #[serde(skip)]
    pub visible_sources: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventPage {
    pub rows: Vec<EventRow>,
    /// Pass as `cursor` for the next (older) page.
    pub next_cursor: Option<String>,
}

/// A delivery's body as received and the shell command that sends it again: what the event
/// page's copy buttons fetch when used, so the page itself carries the body once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventSource {
    pub raw_body: String,
    pub curl: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventDetail {
    pub event: EventRow,
    /// Header name → value, credentials redacted (signatures too, for viewers).
    pub headers: Vec<(String, String)>,
    /// As a page shows it: laid out and decoded when the body is JSON, else the raw text (lossy
    /// for non-UTF-8 bytes); cut when `body_cut`.
    pub body: String,
    pub body_is_json: bool,
    /// The body is form-encoded: `body` shows its fields as JSON, `raw_body` the bytes.
    #[serde(default)]
    pub body_is_form: bool,
    /// `body` is its first part only (64 KiB or 2,000 lines); the page offers the rest.
    #[serde(default)]
    pub body_cut: bool,
    /// The body's size as received, in bytes.
    #[serde(default)]
    pub body_bytes: u64,
    /// The body exactly as received (lossy for non-UTF-8 bytes), for the copy button; `None`
    /// when asked for what the page shows only (the page fetches it when used: [`EventSource`]).
    #[serde(default)]
    pub raw_body: Option<String>,
    /// The earlier delivery whose identical body this one refers to instead of keeping a copy
    /// (a re-posted duplicate), and whether that body is still kept (not purged since).
    pub body_of: Option<i64>,
    pub body_kept: bool,
    /// Set once the body and headers expired (the source's `body_retention_days`).
    #[serde(default)]
    pub body_expired: Option<BodyExpired>,
    /// Every delivery of the same event (retries, replays), oldest first.
    pub related: Vec<EventRow>,
    /// Each destination of its source (`forward` and routes), whether it was sent this
    /// delivery, and why.
    #[serde(default)]
    pub destinations: Vec<DestinationVerdict>,
    /// Fields of the body to search by: (a JSON pointer, the `match` object finding its value).
    pub searchable: Vec<(String, String)>,
    /// A shell command that sends this delivery again to this hookbox, the body exact and the
    /// headers as shown (redacted ones left out); `None` like `raw_body`.
    #[serde(default)]
    pub curl: Option<String>,
    /// The forward deliveries this delivery produced.
    pub forwarded: Vec<ForwardRow>,
    /// Whether the object has a history page.
    pub has_object: bool,
    /// For a delivery refused because another event holds its object revision: that event's id
    /// and the archive id of its first delivery (when still archived), for a link.
    #[serde(default)]
    pub revision_holder: Option<(String, Option<i64>)>,
    pub can_replay: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revision {
    pub revision: i64,
    pub event_id: String,
    pub received_at: String,
    pub current: bool,
    /// It arrived when a greater revision was already current.
    pub stale: bool,
    /// Field-level changes from the previous (smaller) revision.
    pub changes: Vec<FieldChange>,
    /// What `changes` leaves out ("37 more changes not shown", "not compared: …").
    #[serde(default)]
    pub changes_note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    /// A JSON pointer.
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectHistory {
    pub source: String,
    pub object_id: String,
    pub current_revision: Option<i64>,
    /// As the page shows it: laid out, decoded; cut when `snapshot_cut`.
    pub current_snapshot: Option<String>,
    /// `current_snapshot` is its first part only (64 KiB or 2,000 lines); the page offers the rest.
    #[serde(default)]
    pub snapshot_cut: bool,
    /// The current snapshot's size as stored, in bytes.
    #[serde(default)]
    pub snapshot_bytes: u64,
    pub updated_at: Option<String>,
    /// Greatest revision first.
    pub revisions: Vec<Revision>,
}

/// What a replay would do (dry run) or did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayResult {
    pub outcome: OutcomeKind,
    pub status: Status,
    pub message: Option<String>,
    /// The new archive row, when it was not a dry run.
    pub archive_id: Option<i64>,
    /// The replay fails as the original did (same error class): the cause is not fixed, and
    /// the replay runs only when the operator types the override.
    #[serde(default)]
    pub same_failure: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkReplayResult {
    pub matched: usize,
    /// Outcome → how many.
    pub breakdown: Vec<(String, usize)>,
    pub replayed: bool,
    /// The text to type to confirm, e.g. `replay 12`.
    pub confirmation: String,
    /// The filter these deliveries were taken from, in words: `source crm, status failed`.
    pub scope: String,
    /// The matched failures left out, and why.
    #[serde(default)]
    pub skipped: Skipped,
}

/// An audit entry: an action someone took, or a count of sign-ins that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AuditRow {
    /// The entry's id; below 0, a count of sign-ins (action `sign_in`, outcome `failed`,
    /// `throttled` or `busy`), numbered within its page only.
    pub id: i64,
    /// RFC 3339, UTC; a count's minute.
    pub at: String,
    pub actor: String,
    pub action: AuditAction,
    pub target: Option<String>,
    pub outcome: String,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountRow {
    pub label: String,
    pub processed: i64,
    pub skipped: i64,
    pub failed: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    pub sources_configured: usize,
    /// Whether anything was ever delivered (the empty state says how to send something).
    pub has_events: bool,
    /// Per source over the chart's 24 hours and 7 days (`volume`), replays not counted.
    pub by_source_24h: Vec<CountRow>,
    pub by_source_7d: Vec<CountRow>,
    /// Sender deliveries by hour and by day in the viewer's zone.
    pub volume: Volume,
    /// The ten newest open failures (`db::open_failures`): resolved ones are left out.
    pub newest_failures: Vec<EventRow>,
    /// The newest `hookbox verify` run, if there was one.
    pub last_verify: Option<VerifyRun>,
    /// Destinations with a backlog or dead deliveries.
    pub destinations_in_trouble: Vec<DestinationSummary>,
    /// Requests refused before ingest in the last 24 hours, by source and reason.
    pub refused_24h: Vec<RejectedCount>,
    /// Open problems and open failures (`/problems`).
    #[serde(default)]
    pub problems: OpenProblems,
    /// What the archive keeps now.
    #[serde(default)]
    pub kept: Kept,
    /// Notification channels whose last attempt failed, with messages waiting.
    #[serde(default)]
    pub failing_channels: Vec<FailingChannel>,
}

vocabulary! {
    /// Why `/hooks/{source}` refused a request before ingest, as recorded in `rejected_requests`
    /// and as the `reason` label of `hookbox_refused_requests_total`.
    RefusalReason {
        UnknownSource = "unknown_source",
        Unauthorized = "unauthorized",
        RateLimited = "rate_limited",
        TooLarge = "too_large",
        Unreadable = "unreadable",
        TimedOut = "timed_out",
    }
}

/// The `/rejected` filter, in the URL like the archive's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedFilter {
    /// A configured source, or `(unknown)` for every name that is not one.
    pub source: Option<String>,
    pub reason: Option<String>,
    /// Rows older than this row number (the next page).
    pub before: Option<String>,
}

/// One refused request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RejectedRow {
    pub id: i64,
    /// RFC 3339, UTC.
    pub received_at: String,
    /// The configured source it counts against, or `(unknown)`.
    pub bucket: String,
    /// The source as requested.
    pub source: String,
    pub reason: RefusalReason,
    /// The precise cause ("no signature header", "timestamp 412 s older than …").
    pub cause: String,
    pub client_address: String,
    pub request_id: Option<String>,
    /// Credentials and signatures redacted.
    #[cfg_attr(feature = "ssr", schema(value_type = Vec<Vec<String>>))]
    pub headers: Vec<(String, String)>,
    pub body_bytes: Option<i64>,
    pub body_sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedPage {
    pub rows: Vec<RejectedRow>,
    /// Pass as `before` for the next (older) page.
    pub next_before: Option<i64>,
}

/// How many requests of a source were refused for a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedCount {
    pub source: String,
    pub reason: RefusalReason,
    pub n: i64,
}

/// One recorded run of `hookbox verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyRun {
    /// RFC 3339, UTC.
    pub ran_at: String,
    pub drift_count: i64,
    /// How many of the drifts `--repair` fixed.
    pub repaired: i64,
    pub summary: String,
}

/// A destination as `/destinations` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct DestinationSummary {
    pub name: String,
    /// The URL with any credentials in it redacted; `None` when the destination has rows but is
    /// no longer configured.
    pub url: Option<String>,
    pub paused_at: Option<String>,
    pub paused_by: Option<String>,
    pub pending: i64,
    /// RFC 3339, UTC: when the oldest pending delivery was created.
    pub oldest_pending_at: Option<String>,
    /// Its age in seconds when the page was read.
    pub oldest_pending_secs: Option<i64>,
    pub dead: i64,
    /// Attempts over the last hour, and how many were answered 2xx.
    pub attempts_last_hour: i64,
    pub delivered_last_hour: i64,
    pub last_error: Option<String>,
    pub last_status_code: Option<i32>,
    pub last_error_at: Option<String>,
}

impl DestinationSummary {
    /// The success rate over the last hour in percent, if there were attempts.
    pub fn success_percent(&self) -> Option<f64> {
        (self.attempts_last_hour > 0)
            .then(|| 100.0 * self.delivered_last_hour as f64 / self.attempts_last_hour as f64)
    }

    /// Whether the overview should point at it: a backlog, or dead deliveries.
    pub fn needs_attention(&self) -> bool {
        self.pending > 0 || self.dead > 0
    }
}

vocabulary! {
    /// A forward delivery's `status`.
    ForwardStatus {
        Pending = "pending",
        Delivered = "delivered",
        Superseded = "superseded",
        Dead = "dead",
    }
}

/// One attempt of a forward delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ForwardAttemptRow {
    pub attempt: i32,
    pub started_at: String,
    pub duration_ms: i64,
    pub status_code: Option<i32>,
    pub error: Option<String>,
    pub response_excerpt: Option<String>,
}

/// One forward delivery with its attempts (oldest first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ForwardRow {
    pub id: i64,
    pub destination: String,
    pub source: String,
    pub event_id: String,
    pub object_id: Option<String>,
    pub revision: Option<i64>,
    pub archive_id: Option<i64>,
    pub status: ForwardStatus,
    pub attempts: i32,
    pub next_attempt_at: String,
    pub last_status_code: Option<i32>,
    pub last_error: Option<String>,
    pub delivered_at: Option<String>,
    pub created_at: String,
    pub attempt_log: Vec<ForwardAttemptRow>,
    /// The delivered row this one re-sends (an operator's re-send).
    #[serde(default)]
    pub resend_of: Option<i64>,
}

/// The filters of `/destinations/{name}`, as they stand in the URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForwardFilter {
    pub status: Option<String>,
    pub source: Option<String>,
    /// An event id or an object id.
    pub q: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DestinationPage {
    pub summary: DestinationSummary,
    /// Newest first.
    pub rows: Vec<ForwardRow>,
    /// Pass as `cursor` for the next (older) page.
    pub next_cursor: Option<String>,
    pub can_act: bool,
}

/// What re-sending a destination's deliveries delivered since a time would do (the count) or did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResendResult {
    /// How many would be (or were) sent again, at most `limit`.
    pub matched: i64,
    /// More than `limit` match: this re-send takes the `limit` delivered first; another takes
    /// the rest.
    pub more: bool,
    pub limit: i64,
    pub resent: bool,
    /// The text to type to confirm, e.g. `resend 12`.
    pub confirmation: String,
    /// The deliveries taken, in words: `orders-app, delivered since 2026-12-01 10:00 (UTC)`.
    pub scope: String,
}

/// What retrying the dead deliveries of a filter would do (dry run) or did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryResult {
    pub matched: i64,
    pub retried: bool,
    /// The text to type to confirm, e.g. `retry 12`.
    pub confirmation: String,
    /// The deliveries taken, in words: `orders-app, source shop, status dead`.
    pub scope: String,
    /// The deliveries counted by their last answer's class, most first.
    pub by_answer: Vec<AnswerCount>,
}
