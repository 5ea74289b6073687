//! Writing the cold archive before a purge: for each source, every whole day of its rows up to
//! where its retention or body retention reaches, oldest first, in objects of at most
//! [`OBJECT_ROWS`] rows or [`OBJECT_BYTES`] compressed, each confirmed (object, then manifest)
//! before the next. A day is recorded as written (`cold_archive_horizons.through` moves past it)
//! only once all its objects are; the purge and body expiry then stop at that horizon, so no row
//! leaves the database before it is in the cold archive.
//!
//! One process writes a source at a time: it holds the source's lease (`lease_until`), renewed
//! after each day; another process finds it held and leaves that source for its next run.
//! Only days that ended an hour before the run are written: no delivery of such a day is still
//! committing.

use super::line::{Line, columns};
use super::{ColdArchive, ColdError, Manifest, day_folder, day_of, object_names};
use crate::db::Db;
use crate::db::dialect::Dialect;
use crate::maintenance::policy::BySource;
use chrono::{DateTime, Duration, Utc};
use flate2::Compression;
use flate2::write::GzEncoder;
use sea_orm::ConnectionTrait;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;

/// Rows read per statement (bodies whole: at most 100 bodies in memory at once).
const READ_ROWS: i64 = 100;
/// Rows per object ...
pub const OBJECT_ROWS: u64 = 10_000;
/// ... and the compressed size past which an object is closed early.
pub const OBJECT_BYTES: usize = 64 * 1024 * 1024;
/// How long a process holds a source's writing before another may take it over (renewed after
/// each day written).
const LEASE_MINUTES: i64 = 10;

/// What a run wrote.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Written {
    /// Rows written, per source.
    pub rows: BySource,
    pub objects: u64,
    /// Per source, the time before which every row is in the cold archive (after this run).
    pub horizons: BTreeMap<String, DateTime<Utc>>,
    /// The sources another process was writing (its lease held): left for the next run.
    pub held: Vec<String>,
}

/// Writes, for each source of `due` (the time before which its rows are about to be purged or
/// lose their bodies), its whole days up to that time's day, from where its last run ended.
pub async fn write_due(
    db: &Db,
    cold: &ColdArchive,
    due: &BTreeMap<String, DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<Written, ColdError> {
    let mut written = Written::default();
    // Whole days that ended an hour before now.
    let complete = day_of(now - Duration::hours(1));
    for (source, until) in due {
        let limit = (day_of(*until) + Duration::days(1)).min(complete);
        let Some(mut from) = claim(db, source, now).await? else {
            written.held.push(source.clone());
            written
                .horizons
                .insert(source.clone(), horizon(db, source).await?);
            continue;
        };
        let result = async {
            while from < limit {
                let Some(next) = next_row_at(db, source, from).await? else {
                    from = limit;
                    break;
                };
                let day = day_of(next).max(from);
                if day >= limit {
                    from = limit;
                    break;
                }
                let (rows, objects) = write_day(db, cold, source, day).await?;
                *written.rows.entry(source.clone()).or_default() += rows;
                written.objects += objects;
                from = day_of(day) + Duration::days(1);
                record(db, source, from, Some(now)).await?;
            }
            Ok::<_, ColdError>(())
        }
        .await;
        // The lease goes whatever happened; the horizon stays where the last whole day left it.
        record(db, source, from, None).await?;
        result?;
        written.horizons.insert(source.clone(), from);
    }
    Ok(written)
}

/// Takes `source`'s lease unless another process holds it, answering its horizon.
async fn claim(
    db: &Db,
    source: &str,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, ColdError> {
    let row = db
        .maintenance()
        .query_one_raw(crate::db::statement(
            db.backend(),
            "INSERT INTO cold_archive_horizons (source, through, lease_until) VALUES ($1, $2, $3)
             ON CONFLICT (source) DO UPDATE SET lease_until = excluded.lease_until
             WHERE cold_archive_horizons.lease_until < $4
             RETURNING through",
            vec![
                source.into(),
                DateTime::<Utc>::UNIX_EPOCH.into(),
                (now + Duration::minutes(LEASE_MINUTES)).into(),
                now.into(),
            ],
        ))
        .await?;
    Ok(row.map(|row| row.try_get("", "through")).transpose()?)
}

/// Moves `source`'s horizon to `through`, renewing its lease from `now`, or giving it up.
async fn record(
    db: &Db,
    source: &str,
    through: DateTime<Utc>,
    renewed_from: Option<DateTime<Utc>>,
) -> Result<(), ColdError> {
    let lease_until = renewed_from.map_or(DateTime::<Utc>::UNIX_EPOCH, |now| {
        now + Duration::minutes(LEASE_MINUTES)
    });
    db.maintenance()
        .execute_raw(crate::db::statement(
            db.backend(),
            "UPDATE cold_archive_horizons SET through = $2, lease_until = $3 WHERE source = $1",
            vec![source.into(), through.into(), lease_until.into()],
        ))
        .await?;
    Ok(())
}

/// The time before which every row of `source` is in the cold archive.
pub async fn horizon(db: &Db, source: &str) -> Result<DateTime<Utc>, ColdError> {
    Ok(horizons(db)
        .await?
        .remove(source)
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH))
}

/// Every source's horizon.
pub async fn horizons(db: &Db) -> Result<BTreeMap<String, DateTime<Utc>>, ColdError> {
    let rows = db
        .maintenance()
        .query_all_raw(crate::db::statement(
            db.backend(),
            "SELECT source, through FROM cold_archive_horizons",
            vec![],
        ))
        .await?;
    rows.iter()
        .map(|row| Ok((row.try_get("", "source")?, row.try_get("", "through")?)))
        .collect()
}

/// When the oldest row of `source` received at or after `from` was received.
async fn next_row_at(
    db: &Db,
    source: &str,
    from: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, ColdError> {
    let row = db
        .maintenance()
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT min(received_at) AS next FROM webhook_events
             WHERE source = $1 AND received_at >= $2",
            vec![source.into(), from.into()],
        ))
        .await?;
    Ok(row
        .map(|row| row.try_get::<Option<DateTime<Utc>>>("", "next"))
        .transpose()?
        .flatten())
}

/// One object being filled.
struct Filling {
    gz: GzEncoder<Vec<u8>>,
    rows: u64,
    first_id: i64,
    last_id: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
}

impl Filling {
    fn new() -> Filling {
        Filling {
            gz: GzEncoder::new(Vec::new(), Compression::default()),
            rows: 0,
            first_id: i64::MAX,
            last_id: i64::MIN,
            from: DateTime::<Utc>::MAX_UTC,
            to: DateTime::<Utc>::MIN_UTC,
        }
    }

    fn push(&mut self, line: &Line) -> Result<(), ColdError> {
        let mut text = serde_json::to_vec(line).map_err(|e| ColdError::Content(e.to_string()))?;
        text.push(b'\n');
        self.gz
            .write_all(&text)
            .map_err(|e| ColdError::Content(e.to_string()))?;
        self.rows += 1;
        self.first_id = self.first_id.min(line.id);
        self.last_id = self.last_id.max(line.id);
        self.from = self.from.min(line.received_at);
        self.to = self.to.max(line.received_at);
        Ok(())
    }

    fn full(&self) -> bool {
        self.rows >= OBJECT_ROWS || self.gz.get_ref().len() >= OBJECT_BYTES
    }

    /// Writes the object, then its manifest.
    async fn write(self, cold: &ColdArchive, folder: &str) -> Result<(), ColdError> {
        let bytes = self
            .gz
            .finish()
            .map_err(|e| ColdError::Content(e.to_string()))?;
        let manifest = Manifest {
            rows: self.rows,
            sha256: hex::encode(Sha256::digest(&bytes)),
            first_id: self.first_id,
            last_id: self.last_id,
            from: self.from,
            to: self.to,
        };
        let (object, manifest_path) = object_names(folder, self.first_id, self.last_id);
        cold.put(&object, bytes).await?;
        let manifest =
            serde_json::to_vec(&manifest).map_err(|e| ColdError::Content(e.to_string()))?;
        cold.put(&manifest_path, manifest).await
    }
}

/// Writes every row of `source` received on `day`, in order of time; answers the rows and
/// objects written.
async fn write_day(
    db: &Db,
    cold: &ColdArchive,
    source: &str,
    day: DateTime<Utc>,
) -> Result<(u64, u64), ColdError> {
    let folder = day_folder(source, day);
    let dialect = Dialect::of(db.backend());
    let end = day + Duration::days(1);
    let (mut after_at, mut after_id) = (day - Duration::microseconds(1), i64::MIN);
    let (mut rows, mut objects) = (0, 0);
    let mut filling = Filling::new();
    loop {
        let page = db
            .maintenance()
            .query_all_raw(crate::db::statement(
                db.backend(),
                format!(
                    "SELECT {} FROM webhook_events
                     WHERE source = $1 AND received_at >= $2 AND received_at < $3
                       AND (received_at > $4 OR (received_at = $4 AND id > $5))
                     ORDER BY received_at, id LIMIT {READ_ROWS}",
                    columns(dialect)
                ),
                vec![
                    source.into(),
                    day.into(),
                    end.into(),
                    after_at.into(),
                    after_id.into(),
                ],
            ))
            .await?;
        for row in &page {
            let line = Line::of(row)?;
            (after_at, after_id) = (line.received_at, line.id);
            filling.push(&line)?;
            rows += 1;
            if filling.full() {
                std::mem::replace(&mut filling, Filling::new())
                    .write(cold, &folder)
                    .await?;
                objects += 1;
            }
        }
        if page.len() < READ_ROWS as usize {
            break;
        }
    }
    if filling.rows > 0 {
        filling.write(cold, &folder).await?;
        objects += 1;
    }
    Ok((rows, objects))
}

/// Every source with rows in the archive (a loose index scan: one seek per source).
pub async fn sources(db: &Db) -> Result<Vec<String>, ColdError> {
    let rows = db
        .maintenance()
        .query_all_raw(crate::db::statement(
            db.backend(),
            "WITH RECURSIVE s(source) AS (
                 SELECT min(source) FROM webhook_events
                 UNION ALL
                 SELECT (SELECT min(e.source) FROM webhook_events e WHERE e.source > s.source)
                 FROM s WHERE s.source IS NOT NULL
             )
             SELECT source FROM s WHERE source IS NOT NULL",
            vec![],
        ))
        .await?;
    Ok(rows
        .iter()
        .map(|row| row.try_get("", "source"))
        .collect::<Result<_, _>>()?)
}

/// Before a purge at `at` by `policy`: writes every row the purge or body expiry would reach to
/// the cold archive, and answers the cutoffs and body horizons clamped to what is written, so
/// nothing leaves the database before it is in the cold archive. The run's success, or its
/// failure and why, is recorded for the overview (`super::state`).
pub async fn before_purge(
    db: &Db,
    cold: &ColdArchive,
    policy: &crate::maintenance::policy::Policy,
    at: DateTime<Utc>,
) -> Result<(crate::maintenance::policy::Cutoffs, Written), ColdError> {
    let result = write_before_purge(db, cold, policy, at).await;
    let recorded = match &result {
        Ok(_) => super::state::written(db, Utc::now()).await,
        Err(error) => super::state::failed(db, Utc::now(), &error.to_string()).await,
    };
    let done = result?;
    recorded?;
    Ok(done)
}

async fn write_before_purge(
    db: &Db,
    cold: &ColdArchive,
    policy: &crate::maintenance::policy::Policy,
    at: DateTime<Utc>,
) -> Result<(crate::maintenance::policy::Cutoffs, Written), ColdError> {
    let cutoffs = policy.at(at);
    let bodies = policy.bodies.at(at);
    let mut due = BTreeMap::new();
    for source in sources(db).await? {
        let body_cutoff = bodies
            .iter()
            .find(|scope| scope.covers(&source))
            .map(|scope| scope.cutoff);
        let reach = cutoffs
            .of(&source)
            .max(body_cutoff.unwrap_or(DateTime::<Utc>::UNIX_EPOCH));
        due.insert(source, reach);
    }
    let written = write_due(db, cold, &due, Utc::now()).await?;
    let clamped = cutoffs.within(&written.horizons);
    Ok((clamped, written))
}
