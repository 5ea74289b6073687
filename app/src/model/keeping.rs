//! What the dashboard says about keeping data: the archive's size and oldest row, the cold
//! archive's state, and what is left of a body past its retention.

use serde::{Deserialize, Serialize};

/// What is left of a body past its source's body retention.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BodyExpired {
    /// When it expired (RFC 3339).
    pub at: String,
    /// The SHA-256 of the body as received, hex.
    pub sha256: String,
    pub bytes: i64,
}

/// What the archive keeps now: its size on disk, and its oldest delivery.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    /// PostgreSQL: the archive table with its indexes and TOAST; SQLite: the whole database file.
    pub bytes: i64,
    /// Whether `bytes` is the whole database (SQLite) rather than the archive alone.
    pub whole_database: bool,
    /// When the oldest archive row was received (RFC 3339), if there is one.
    pub oldest: Option<String>,
    /// The cold archive's state, when one is configured.
    #[serde(default)]
    pub cold: Option<ColdState>,
}

/// Whether the cold archive is being written (RFC 3339 times).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColdState {
    /// The last run that wrote it.
    pub last_written_at: Option<String>,
    /// Since when runs have failed to write it, and the last one's error.
    pub failing_since: Option<String>,
    pub last_error: Option<String>,
    /// The time before which every row of every source is in it.
    pub through: Option<String>,
}
