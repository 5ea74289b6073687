//! What the feed serves after a place, for the long polls' watcher: the kinds of the new rows
//! ([`news`]), and whether rows wait behind the horizon ([`held_back`]).

use super::{Cursor, cursor_of};
use crate::db::Db;
use crate::db::dialect::Dialect;
use crate::model::OutcomeKind;
use sea_orm::{ConnectionTrait, DbErr};

/// What one item served after a place was: for waking the long polls that take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    pub source: String,
    pub event_type: Option<String>,
    pub outcome: OutcomeKind,
}

/// Rows served after `after` at once, at most, by [`news`].
pub const NEWS_ROWS: usize = 2000;

/// The kinds of the rows served after `after` (at most [`NEWS_ROWS`] of them), the place of the
/// last, and whether rows wait behind the horizon when none is served yet.
pub async fn news(db: &Db, after: Cursor) -> Result<(Vec<Kind>, Cursor, bool), DbErr> {
    let dialect = Dialect::of(db.backend());
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT e.source, e.event_type, e.outcome, e.feed_tx, e.id FROM webhook_events e
                 WHERE (e.feed_tx, e.id) > ($1, $2) AND e.feed_tx < {}
                 ORDER BY e.feed_tx, e.id LIMIT {NEWS_ROWS}",
                dialect.feed_horizon()
            ),
            vec![after.tx.into(), after.id.into()],
        ))
        .await?;
    let Some(last) = rows.last() else {
        return Ok((Vec::new(), after, held_back(db, after).await?));
    };
    let last = cursor_of(last, "feed_tx", "id")?;
    let mut seen = std::collections::HashSet::new();
    let mut kinds: Vec<Kind> = Vec::new();
    for row in &rows {
        let outcome: OutcomeKind = row.try_get("", "outcome")?;
        let (source, event_type): (String, Option<String>) =
            (row.try_get("", "source")?, row.try_get("", "event_type")?);
        if seen.insert((source.clone(), event_type.clone(), outcome.as_str())) {
            kinds.push(Kind {
                source,
                event_type,
                outcome,
            });
        }
    }
    Ok((kinds, last, false))
}

/// Whether rows after `after` wait behind the horizon (PostgreSQL: transactions still running
/// wrote them, or one older still runs).
pub async fn held_back(db: &Db, after: Cursor) -> Result<bool, DbErr> {
    let dialect = Dialect::of(db.backend());
    if dialect == Dialect::Sqlite {
        return Ok(false);
    }
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT count(*) AS n FROM (SELECT 1 FROM webhook_events
                 WHERE (feed_tx, id) > ($1, $2) AND feed_tx >= {} LIMIT 1) AS waiting",
                dialect.feed_horizon()
            ),
            vec![after.tx.into(), after.id.into()],
        ))
        .await?;
    Ok(row
        .map(|r| r.try_get::<i64>("", "n"))
        .transpose()?
        .unwrap_or(0)
        > 0)
}
