//! Deleting old rows in batches, each statement its own transaction, so retention never holds
//! locks or a long transaction against deliveries (decision 0003).

use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr};

/// Runs `delete` (`$1` the cutoff, `$2` the rows per statement) until it deletes fewer than
/// `batch` rows, each statement its own transaction; returns how many it deleted in all.
pub async fn delete_in_batches<C: ConnectionTrait>(
    conn: &C,
    delete: &str,
    older_than: DateTime<Utc>,
    batch: usize,
) -> Result<u64, DbErr> {
    let limit = i64::try_from(batch.max(1)).unwrap_or(i64::MAX);
    let mut total = 0;
    loop {
        let deleted = conn
            .execute_raw(crate::db::statement(
                conn.get_database_backend(),
                delete,
                vec![older_than.into(), limit.into()],
            ))
            .await?
            .rows_affected();
        total += deleted;
        if deleted < limit as u64 {
            return Ok(total);
        }
    }
}
