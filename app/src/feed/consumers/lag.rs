//! How far consumers are behind, in bounded time whatever their number and the archive's size:
//! one statement for any number of consumers, each looking at no more than the [`LAG_SCAN`]
//! archive rows after its committed cursor (by the feed's index), wherever its selection's
//! items are.

use super::Consumer;
use crate::db::Db;
use crate::db::dialect::Dialect;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait, Value};

/// The archive rows after a consumer's committed cursor that its lag looks at, at most: a
/// consumer further behind than this shows the items among them, as a lower bound
/// ([`Lag::capped`]).
pub const LAG_SCAN: i64 = 10_000;

/// How far a consumer is behind: its items among the first [`LAG_SCAN`] archive rows after its
/// committed cursor, and the age of the oldest of them. Rows of transactions still running
/// count too: a feed held back by one shows as lag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lag {
    pub items: i64,
    pub seconds: i64,
    /// More archive rows follow the ones looked at: `items` is a lower bound.
    pub capped: bool,
}

/// The consumer's lag (see [`lags`]).
pub async fn lag(db: &Db, consumer: &Consumer) -> Result<Lag, DbErr> {
    Ok(lags(db, std::slice::from_ref(consumer))
        .await?
        .pop()
        .unwrap_or_default())
}

/// Each consumer's lag, in their order, in one statement: per consumer an index range of at
/// most [`LAG_SCAN`] rows after its committed cursor, its own selection applied to those.
pub async fn lags(db: &Db, consumers: &[Consumer]) -> Result<Vec<Lag>, DbErr> {
    if consumers.is_empty() {
        return Ok(Vec::new());
    }
    let dialect = Dialect::of(db.backend());
    let mut values: Vec<Value> = Vec::new();
    let mut parts = Vec::with_capacity(consumers.len());
    for (k, consumer) in consumers.iter().enumerate() {
        values.push(consumer.committed.tx.into());
        values.push(consumer.committed.id.into());
        let after = values.len();
        let conditions = consumer.selection().conditions(dialect, &mut values);
        parts.push(format!(
            "SELECT CAST({k} AS BIGINT) AS k, count(*) AS scanned,
                    COALESCE(sum(CASE WHEN 1 = 1{conditions} THEN 1 ELSE 0 END), 0) AS behind,
                    min(CASE WHEN 1 = 1{conditions} THEN e.received_at END) AS oldest
             FROM (SELECT e.source, e.event_type, e.outcome, e.received_at FROM webhook_events e
                   WHERE (e.feed_tx, e.id) > (${tx}, ${id})
                   ORDER BY e.feed_tx, e.id LIMIT {LAG_SCAN}) AS e",
            tx = after - 1,
            id = after,
        ));
    }
    let statement = crate::db::statement(db.backend(), parts.join("\nUNION ALL\n"), values);
    let rows = if dialect == Dialect::Postgres {
        // Without statistics a hundred parts estimate as one costly plan, and PostgreSQL's JIT
        // then spends longer compiling it (past the statement timeout) than the reads take.
        let txn = db.dashboard.begin().await?;
        txn.execute_unprepared("SET LOCAL jit = off").await?;
        let rows = txn.query_all_raw(statement).await?;
        txn.commit().await?;
        rows
    } else {
        db.dashboard.query_all_raw(statement).await?
    };
    let now = Utc::now();
    let mut lags = vec![Lag::default(); consumers.len()];
    for row in &rows {
        let k = usize::try_from(row.try_get::<i64>("", "k")?)
            .map_err(|e| DbErr::Custom(format!("lag: {e}")))?;
        let oldest: Option<DateTime<Utc>> = row.try_get("", "oldest")?;
        if let Some(lag) = lags.get_mut(k) {
            *lag = Lag {
                items: row.try_get("", "behind")?,
                seconds: oldest.map_or(0, |at| (now - at).num_seconds().max(0)),
                capped: row.try_get::<i64>("", "scanned")? >= LAG_SCAN,
            };
        }
    }
    Ok(lags)
}
