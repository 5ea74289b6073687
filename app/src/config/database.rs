//! What configures the database: the URL used when `DATABASE_URL` is unset, and the pool sizes
//! (`db` builds the pools from them).

/// Database pool sizes; `None` is the backend's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pools {
    /// `HOOKBOX_DB_POOL_SIZE`: ingest on PostgreSQL (16), the read pool on SQLite (8).
    pub ingest: Option<u32>,
    /// `HOOKBOX_DASHBOARD_POOL_SIZE`: the dashboard's own pool on PostgreSQL (4).
    pub dashboard: Option<u32>,
}

/// The database used when `DATABASE_URL` is unset.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://hookbox.db?mode=rwc";
