//! `hookbox purge` and `hookbox verify [--repair]`: maintenance from the shell, with the same
//! configuration and database as the server.

use crate::serve::connect_and_migrate;
use anyhow::{Context, bail};
use app::config::Config;
use app::maintenance::{purge, verify};

/// Applies the archive retention now and prints how many rows went.
pub async fn purge() -> anyhow::Result<()> {
    let config = Config::load_from_env()?;
    let db = connect_and_migrate().await?;
    let retention_days = config.server.retention_days;
    let cutoff = purge::retention_cutoff(chrono::Utc::now(), retention_days);
    let rows = purge::purge_archive(&db, cutoff, purge::DEFAULT_BATCH)
        .await
        .context("purge the archive")?;
    println!(
        "purged {rows} archive rows received before {} (retention_days = {retention_days})",
        cutoff.to_rfc3339()
    );
    Ok(())
}

/// Checks the invariants, prints every drift with its repair, records the run; fails (exit code 1)
/// while drift remains.
pub async fn verify(repair: bool) -> anyhow::Result<()> {
    let config = Config::load_from_env()?;
    let db = connect_and_migrate().await?;
    let cutoff = purge::retention_cutoff(chrono::Utc::now(), config.server.retention_days);
    let report = verify::verify(&db, cutoff, repair)
        .await
        .context("verify the invariants")?;
    for drift in &report.drifts {
        let fixed = if repair && drift.repairable() {
            " [repaired]"
        } else {
            ""
        };
        println!("{drift}{fixed}");
    }
    println!("{}", report.summary());
    if report.remaining() > 0 {
        bail!(
            "drift remains: {} found, {} repaired",
            report.drifts.len(),
            report.repaired
        );
    }
    Ok(())
}
