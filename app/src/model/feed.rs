//! The feed page: each named consumer of the pull feed, where it is and how far behind.

use serde::{Deserialize, Serialize};

/// One consumer as the feed page shows it. Times are RFC 3339, UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedConsumerRow {
    pub name: String,
    /// The sources it reads (`None`: every source).
    pub sources: Option<Vec<String>>,
    /// The types it reads (`None`: every type).
    pub types: Option<Vec<String>>,
    /// Its committed cursor.
    pub committed: String,
    pub committed_at: Option<String>,
    /// Its items among the archive rows after its committed cursor that lag looks at
    /// (`app::feed::consumers::LAG_SCAN`).
    pub lag_items: i64,
    /// More rows follow those looked at: `lag_items` is a lower bound.
    pub lag_capped: bool,
    /// The age of the oldest item it has not committed, in seconds.
    pub lag_seconds: i64,
    /// Until when a reader holds its lease, while one does.
    pub lease_until: Option<String>,
    pub created_by: String,
}
