//! The pull feed: the applied and accepted deliveries of the archive in commit order, for
//! programs that read instead of taking a push (`docs/feed.md`).
//!
//! - Order: (`feed_tx`, `id`) of `webhook_events`. On PostgreSQL `feed_tx` is the writing
//!   transaction's id, and only rows whose transaction is older than every one still running are
//!   served ([`Dialect::feed_horizon`]): a row that commits later sorts after every row served,
//!   so a reader that passed a cursor never misses what commits behind it. On SQLite one writer
//!   at a time makes id order commit order.
//! - A [`Cursor`] is a place in that order; the feed answers the items after it.
//! - Retention: the archive's purge records the last place it deleted of each source
//!   ([`record_purged`]); a cursor before that of a source the reader takes asks for rows that
//!   are gone ([`FeedError::Gone`]).
//! - Bounds: at most [`MAX_LIMIT`] items and about [`PAGE_BYTES`] of bodies a page (always at
//!   least one item), read on the dashboard's pool under its statement timeout.
//!
//! [`consumers`]: named readers whose committed cursor hookbox keeps.

pub mod consumers;
mod news;
mod purged;

pub use news::{Kind, NEWS_ROWS, held_back, news};
pub use purged::{earliest, purged_through, record_purged};

use crate::db::Db;
use crate::db::dialect::Dialect;
use crate::model::OutcomeKind;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, QueryResult, Value};
use std::fmt;

/// The most items one page holds.
pub const MAX_LIMIT: usize = 500;

/// About how many body bytes one page holds: the page ends at the first item past it.
pub const PAGE_BYTES: i64 = 1024 * 1024;

/// The most sources or types a selection names.
pub const MAX_NAMES: usize = 50;

/// The longest type a selection names, in bytes.
pub const MAX_TYPE_BYTES: usize = 200;

/// A place in the feed's order: the items after it come next. Written `<tx>.<id>`; programs
/// keep it as the opaque text it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Cursor {
    pub tx: i64,
    pub id: i64,
}

impl Cursor {
    /// Before every item.
    pub const START: Cursor = Cursor { tx: 0, id: 0 };

    /// Reads a cursor hookbox gave out; `None` for any other text.
    pub fn parse(text: &str) -> Option<Cursor> {
        let (tx, id) = text.split_once('.')?;
        let number = |part: &str| -> Option<i64> {
            if part.is_empty() || part.len() > 19 || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            part.parse().ok()
        };
        Some(Cursor {
            tx: number(tx)?,
            id: number(id)?,
        })
    }

    /// The place just before an item: every item before `item` is at or before it.
    fn before(item: Cursor) -> Cursor {
        Cursor {
            tx: item.tx,
            id: item.id - 1,
        }
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.tx, self.id)
    }
}

/// Which items a read takes: sources and types (`None`: all), and which outcomes beyond the
/// applied and accepted ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub sources: Option<Vec<String>>,
    pub types: Option<Vec<String>>,
    pub include_stale: bool,
    pub include_duplicate: bool,
    /// The sources the reader may see at all (`None`: every one; set by [`Selection::within`]):
    /// only their rows move an empty page's cursor, so it tells nothing of the others.
    pub scope: Option<Vec<String>>,
}

impl Selection {
    /// The outcomes served: applied and accepted (what forwarding sends), and those included.
    pub fn outcomes(&self) -> Vec<OutcomeKind> {
        let mut outcomes = vec![OutcomeKind::Applied, OutcomeKind::Accepted];
        if self.include_stale {
            outcomes.push(OutcomeKind::Stale);
        }
        if self.include_duplicate {
            outcomes.push(OutcomeKind::Duplicate);
        }
        outcomes
    }

    /// The selection narrowed to the sources a caller may see (`None`: every source).
    pub fn within(mut self, scope: Option<&[String]>) -> Selection {
        self.scope = scope.map(<[String]>::to_vec);
        if let Some(scope) = scope {
            self.sources = Some(match self.sources {
                None => scope.to_vec(),
                Some(names) => names.into_iter().filter(|n| scope.contains(n)).collect(),
            });
        }
        self
    }

    /// Whether it takes an item of `source`, `event_type` and `outcome` (what a long poll is
    /// woken for).
    pub fn takes(&self, source: &str, event_type: Option<&str>, outcome: OutcomeKind) -> bool {
        self.outcomes().contains(&outcome)
            && self
                .sources
                .as_ref()
                .is_none_or(|s| s.iter().any(|n| n == source))
            && self.types.as_ref().is_none_or(|t| {
                event_type.is_some_and(|event_type| t.iter().any(|n| n == event_type))
            })
    }

    /// Its conditions on `webhook_events e`, with their values numbered from `next`.
    fn conditions(&self, dialect: Dialect, values: &mut Vec<Value>) -> String {
        // As a CASE, not `IN`: the planner guesses half the rows pass a condition it cannot
        // read, whatever it knows of the table. `IN` guessed 1% of a table never analyzed (a
        // day's table in its first minute, the benchmark's fresh database) and read every row
        // after the cursor, sorted, for each page, instead of the first of them in the index's
        // order.
        let outcomes: String = self
            .outcomes()
            .iter()
            .map(|o| format!(" WHEN '{}' THEN TRUE", o.as_str()))
            .collect();
        let mut sql = format!(" AND CASE e.outcome{outcomes} ELSE FALSE END");
        for (column, names) in [("e.source", &self.sources), ("e.event_type", &self.types)] {
            if let Some(names) = names {
                // A name with a NUL (a consumer stored before [`check_names`] refused it) matches
                // nothing, as no archived text holds one: left out, it breaks no statement.
                let names: Vec<&str> = names
                    .iter()
                    .map(String::as_str)
                    .filter(|n| !n.contains('\0'))
                    .collect();
                values.push(serde_json::Value::from(names).to_string().into());
                sql.push_str(&format!(
                    " AND {column} IN (SELECT value FROM {})",
                    dialect.json_strings(&format!("${}", values.len()))
                ));
            }
        }
        sql
    }
}

/// What a selection may name, checked before it is stored or read: its lists bounded, each name
/// non-empty, bounded and without control characters (a NUL breaks PostgreSQL's text).
pub fn check_names(what: &str, names: &[String]) -> Result<(), String> {
    if names.is_empty() {
        return Err(format!("{what} is empty; leave it out to take every one"));
    }
    if names.len() > MAX_NAMES {
        return Err(format!(
            "{what} names {} entries; at most {MAX_NAMES}",
            names.len()
        ));
    }
    if let Some(bad) = names
        .iter()
        .find(|n| n.is_empty() || n.len() > MAX_TYPE_BYTES)
    {
        return Err(format!(
            "{what} has an entry of {} bytes; each is 1 to {MAX_TYPE_BYTES}",
            bad.len()
        ));
    }
    // A NUL cannot be stored in PostgreSQL's text (nor any name hookbox archives), and no
    // control character names a source or a type.
    if let Some(bad) = names.iter().find(|n| n.chars().any(char::is_control)) {
        return Err(format!(
            "{what} has an entry with a control character ({bad:?}); names are printable text"
        ));
    }
    Ok(())
}

/// One item of the feed.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub cursor: Cursor,
    pub source: String,
    pub event_id: String,
    pub event_type: Option<String>,
    pub object_id: Option<String>,
    pub revision: Option<i64>,
    pub outcome: OutcomeKind,
    pub content: Content,
    pub received_at: DateTime<Utc>,
}

/// An item's content, as JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// The snapshot the event carried (a snapshot source).
    Snapshot(String),
    /// What a dedup source's delivery hands on: the body, or a form's fields
    /// ([`crate::ingest::payload_text`], as forwarding sends it).
    Payload(String),
}

/// A page of the feed.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub items: Vec<Item>,
    /// What the next read passes as its cursor: the last item's, or the one asked with.
    pub next: Cursor,
    /// Empty, while rows of transactions still running wait behind the horizon: a long poll
    /// looks again shortly rather than waiting for a wake-up.
    pub held_back: bool,
    /// As many items as asked for, or cut short by its bytes: more wait after it (the reader is
    /// catching up, not keeping up).
    pub full: bool,
}

/// Why a read has no page.
#[derive(Debug)]
pub enum FeedError {
    /// The cursor is before the archive's retention: the rows after it are gone. `oldest` is
    /// the earliest cursor still served.
    Gone {
        oldest: Cursor,
    },
    Db(DbErr),
}

impl From<DbErr> for FeedError {
    fn from(e: DbErr) -> Self {
        FeedError::Db(e)
    }
}

impl fmt::Display for FeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeedError::Gone { oldest } => write!(
                f,
                "the items after this cursor are past the archive's retention and gone; the oldest cursor still served is {oldest}"
            ),
            FeedError::Db(e) => write!(f, "{e}"),
        }
    }
}

/// The cursor after every item served now (whatever its selection): where `seek latest` goes.
pub async fn latest(db: &Db) -> Result<Cursor, DbErr> {
    match latest_served(db).await? {
        Some(served) => Ok(served),
        None => earliest(db, None).await,
    }
}

/// The place of the last row the feed serves now, if any.
async fn latest_served(db: &Db) -> Result<Option<Cursor>, DbErr> {
    let dialect = Dialect::of(db.backend());
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT feed_tx, id FROM webhook_events WHERE feed_tx < {}
                 ORDER BY feed_tx DESC, id DESC LIMIT 1",
                dialect.feed_horizon()
            ),
            vec![],
        ))
        .await?;
    row.map(|r| cursor_of(&r, "feed_tx", "id")).transpose()
}

/// The place of the last row of `sources` the feed serves now, if any: one look per source
/// down the index on (source, feed_tx, id).
async fn latest_served_of(db: &Db, sources: &[String]) -> Result<Option<Cursor>, DbErr> {
    let dialect = Dialect::of(db.backend());
    let sources: Vec<&str> = sources
        .iter()
        .map(String::as_str)
        .filter(|n| !n.contains('\0'))
        .collect();
    // Each source's last row, its two columns looked up alike (a scalar subquery each: SQLite
    // has no lateral join).
    let last = |column: &str| {
        format!(
            "(SELECT w.{column} FROM webhook_events w
              WHERE w.source = d.value AND w.feed_tx < {}
              ORDER BY w.feed_tx DESC, w.id DESC LIMIT 1)",
            dialect.feed_horizon()
        )
    };
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT {tx} AS feed_tx, {id} AS id FROM {names}",
                tx = last("feed_tx"),
                id = last("id"),
                names = dialect.json_strings("$1"),
            ),
            vec![serde_json::Value::from(sources).to_string().into()],
        ))
        .await?;
    let mut latest = None;
    for row in &rows {
        let (tx, id): (Option<i64>, Option<i64>) =
            (row.try_get("", "feed_tx")?, row.try_get("", "id")?);
        if let (Some(tx), Some(id)) = (tx, id) {
            latest = latest.max(Some(Cursor { tx, id }));
        }
    }
    Ok(latest)
}

/// The cursor just before the first delivery received at or after `at` (by its receipt time),
/// or [`latest`] when none was.
pub async fn at_time(
    db: &Db,
    at: DateTime<Utc>,
    sources: Option<&[String]>,
) -> Result<Cursor, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT feed_tx, id FROM webhook_events WHERE received_at >= $1
             ORDER BY received_at, id LIMIT 1",
            vec![at.into()],
        ))
        .await?;
    let found = match row {
        Some(row) => Cursor::before(cursor_of(&row, "feed_tx", "id")?),
        None => return latest(db).await,
    };
    Ok(found.max(earliest(db, sources).await?))
}

/// The items after `after` (from the oldest kept when `None`) that `selection` takes, at most
/// `limit` (1 to [`MAX_LIMIT`]) and about [`PAGE_BYTES`].
pub async fn read(
    db: &Db,
    after: Option<Cursor>,
    selection: &Selection,
    limit: usize,
) -> Result<Page, FeedError> {
    let purged = purged_through(&db.dashboard, selection.sources.as_deref()).await?;
    let after = match (after, purged) {
        (Some(after), Some(purged)) if after < purged => {
            return Err(FeedError::Gone { oldest: purged });
        }
        (Some(after), _) => after,
        (None, _) => Cursor::START,
    };
    let limit = limit.clamp(1, MAX_LIMIT);
    let dialect = Dialect::of(db.backend());
    // The latest place served before this read: if the read finds nothing after `after`, the
    // selection has nothing up to it either (a row that becomes served later sorts after it), so
    // an empty page moves the reader there, and a quiet selection keeps up with the retention.
    // A reader of some sources is moved only by their rows, so its empty pages tell nothing of
    // the others' traffic; and at least to the purge's place (itself past the retention), so a
    // quiet reader is never left behind it.
    let served = match &selection.scope {
        None => latest_served(db).await?,
        Some(scope) => latest_served_of(db, scope).await?.max(purged),
    };
    // One statement: the page's places in a LIMITed subquery (a plan that joined first would
    // read every row after the cursor to sort them, on an archive laid out by day), each
    // place's content looked up by its keys (a scalar subquery: never a join the planner could
    // turn into a scan of the whole inbox or day), and the items cut at the page's bytes by a
    // running sum, so an item past the cut is never converted to text. A duplicate stores no
    // body of its own but carries its event's snapshot (or the body it refers to), and counts
    // as that. The limit is written into the statement (an integer of 1 to 500): as a
    // parameter, the plan kept for every limit guessed a third of the archive.
    let mut values: Vec<Value> = vec![after.tx.into(), after.id.into()];
    let conditions = selection.conditions(dialect, &mut values);
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!(
                "SELECT p.id, p.feed_tx, p.source, p.event_id, p.event_type, p.object_id,
                        p.revision, p.outcome, p.received_at, p.body, p.body_fields,
                        {snapshot} AS snapshot, p.body_expired_at, p.places
                 FROM (SELECT e.*,
                              SUM({bytes}) OVER (ORDER BY e.feed_tx, e.id
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before,
                              COUNT(*) OVER () AS places
                       FROM (SELECT e.id, e.feed_tx, e.source, e.event_id, e.event_type,
                                    e.object_id, e.revision, e.outcome, e.received_at,
                                    e.body_expired_at, {CONTENT}
                             FROM webhook_events e
                             WHERE (e.feed_tx, e.id) > ($1, $2) AND e.feed_tx < {horizon}{conditions}
                             ORDER BY e.feed_tx, e.id LIMIT {limit}) AS e) AS p
                 WHERE COALESCE(p.before, 0) < {PAGE_BYTES}
                 ORDER BY p.feed_tx, p.id",
                snapshot = dialect.json_text("p.snap"),
                bytes = carried_bytes(dialect),
                horizon = dialect.feed_horizon(),
            ),
            values,
        ))
        .await?;
    let Some(first) = rows.first() else {
        return Ok(Page {
            items: Vec::new(),
            next: served.map_or(after, |served| served.max(after)),
            held_back: held_back(db, after).await?,
            full: false,
        });
    };
    let places = usize::try_from(first.try_get::<i64>("", "places")?).unwrap_or(0);
    let items = rows.iter().map(item_of).collect::<Result<Vec<_>, _>>()?;
    let next = items.last().map_or(after, |i| i.cursor);
    Ok(Page {
        // As many places as asked for, or cut short by the page's bytes.
        full: places >= limit || items.len() < places,
        items,
        next,
        held_back: false,
    })
}

/// What an item's content comes from, looked up by its keys for each place: its event's snapshot
/// in the inbox (`snap`), and its body and a form's fields, a duplicate's from the earlier row
/// whose identical body it refers to (`body_of`; its own if that row is gone).
const CONTENT: &str = "(SELECT i.snapshot FROM webhook_inbox i
                                     WHERE i.source = e.source AND i.event_id = e.event_id) AS snap,
                                    CASE WHEN e.body_of IS NULL THEN e.body
                                         ELSE COALESCE((SELECT o.body FROM webhook_events o
                                                        WHERE o.id = e.body_of), e.body)
                                    END AS body,
                                    CASE WHEN e.body_of IS NULL THEN e.body_fields
                                         ELSE (SELECT o.body_fields FROM webhook_events o
                                               WHERE o.id = e.body_of)
                                    END AS body_fields";

/// The bytes an item carries (what [`item_of`] makes its content of): the snapshot's text,
/// else the form's fields, else the body.
fn carried_bytes(dialect: Dialect) -> String {
    format!(
        "CASE WHEN e.snap IS NOT NULL THEN {snapshot}
              WHEN e.body_fields IS NOT NULL THEN {fields}
              ELSE COALESCE({body}, 0) END",
        snapshot = dialect.text_bytes(&dialect.json_text("e.snap")),
        fields = dialect.text_bytes("e.body_fields"),
        body = dialect.byte_length("e.body"),
    )
}

pub(crate) fn cursor_of(row: &QueryResult, tx: &str, id: &str) -> Result<Cursor, DbErr> {
    Ok(Cursor {
        tx: row.try_get("", tx)?,
        id: row.try_get("", id)?,
    })
}

fn item_of(row: &QueryResult) -> Result<Item, DbErr> {
    let outcome: OutcomeKind = row.try_get("", "outcome")?;
    let snapshot: Option<String> = row.try_get("", "snapshot")?;
    let expired = row
        .try_get::<Option<DateTime<Utc>>>("", "body_expired_at")?
        .is_some();
    let content = match snapshot {
        Some(snapshot) => Content::Snapshot(snapshot),
        // A dedup source's body past its body retention: nothing left to hand on.
        None if expired => Content::Payload("null".into()),
        None => {
            let body: Vec<u8> = row.try_get("", "body")?;
            let fields: Option<String> = row.try_get("", "body_fields")?;
            Content::Payload(crate::ingest::payload_text(fields.as_deref(), &body))
        }
    };
    Ok(Item {
        cursor: cursor_of(row, "feed_tx", "id")?,
        source: row.try_get("", "source")?,
        event_id: row
            .try_get::<Option<String>>("", "event_id")?
            .unwrap_or_default(),
        event_type: row.try_get("", "event_type")?,
        object_id: row.try_get("", "object_id")?,
        revision: row.try_get("", "revision")?,
        outcome,
        content,
        received_at: row.try_get("", "received_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_written_and_nothing_else_reads() {
        let cursor = Cursor { tx: 7_304, id: 12 };
        assert_eq!(Cursor::parse(&cursor.to_string()), Some(cursor));
        for bad in [
            "",
            "1",
            "1.",
            ".1",
            "a.1",
            "1.-1",
            "1.2.3",
            " 1.2",
            "99999999999999999999.1",
        ] {
            assert_eq!(Cursor::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cursors_order_by_transaction_then_id() {
        let a = Cursor { tx: 5, id: 900 };
        let b = Cursor { tx: 6, id: 10 };
        assert!(a < b);
        assert!(Cursor::before(b) < b && a < Cursor::before(b));
    }
}
