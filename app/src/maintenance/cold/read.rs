//! Reading the cold archive: `hookbox archive list`, `verify` and `restore`.

use super::line::Line;
use super::{ColdArchive, ColdError, Manifest};
use crate::db::Db;
use chrono::{DateTime, NaiveDate, Utc};
use object_store::path::Path as ObjectPath;
use sea_orm::TransactionTrait;
use sha2::{Digest, Sha256};
use std::io::Read;

/// One object of the cold archive, as its manifest describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// `shop/2026/12/01/…jsonl.gz`.
    pub object: String,
    pub source: String,
    pub day: NaiveDate,
    pub manifest: Manifest,
}

/// Which objects: a source's, and days from and to (both included).
#[derive(Debug, Clone, Default)]
pub struct Range {
    pub source: Option<String>,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
}

impl Range {
    fn holds(&self, source: &str, day: NaiveDate) -> bool {
        self.source.as_deref().is_none_or(|s| s == source)
            && self.from.is_none_or(|from| day >= from)
            && self.to.is_none_or(|to| day <= to)
    }
}

/// The source and day of `{source}/{YYYY}/{MM}/{DD}/{name}.manifest.json`, and its object.
fn placed(manifest: &ObjectPath) -> Option<(String, NaiveDate, ObjectPath)> {
    let text = manifest.as_ref();
    let stem = text.strip_suffix(".manifest.json")?;
    let parts: Vec<&str> = stem.split('/').collect();
    let [source, year, month, day, _name] = parts[..] else {
        return None;
    };
    let date = NaiveDate::from_ymd_opt(year.parse().ok()?, month.parse().ok()?, day.parse().ok()?)?;
    Some((
        source.to_string(),
        date,
        ObjectPath::from(format!("{stem}.jsonl.gz")),
    ))
}

/// The objects in `range` with their manifests, in order of source, day and rows.
pub async fn list(cold: &ColdArchive, range: &Range) -> Result<Vec<Listed>, ColdError> {
    let prefix = range.source.clone().unwrap_or_default();
    let mut listed = Vec::new();
    for path in cold.list(&prefix).await? {
        let Some((source, day, object)) = placed(&path) else {
            continue;
        };
        if !range.holds(&source, day) {
            continue;
        }
        let manifest: Manifest = serde_json::from_slice(&cold.get(&path).await?)
            .map_err(|e| ColdError::Content(format!("{path}: not a manifest: {e}")))?;
        listed.push(Listed {
            object: object.to_string(),
            source,
            day,
            manifest,
        });
    }
    Ok(listed)
}

/// An object's rows, checked against its manifest: its SHA-256, its number of rows and their ids.
async fn rows_of(cold: &ColdArchive, listed: &Listed) -> Result<Vec<Line>, String> {
    let bytes = cold
        .get(&ObjectPath::from(listed.object.as_str()))
        .await
        .map_err(|e| format!("{}: {e}", listed.object))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    if sha256 != listed.manifest.sha256 {
        return Err(format!(
            "{}: its SHA-256 is {sha256}, its manifest says {}",
            listed.object, listed.manifest.sha256
        ));
    }
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: not gzipped JSON lines: {e}", listed.object))?;
    let lines = text
        .lines()
        .enumerate()
        .map(|(n, line)| {
            serde_json::from_str::<Line>(line)
                .map_err(|e| format!("{}: line {}: {e}", listed.object, n + 1))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let m = &listed.manifest;
    if lines.len() as u64 != m.rows {
        return Err(format!(
            "{}: {} rows, its manifest says {}",
            listed.object,
            lines.len(),
            m.rows
        ));
    }
    if let Some(line) = lines
        .iter()
        .find(|l| l.id < m.first_id || l.id > m.last_id || l.source != listed.source)
    {
        return Err(format!(
            "{}: row {} of {} is outside its manifest ({} of ids {} to {})",
            listed.object, line.id, line.source, listed.source, m.first_id, m.last_id
        ));
    }
    Ok(lines)
}

/// What `verify` found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Verified {
    pub objects: u64,
    pub rows: u64,
    /// One sentence per object that does not match its manifest.
    pub mismatches: Vec<String>,
}

/// Checks every object of `range` against its manifest.
pub async fn verify(cold: &ColdArchive, range: &Range) -> Result<Verified, ColdError> {
    let mut verified = Verified::default();
    for listed in list(cold, range).await? {
        verified.objects += 1;
        match rows_of(cold, &listed).await {
            Ok(lines) => verified.rows += lines.len() as u64,
            Err(mismatch) => verified.mismatches.push(mismatch),
        }
    }
    Ok(verified)
}

/// What `restore` did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Restored {
    /// Rows put back.
    pub restored: u64,
    /// Rows already in the archive, left alone (and rows in two objects, put back once).
    pub already: u64,
    pub objects: u64,
}

/// Puts the rows of `range` back in the archive, each once and with its own id, kept until
/// `kept_until` whatever its source's retention. An object that does not match its manifest is
/// refused, naming it, before any of its rows is put back.
pub async fn restore(
    db: &Db,
    cold: &ColdArchive,
    range: &Range,
    kept_until: DateTime<Utc>,
) -> Result<Restored, ColdError> {
    let mut restored = Restored::default();
    for listed in list(cold, range).await? {
        let lines = rows_of(cold, &listed).await.map_err(ColdError::Content)?;
        let transaction = db.maintenance().begin().await?;
        for line in &lines {
            if line.restore(&transaction, kept_until).await? {
                restored.restored += 1;
            } else {
                restored.already += 1;
            }
        }
        transaction.commit().await?;
        restored.objects += 1;
    }
    Ok(restored)
}
