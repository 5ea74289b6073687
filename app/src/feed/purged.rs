//! Where the archive's purge stopped, per source: a cursor before it asks for rows that are
//! gone.

use super::{Cursor, cursor_of};
use crate::db::Db;
use crate::db::conditions::Conditions;
use sea_orm::{ConnectionTrait, DbErr};

/// The greatest place the archive's purge deleted among the rows of `sources` (`None`: of every
/// source), if it deleted any: each source's purge records its own ([`record_purged`]), as
/// sources keep their rows for different times; the place recorded before purges were per
/// source (`feed_horizon`) counts for every source.
pub async fn purged_through<C: ConnectionTrait>(
    conn: &C,
    sources: Option<&[String]>,
) -> Result<Option<Cursor>, DbErr> {
    let mut c = Conditions::new();
    let of_sources = match sources {
        None => String::new(),
        Some([]) => " WHERE 1 = 0".into(),
        Some(sources) => format!(" WHERE source IN ({})", c.params(sources.iter().cloned())),
    };
    let row = conn
        .query_one_raw(crate::db::statement(
            conn.get_database_backend(),
            format!(
                "SELECT feed_tx, id FROM (
                   SELECT feed_tx, id FROM feed_horizon WHERE k = 1
                   UNION ALL
                   SELECT feed_tx, id FROM feed_source_horizons{of_sources}
                 ) AS purged ORDER BY feed_tx DESC, id DESC LIMIT 1"
            ),
            c.values,
        ))
        .await?;
    row.map(|r| cursor_of(&r, "feed_tx", "id")).transpose()
}

/// Records that the purge deleted rows of `source` up to `through` (never moves back); run in
/// the purge's own transaction.
pub async fn record_purged<C: ConnectionTrait>(
    conn: &C,
    source: &str,
    through: Cursor,
) -> Result<(), DbErr> {
    conn.execute_raw(crate::db::statement(
        conn.get_database_backend(),
        "INSERT INTO feed_source_horizons (source, feed_tx, id) VALUES ($1, $2, $3)
         ON CONFLICT (source) DO UPDATE SET feed_tx = excluded.feed_tx, id = excluded.id
         WHERE (feed_source_horizons.feed_tx, feed_source_horizons.id)
               < (excluded.feed_tx, excluded.id)",
        vec![source.into(), through.tx.into(), through.id.into()],
    ))
    .await?;
    Ok(())
}

/// The earliest cursor still served to a reader of `sources` (`None`: every source): after the
/// last place purged among their rows, or the start.
pub async fn earliest(db: &Db, sources: Option<&[String]>) -> Result<Cursor, DbErr> {
    Ok(purged_through(&db.dashboard, sources)
        .await?
        .unwrap_or(Cursor::START))
}
