//! Whether the cold archive is being written: the last run that wrote it, and since when it has
//! kept failing and why (`cold_archive_state`, one row for every process), for the overview.

use crate::db::Db;
use crate::model::ColdState;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr};

/// The longest error kept and shown.
const ERROR_CHARS: usize = 500;

/// A run wrote the cold archive at `at`: it is no longer failing.
pub async fn written(db: &Db, at: DateTime<Utc>) -> Result<(), DbErr> {
    db.maintenance()
        .execute_raw(crate::db::statement(
            db.backend(),
            "INSERT INTO cold_archive_state (id, last_written_at, failing_since, last_error)
             VALUES (1, $1, NULL, NULL)
             ON CONFLICT (id) DO UPDATE SET last_written_at = excluded.last_written_at,
                 failing_since = NULL, last_error = NULL",
            vec![at.into()],
        ))
        .await?;
    Ok(())
}

/// A run could not write the cold archive at `at`: failing since then, unless it already was.
pub async fn failed(db: &Db, at: DateTime<Utc>, error: &str) -> Result<(), DbErr> {
    let error: String = error.chars().take(ERROR_CHARS).collect();
    db.maintenance()
        .execute_raw(crate::db::statement(
            db.backend(),
            "INSERT INTO cold_archive_state (id, last_written_at, failing_since, last_error)
             VALUES (1, NULL, $1, $2)
             ON CONFLICT (id) DO UPDATE SET
                 failing_since = COALESCE(cold_archive_state.failing_since, excluded.failing_since),
                 last_error = excluded.last_error",
            vec![at.into(), error.into()],
        ))
        .await?;
    Ok(())
}

/// The cold archive's state, and the time before which every row of every source is in it.
pub async fn read(db: &Db) -> Result<ColdState, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT s.last_written_at, s.failing_since, s.last_error,
                    (SELECT min(h.through) FROM cold_archive_horizons h) AS through
             FROM (SELECT 1 AS one) AS one
             LEFT JOIN cold_archive_state s ON s.id = 1",
            vec![],
        ))
        .await?;
    let Some(row) = row else {
        return Ok(ColdState::default());
    };
    let time = |name: &str| -> Result<Option<String>, DbErr> {
        Ok(row
            .try_get::<Option<DateTime<Utc>>>("", name)?
            .map(|at| at.to_rfc3339()))
    };
    Ok(ColdState {
        last_written_at: time("last_written_at")?,
        failing_since: time("failing_since")?,
        last_error: row.try_get("", "last_error")?,
        through: time("through")?,
    })
}
