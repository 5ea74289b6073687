//! The sources page: each configured source, its endpoint and when it last received a delivery.

use serde::{Deserialize, Serialize};

/// One configured source as the sources page shows it. Times are RFC 3339, UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSummary {
    pub name: String,
    /// The endpoint's path, `/hooks/{name}` (the name URL-encoded), with `?{param}=<a secret>`
    /// for a source that takes its token from the query only.
    pub path: String,
    /// The provider preset it was declared with (`stripe`), if any.
    pub preset: Option<String>,
    /// The scheme's config name (`hmac-sha256`) and what it checks, in words.
    pub scheme: String,
    pub scheme_words: String,
    /// `snapshot` or `dedup`.
    pub mode: String,
    /// The destinations its accepted deliveries are forwarded to.
    pub forward: Vec<String>,
    pub rate_limit_per_sec: Option<u32>,
    /// How long its archive rows are kept, in days, and whether that is its own `retention_days`
    /// (else the server's).
    pub retention_days: u32,
    pub own_retention: bool,
    /// How long its archive rows keep their bodies and headers, in days (none: as long as the
    /// rows), and whether that is its own `body_retention_days` (else the server's).
    #[serde(default)]
    pub body_retention_days: Option<u32>,
    #[serde(default)]
    pub own_body_retention: bool,
    /// The newest delivery the sender made (replays not counted), if the archive still has one.
    pub last_received: Option<String>,
    /// Deliveries the sender made in the overview's last 24 hours (to the hour).
    pub received_24h: u64,
    pub silence: Silence,
    /// How many of its newest deliveries (at most [`RECENT_DELIVERIES`], of the last 24 hours,
    /// replays not counted) failed, and of how many.
    pub recent_failed: u32,
    pub recent_of: u32,
    /// What the page says of it, from the above.
    pub health: SourceHealth,
}

/// The newest deliveries of a source its health reads.
pub const RECENT_DELIVERIES: u32 = 20;

/// What the sources page says of a source, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceHealth {
    /// At least half of its recent deliveries failed (a misconfigured mapping, a changed
    /// sender): it receives, but nothing it sends is applied.
    Failing,
    /// The silent-source rule holds for it.
    Silent,
    /// It never sent anything the archive holds: neutral, nothing to fix yet.
    NoDeliveriesYet,
    /// Receiving, most of its recent deliveries not failed.
    Receiving,
}

impl SourceHealth {
    /// From its recent deliveries and the silent-source rule.
    pub fn of(recent_failed: u32, recent_of: u32, silence: &Silence) -> SourceHealth {
        if recent_of > 0 && recent_failed * 2 >= recent_of {
            SourceHealth::Failing
        } else if silence.silent_secs.is_none() {
            SourceHealth::NoDeliveriesYet
        } else if silence.silent {
            SourceHealth::Silent
        } else {
            SourceHealth::Receiving
        }
    }

    /// The badge's words.
    pub fn words(self) -> &'static str {
        match self {
            SourceHealth::Failing => "failing",
            SourceHealth::Silent => "silent",
            SourceHealth::NoDeliveriesYet => "no deliveries yet",
            SourceHealth::Receiving => "receiving",
        }
    }
}

/// The silent-source rule (`HookboxSourceSilent` in `deploy/prometheus/alerts.yml`) applied to
/// one source at the time of the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silence {
    /// Seconds since its last delivery; `None` when the archive has none.
    pub silent_secs: Option<i64>,
    /// Its usual gap at this time of day: the longest silence around this time yesterday and a
    /// week ago; `None` without that history (a new source).
    pub usual_gap_secs: Option<i64>,
    /// How long a silence may last before it counts as silent.
    pub threshold_secs: i64,
    /// `silent_secs` is over the threshold (or there was never a delivery).
    pub silent: bool,
}

/// The sources page's answer: every configured source, and the archive's retention (a source
/// silent for longer has no delivery left to show).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcesPage {
    pub sources: Vec<SourceSummary>,
    pub retention_days: u32,
    /// `[server] public_url`: the origin senders post to, when configured.
    pub public_url: Option<String>,
    /// The page's time, RFC 3339.
    pub now: String,
}
