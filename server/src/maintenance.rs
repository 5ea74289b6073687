//! `hookbox purge` and `hookbox verify [--repair]`: maintenance from the shell, with the same
//! configuration and database as the server.
//!
//! Both need a retention: `--retention-days N`, else `server.retention_days` of the config file
//! the server reads. Without either they refuse, before touching the database, rather than purge
//! (or judge the archive) by a default nobody chose. Both print the retention, where it came
//! from and the cutoff it gives.

use crate::database::connect_and_migrate;
use anyhow::{Context, bail};
use app::config::{CONFIG_ENV, Config, DEFAULT_CONFIG_FILE, Settings};
use app::maintenance::{daily, expiry, partitions, purge, verify};
use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use std::fmt;
use std::path::Path;

/// The archive retention a command applies, and where it was read.
struct Retention {
    days: u32,
    /// Each source's retention: `days` for every source with the flag; with the config file,
    /// its sources' own where they have one.
    policy: purge::Policy,
    from: String,
    /// `server.audit_retention_days`, when a config file was read.
    audit_days: Option<u32>,
    /// `server.rejected_retention_days`, when a config file was read.
    rejected_days: Option<u32>,
    /// The config file's `[archive]`, whatever gave the retention: rows are written there
    /// before they go.
    cold: Option<app::maintenance::cold::ColdArchive>,
}

impl Retention {
    /// `--retention-days` if given, else the config file `hookbox serve` would load; neither is
    /// an error naming where the file was looked for.
    fn resolve(flag: Option<u32>) -> anyhow::Result<Retention> {
        let config = Config::load_from_env()?;
        let cold = app::maintenance::cold::ColdArchive::of(&config)?;
        if let Some(days) = flag {
            return Ok(Retention {
                days,
                policy: purge::Policy::uniform(days),
                from: "--retention-days".into(),
                audit_days: None,
                rejected_days: None,
                cold,
            });
        }
        let Some(path) = config.path.clone() else {
            bail!(
                "no config file to take server.retention_days from: {CONFIG_ENV} is unset and \
                 there is no {}; give --retention-days N, or set {CONFIG_ENV} to the config file",
                absolute(Path::new(DEFAULT_CONFIG_FILE))
            );
        };
        Ok(Retention {
            days: config.server.retention_days,
            policy: purge::Policy::of(&config),
            from: absolute(&path),
            audit_days: Some(config.server.audit_retention_days),
            rejected_days: Some(config.server.rejected_retention_days),
            cold,
        })
    }

    /// Where each source's retention ends at `at`, in whole seconds (so the printed cutoffs are
    /// the ones applied).
    fn cutoffs(&self, at: DateTime<Utc>) -> purge::Cutoffs {
        let cutoffs = self.policy.at(at);
        purge::Cutoffs {
            own: cutoffs
                .own
                .into_iter()
                .map(|(source, cutoff)| (source, cutoff.trunc_subsecs(0)))
                .collect(),
            rest: cutoffs.rest.trunc_subsecs(0),
        }
    }

    /// One line per source with a retention of its own: its days and its cutoff.
    fn own_lines(&self, cutoffs: &purge::Cutoffs) -> String {
        cutoffs
            .own
            .iter()
            .map(|(source, cutoff)| {
                let days = self.policy.own.get(source).copied().unwrap_or(self.days);
                format!(
                    "source {source}: retention {days} days of its own: rows received before {}\n",
                    timestamp(*cutoff)
                )
            })
            .collect()
    }

    /// Whether any source's bodies expire before its rows go.
    fn expires_bodies(&self) -> bool {
        self.policy.bodies.default_days.is_some() || !self.policy.bodies.own.is_empty()
    }

    /// One line per body retention (a source's own, or every other source's): its days and the
    /// cutoff its bodies expire before.
    fn body_lines(&self, at: DateTime<Utc>) -> String {
        self.policy
            .bodies
            .at(at)
            .iter()
            .map(|scope| {
                let whose = if scope.name == expiry::EVERY_OTHER_SOURCE {
                    "every other source".to_string()
                } else {
                    format!("source {}", scope.name)
                };
                let days = self.policy.bodies.days_of(&scope.name).unwrap_or_default();
                let unit = if days == 1 { "day" } else { "days" };
                format!(
                    "{whose}: bodies kept {days} {unit}: bodies of rows received before {}\n",
                    timestamp(scope.cutoff)
                )
            })
            .collect()
    }
}

impl fmt::Display for Retention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = if self.days == 1 { "day" } else { "days" };
        write!(f, "retention {} {unit} (from {})", self.days, self.from)
    }
}

fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// What `hookbox purge` was asked.
pub struct PurgeRun {
    /// `--retention-days`.
    pub retention_days: Option<u32>,
    /// `--dry-run`: count, delete nothing.
    pub dry_run: bool,
    /// `--as-of`: the instant the retention is applied at (now when absent).
    pub as_of: Option<DateTime<Utc>>,
}

/// Applies the archive retention at `run.as_of` (now) and prints the cutoff, then how many rows
/// went, per source; with `run.dry_run`, how many would.
pub async fn purge(settings: &Settings, run: PurgeRun) -> anyhow::Result<()> {
    let retention = Retention::resolve(run.retention_days)?;
    let at = run.as_of.unwrap_or_else(Utc::now);
    let cutoffs = retention.cutoffs(at);
    let cutoff = cutoffs.rest;
    let (doing, done) = if run.dry_run {
        (
            "dry run, deleting nothing: archive rows received before",
            "would purge",
        )
    } else {
        ("purging archive rows received before", "purged")
    };
    println!("{retention}: {doing} {}", timestamp(cutoff));
    print!("{}", retention.own_lines(&cutoffs));
    let bodies_at = at.trunc_subsecs(0);
    print!("{}", retention.body_lines(bodies_at));
    let db = connect_and_migrate(settings).await?;
    if run.dry_run {
        return dry_run(&db, &retention, &cutoffs, at).await;
    }
    // With a cold archive, what goes is written there first, and only what is written goes.
    let (cutoffs, written) = archive_first(&db, &retention, cutoffs, bodies_at).await?;
    let purged = purge::purge_archive_by_day(&db, &cutoffs, purge::DEFAULT_BATCH)
        .await
        .context("purge the archive")?;
    let rows: u64 = purged.rows.values().sum();
    println!(
        "{done} {rows} archive rows: {}",
        purge::per_source(&purged.rows)
    );
    if !purged.days.is_empty() {
        println!("dropped whole days: {}", daily::days(&purged.days));
    }
    let scopes = (retention.policy.bodies).within(bodies_at, written.as_ref().map(|w| &w.horizons));
    let expired = expiry::expire_scopes(&db, scopes, expiry::DEFAULT_BATCH)
        .await
        .context("expire the bodies past their retention")?;
    if retention.expires_bodies() {
        println!(
            "expired the bodies of {} archive rows: {}",
            expired.values().sum::<u64>(),
            purge::per_source(&expired)
        );
    }
    let rows = purge::purge_forwarded(&db, cutoffs.clone(), purge::DEFAULT_BATCH)
        .await
        .context("purge the forward deliveries")?;
    println!("{done} {rows} forward deliveries that were delivered or superseded");
    match retention.audit_days {
        Some(days) => {
            let audit_cutoff = purge::retention_cutoff(at, days).trunc_subsecs(0);
            let rows = purge::purge_audit(&db, audit_cutoff, purge::DEFAULT_BATCH)
                .await
                .context("purge the audit log")?;
            println!(
                "audit retention {days} days (from {}): purged {rows} audit rows from before {}",
                retention.from,
                timestamp(audit_cutoff)
            );
        }
        None => println!("audit log left as it is: its retention comes from the config file"),
    }
    if let Some(days) = retention.rejected_days {
        let cutoff = purge::retention_cutoff(at, days).trunc_subsecs(0);
        let rows =
            app::db::rejected::purge_older_than(db.maintenance(), cutoff, purge::DEFAULT_BATCH)
                .await
                .context("purge the refused-requests log")?;
        println!(
            "refused-requests retention {days} days (from {}): purged {rows} rows from before {}",
            retention.from,
            timestamp(cutoff)
        );
    }
    Ok(())
}

/// Checks the invariants, prints the cutoff and every drift with its repair, records the run;
/// fails (exit code 1) while drift remains.
pub async fn verify(
    settings: &Settings,
    repair: bool,
    retention_days: Option<u32>,
) -> anyhow::Result<()> {
    let retention = Retention::resolve(retention_days)?;
    let cutoffs = retention.cutoffs(Utc::now());
    println!(
        "{retention}: inbox rows received from {} on must have an archive row",
        timestamp(cutoffs.rest)
    );
    print!("{}", retention.own_lines(&cutoffs));
    let db = connect_and_migrate(settings).await?;
    let report = verify::verify(&db, cutoffs, repair)
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

/// What `hookbox purge --dry-run` prints: what the purge would delete and expire at `at`.
async fn dry_run(
    db: &app::db::Db,
    retention: &Retention,
    cutoffs: &purge::Cutoffs,
    at: DateTime<Utc>,
) -> anyhow::Result<()> {
    let done = "would purge";
    let cutoff = cutoffs.rest;
    let bodies_at = at.trunc_subsecs(0);
    let expiring = expiry::due(db, &retention.policy.bodies, cutoffs, bodies_at)
        .await
        .context("count the bodies the purge would expire")?;
    let audit_cutoff = retention
        .audit_days
        .map(|days| purge::retention_cutoff(at, days).trunc_subsecs(0));
    let due = purge::due(db, cutoffs, audit_cutoff.unwrap_or(cutoff))
        .await
        .context("count what the purge would delete")?;
    let rows: u64 = due.archive.values().sum();
    println!(
        "{done} {rows} archive rows: {}",
        purge::per_source(&due.archive)
    );
    let whole = partitions::due_days(db, cutoffs)
        .await
        .context("find the days the purge would drop whole")?;
    if !whole.is_empty() {
        let whole: Vec<_> = whole.iter().map(|due| due.table.day).collect();
        println!("would drop whole days: {}", daily::days(&whole));
    }
    if retention.expires_bodies() {
        println!(
            "would expire the bodies of {} archive rows: {}",
            expiring.values().sum::<u64>(),
            purge::per_source(&expiring)
        );
    }
    println!(
        "{done} {} forward deliveries that were delivered or superseded",
        due.forwarded
    );
    match (retention.audit_days, audit_cutoff) {
        (Some(days), Some(audit_cutoff)) => println!(
            "audit retention {days} days (from {}): {done} {} audit rows from before {}",
            retention.from,
            due.audit,
            timestamp(audit_cutoff)
        ),
        _ => println!("audit log left as it is: its retention comes from the config file"),
    }
    Ok(())
}

/// With the config file's `[archive]`: writes what the purge reaches there and prints what it
/// wrote; answers the cutoffs clamped to what is written, and what was.
async fn archive_first(
    db: &app::db::Db,
    retention: &Retention,
    cutoffs: purge::Cutoffs,
    at: DateTime<Utc>,
) -> anyhow::Result<(
    purge::Cutoffs,
    Option<app::maintenance::cold::write::Written>,
)> {
    Ok(match &retention.cold {
        Some(cold) => {
            let (within, written) =
                app::maintenance::cold::write::before_purge(db, cold, &retention.policy, at)
                    .await
                    .with_context(|| format!("write the cold archive {}", cold.url))?;
            println!(
                "archived {} rows in {} objects to {}: {}",
                written.rows.values().sum::<u64>(),
                written.objects,
                cold.url,
                purge::per_source(&written.rows)
            );
            for source in &written.held {
                println!(
                    "source {source}: another process is writing its cold archive (or was, until its lease of 10 minutes runs out); its rows not yet written stay for the next run"
                );
            }
            (within, Some(written))
        }
        None => (cutoffs, None),
    })
}
