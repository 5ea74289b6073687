//! `hookbox archive list | verify | restore`: the cold archive from the shell, with the
//! `[archive]` of the config file the server reads.

use crate::database::connect_and_migrate;
use anyhow::{Context, bail};
use app::config::{Config, Settings};
use app::maintenance::cold::ColdArchive;
use app::maintenance::cold::read::{self, Range};
use chrono::{Duration, NaiveDate, SecondsFormat, Utc};

/// The cold archive the config file names, or why there is none.
fn cold_archive() -> anyhow::Result<ColdArchive> {
    match ColdArchive::of(&Config::load_from_env()?)? {
        Some(cold) => Ok(cold),
        None => bail!(
            "no [archive] url in the config file (HOOKBOX_CONFIG, else ./hookbox.toml): there is no cold archive"
        ),
    }
}

fn range(source: Option<String>, from: Option<NaiveDate>, to: Option<NaiveDate>) -> Range {
    Range { source, from, to }
}

/// Prints each object with its rows, ids and times, then the totals.
pub async fn list(
    source: Option<String>,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
) -> anyhow::Result<()> {
    let cold = cold_archive()?;
    let listed = read::list(&cold, &range(source, from, to))
        .await
        .with_context(|| format!("list {}", cold.url))?;
    let at = |t: chrono::DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Secs, true);
    for object in &listed {
        let m = &object.manifest;
        println!(
            "{}  {} rows  ids {} to {}  received {} to {}",
            object.object,
            m.rows,
            m.first_id,
            m.last_id,
            at(m.from),
            at(m.to)
        );
    }
    let rows: u64 = listed.iter().map(|o| o.manifest.rows).sum();
    println!("{} objects, {rows} rows in {}", listed.len(), cold.url);
    Ok(())
}

/// Checks every object against its manifest; exits 1 naming each mismatch.
pub async fn verify() -> anyhow::Result<()> {
    let cold = cold_archive()?;
    let verified = read::verify(&cold, &Range::default())
        .await
        .with_context(|| format!("verify {}", cold.url))?;
    for mismatch in &verified.mismatches {
        println!("mismatch: {mismatch}");
    }
    println!(
        "verified {} objects, {} rows in {}: {} mismatches",
        verified.objects,
        verified.rows,
        cold.url,
        verified.mismatches.len()
    );
    if !verified.mismatches.is_empty() {
        bail!(
            "{} objects do not match their manifests",
            verified.mismatches.len()
        );
    }
    Ok(())
}

/// Puts `source`'s rows received from `from` to `to` (days, both included) back in the archive,
/// kept `keep_days` from now.
pub async fn restore(
    settings: &Settings,
    source: String,
    from: NaiveDate,
    to: NaiveDate,
    keep_days: u32,
) -> anyhow::Result<()> {
    if to < from {
        bail!("--to {to} is before --from {from}");
    }
    let cold = cold_archive()?;
    let db = connect_and_migrate(settings).await?;
    let kept_until = Utc::now() + Duration::days(i64::from(keep_days));
    let restored = read::restore(
        &db,
        &cold,
        &range(Some(source.clone()), Some(from), Some(to)),
        kept_until,
    )
    .await
    .with_context(|| format!("restore from {}", cold.url))?;
    println!(
        "restored {} rows of {source} received {from} to {to} from {} objects ({} already in the archive, left alone); kept until {}",
        restored.restored,
        restored.objects,
        restored.already,
        kept_until.to_rfc3339_opts(SecondsFormat::Secs, true)
    );
    Ok(())
}
