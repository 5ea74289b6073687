//! The database every command that needs one opens: connect, then migrate.

use anyhow::Context;
use app::config::Settings;
use app::config::settings::redact_url;
use app::db::Db;
use migration::{Migrator, MigratorTrait};

/// Connects with the pools `settings` name and brings the schema up to date.
pub async fn connect_and_migrate(settings: &Settings) -> anyhow::Result<Db> {
    let url = &settings.database_url;
    let db = Db::connect_with(url, settings.pools)
        .await
        .with_context(|| format!("connect to the database ({})", redact_url(url)))?;
    Migrator::up(&db.writer, None)
        .await
        .context("migrate the schema")?;
    // Failures archived before error classes existed (migration m20261203_000013): classified
    // once, in batches; afterwards an empty read of a partial index.
    let classified = app::ingest::problem::classify_unclassified(&db)
        .await
        .context("classify the failures archived before error classes")?;
    if classified > 0 {
        tracing::info!(classified, "error classes of earlier failures filled in");
    }
    // PostgreSQL's archive is laid out by day: the days to come have their tables before
    // their first delivery (the daily run makes more).
    let made = app::maintenance::partitions::make_ahead(&db, chrono::Utc::now())
        .await
        .context("make the archive's tables of the days ahead")?;
    if made > 0 {
        tracing::info!(made, "archive: made the tables of the days ahead");
    }
    if let Some((days, locks)) = app::maintenance::partitions::short_of_locks(&db)
        .await
        .context("read max_locks_per_transaction")?
    {
        tracing::warn!(
            days,
            max_locks_per_transaction = locks,
            wanted = app::maintenance::partitions::wanted_locks(days),
            "the archive has a table a day: a statement reading every day takes a lock on each \
             of them and their indexes; raise max_locks_per_transaction (docs/operations.md)"
        );
    }
    Ok(db)
}
