//! `verify_runs`: one row per `hookbox verify`, the newest shown on the overview.

use super::Db;
use crate::model::VerifyRun;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};

#[derive(FromQueryResult)]
struct VerifyRunRecord {
    ran_at: DateTime<Utc>,
    drift_count: i64,
    repaired: i64,
    summary: String,
}

/// The newest recorded run, for the dashboard.
pub async fn last_run(db: &Db) -> Result<Option<VerifyRun>, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT ran_at, drift_count, repaired, summary FROM verify_runs ORDER BY ran_at DESC, id DESC LIMIT 1", vec![]))
        .await?;
    row.map(|row| {
        let r = VerifyRunRecord::from_query_result(&row, "")?;
        Ok(VerifyRun {
            ran_at: r.ran_at.to_rfc3339(),
            drift_count: r.drift_count,
            repaired: r.repaired,
            summary: r.summary,
        })
    })
    .transpose()
}

/// Records a finished run.
pub async fn record_run(
    db: &Db,
    ran_at: DateTime<Utc>,
    drift_count: i64,
    repaired: i64,
    summary: &str,
) -> Result<(), DbErr> {
    db.maintenance()
        .execute_raw(crate::db::statement(
            db.backend(),
            "INSERT INTO verify_runs (ran_at, drift_count, repaired, summary) VALUES ($1, $2, $3, $4)",
            vec![
                ran_at.into(),
                drift_count.into(),
                repaired.into(),
                summary.into(),
            ],
        ))
        .await?;
    Ok(())
}
