//! Named consumers of the feed: hookbox keeps each one's selection and committed cursor, so a
//! reader restarts where it left off, and an optional lease keeps two copies of one consumer
//! from reading at once.
//!
//! - A commit never moves back (a cursor before the committed one is refused), and never past
//!   what the feed has served.
//! - A seek moves anywhere: the earliest cursor kept, the latest, or a time.
//! - A lease is taken (or renewed) by a read naming its holder and lasts [`LEASE`]; while it is
//!   live, a read, commit or seek by anyone else is refused.
//! - A consumer belongs to the API token that created it (`owner`); the API lets only it, or an
//!   operator's token, use it. Creating one, changing its selection, seeking and deleting it are
//!   audited (commits, the hot path, are not).
//! - At most [`MAX_CONSUMERS`] exist, at most [`MAX_CONSUMERS_PER_OWNER`] of one token; lag
//!   ([`lag`]) looks at a bounded window of the archive per consumer.

mod lag;

pub use lag::{LAG_SCAN, Lag, lag, lags};

use super::{Cursor, FeedError, Page, Selection, read};
use crate::db::Db;
use crate::db::audit::{AuditEntry, audit};
use crate::db::dialect::Dialect;
use crate::model::AuditAction;
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr, QueryResult, TransactionTrait};

/// The most consumers a database holds.
pub const MAX_CONSUMERS: i64 = 100;

/// The most consumers one API token owns (its share of [`MAX_CONSUMERS`]).
pub const MAX_CONSUMERS_PER_OWNER: i64 = 20;

/// How long a lease lasts after the read or commit that took or renewed it.
pub const LEASE: Duration = Duration::seconds(30);

/// The longest consumer name and lease holder, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// A consumer as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Consumer {
    pub name: String,
    pub sources: Option<Vec<String>>,
    pub types: Option<Vec<String>>,
    pub committed: Cursor,
    pub committed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    /// The API token that created it (`api_tokens.id`); none for one made before owners were
    /// kept, or not through the API.
    pub owner: Option<i64>,
    pub lease_holder: Option<String>,
    pub lease_until: Option<DateTime<Utc>>,
}

impl Consumer {
    /// What it reads.
    pub fn selection(&self) -> Selection {
        Selection {
            sources: self.sources.clone(),
            types: self.types.clone(),
            ..Selection::default()
        }
    }

    /// The holder of its lease, while the lease is live.
    pub fn leased_to(&self, now: DateTime<Utc>) -> Option<&str> {
        match (&self.lease_holder, self.lease_until) {
            (Some(holder), Some(until)) if until > now => Some(holder),
            _ => None,
        }
    }
}

/// Where a seek goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seek {
    Earliest,
    Latest,
    Time(DateTime<Utc>),
}

/// Why a consumer's request was refused.
#[derive(Debug)]
pub enum ConsumerError {
    NotFound(String),
    /// [`MAX_CONSUMERS`] exist already.
    TooMany,
    /// The token owns [`MAX_CONSUMERS_PER_OWNER`] already.
    TooManyOfOwner,
    /// The commit is before the committed cursor.
    Backwards {
        committed: Cursor,
    },
    /// The commit is past anything the feed has served.
    NotServed {
        latest: Cursor,
    },
    /// Another holder's lease is live.
    Leased {
        until: DateTime<Utc>,
    },
    /// The committed cursor is before the archive's retention.
    Gone {
        oldest: Cursor,
    },
    Db(DbErr),
}

impl From<DbErr> for ConsumerError {
    fn from(e: DbErr) -> Self {
        ConsumerError::Db(e)
    }
}

impl std::fmt::Display for ConsumerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConsumerError::NotFound(name) => write!(f, "there is no consumer {name:?}"),
            ConsumerError::TooMany => write!(
                f,
                "there are {MAX_CONSUMERS} consumers already, the most hookbox keeps; an operator deletes one first"
            ),
            ConsumerError::TooManyOfOwner => write!(
                f,
                "this token owns {MAX_CONSUMERS_PER_OWNER} consumers already, the most one token may (of the {MAX_CONSUMERS} hookbox keeps); an operator deletes one first"
            ),
            ConsumerError::Backwards { committed } => write!(
                f,
                "the cursor is before the consumer's committed cursor {committed}; a commit never moves back (seek does)"
            ),
            ConsumerError::NotServed { latest } => write!(
                f,
                "the cursor is past anything the feed has served (the latest is {latest}); commit a cursor a read returned"
            ),
            ConsumerError::Leased { until } => write!(
                f,
                "another reader holds this consumer's lease until {}; wait for it, or pass that reader's lease",
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
            ConsumerError::Gone { oldest } => write!(
                f,
                "the consumer's committed cursor is past the archive's retention; seek it (the oldest cursor still served is {oldest})"
            ),
            ConsumerError::Db(e) => write!(f, "{e}"),
        }
    }
}

/// A consumer's name or a lease holder: 1 to [`MAX_NAME_BYTES`] letters, digits, `.`, `_`, `-`.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > MAX_NAME_BYTES
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(format!(
            "{what} is 1 to {MAX_NAME_BYTES} letters, digits, '.', '_' or '-'"
        ));
    }
    Ok(())
}

const COLUMNS: &str = "name, sources, types, committed_tx, committed_id, committed_at, created_at,
    created_by, owner_token_id, lease_holder, lease_until";

/// Who puts a consumer: `actor` (for `created_by` and the audit log), the API token that owns
/// what it creates (`owner`), and whether it may change a consumer another token owns.
#[derive(Debug, Clone, Copy)]
pub struct Putter<'a> {
    pub actor: &'a str,
    pub owner: Option<i64>,
    pub manages_any: bool,
}

/// Creates the consumer at the earliest cursor kept, owned by `by.owner`, or changes the
/// selection of the one of that name (its cursor and owner stay); `true` when it was created.
/// Either is audited. A consumer of another owner, unless `by.manages_any`, is
/// [`ConsumerError::NotFound`].
pub async fn put(
    db: &Db,
    name: &str,
    selection: &Selection,
    by: Putter<'_>,
) -> Result<(Consumer, bool), ConsumerError> {
    let before = get(db, name).await?;
    let start = super::earliest(db, selection.sources.as_deref()).await?;
    let json = |names: &Option<Vec<String>>| {
        names
            .as_ref()
            .map(|n| serde_json::Value::from(n.clone()).to_string())
    };
    // Creations count the consumers, then insert: concurrent ones take turns, or each would
    // count the same rows and together pass the caps. Within a process they wait here, holding
    // no connection; across processes one of each waits for the database's lock.
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = TURN.lock().await;
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    if let Some(lock) = Dialect::of(db.backend()).lock_key("'feed_consumers'") {
        txn.execute_unprepared(&lock).await?;
    }
    let result = txn
        .execute_raw(crate::db::statement(
            db.backend(),
            format!(
                "INSERT INTO feed_consumers (name, sources, types, committed_tx, committed_id,
                     created_at, created_by, owner_token_id)
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8
                 WHERE EXISTS (SELECT 1 FROM feed_consumers WHERE name = $1)
                    OR ((SELECT count(*) FROM feed_consumers) < {MAX_CONSUMERS}
                        AND (SELECT count(*) FROM feed_consumers WHERE owner_token_id = $8)
                            < {MAX_CONSUMERS_PER_OWNER})
                 ON CONFLICT (name) DO UPDATE SET sources = excluded.sources,
                     types = excluded.types
                 WHERE $9 OR feed_consumers.owner_token_id = $8"
            ),
            vec![
                name.into(),
                json(&selection.sources).into(),
                json(&selection.types).into(),
                start.tx.into(),
                start.id.into(),
                Utc::now().into(),
                by.actor.into(),
                by.owner.into(),
                by.manages_any.into(),
            ],
        ))
        .await?;
    txn.commit().await?;
    drop(writer);
    let consumer = get(db, name).await?;
    if result.rows_affected() == 0 {
        return Err(match consumer {
            // Another token's (created meanwhile, or all along).
            Some(_) => ConsumerError::NotFound(name.to_string()),
            None if owned_by(db, by.owner).await? >= MAX_CONSUMERS_PER_OWNER => {
                ConsumerError::TooManyOfOwner
            }
            None => ConsumerError::TooMany,
        });
    }
    let consumer = consumer.ok_or_else(|| ConsumerError::NotFound(name.to_string()))?;
    let shown = |c: &Consumer| {
        let list = |names: &Option<Vec<String>>| json(names).unwrap_or_else(|| "all".into());
        format!("sources {}, types {}", list(&c.sources), list(&c.types))
    };
    let (action, detail) = match &before {
        None => (AuditAction::CreateFeedConsumer, shown(&consumer)),
        Some(before) => (
            AuditAction::ChangeFeedConsumer,
            format!("from {} to {}", shown(before), shown(&consumer)),
        ),
    };
    audit(
        db,
        AuditEntry {
            actor: by.actor,
            action,
            target: Some(name),
            outcome: "succeeded",
            detail: Some(&detail),
            address: None,
        },
    )
    .await?;
    Ok((consumer, before.is_none()))
}

/// How many consumers the token `owner` owns (0 for none).
async fn owned_by(db: &Db, owner: Option<i64>) -> Result<i64, DbErr> {
    let Some(owner) = owner else {
        return Ok(0);
    };
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT count(*) AS n FROM feed_consumers WHERE owner_token_id = $1",
            vec![owner.into()],
        ))
        .await?;
    Ok(row
        .map(|r| r.try_get::<i64>("", "n"))
        .transpose()?
        .unwrap_or(0))
}

/// The consumer of that name.
pub async fn get(db: &Db, name: &str) -> Result<Option<Consumer>, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            format!("SELECT {COLUMNS} FROM feed_consumers WHERE name = $1"),
            vec![name.into()],
        ))
        .await?;
    row.as_ref().map(consumer_of).transpose()
}

/// Every consumer, by name (at most [`MAX_CONSUMERS`]).
pub async fn list(db: &Db) -> Result<Vec<Consumer>, DbErr> {
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(
            db.backend(),
            format!("SELECT {COLUMNS} FROM feed_consumers ORDER BY name LIMIT {MAX_CONSUMERS}"),
            vec![],
        ))
        .await?;
    rows.iter().map(consumer_of).collect()
}

/// Deletes the consumer, audited as `actor`'s; `false` when there was none.
pub async fn delete(db: &Db, name: &str, actor: &str) -> Result<bool, DbErr> {
    let writer = db.dashboard_writer().await?;
    let result = writer
        .execute_raw(crate::db::statement(
            db.backend(),
            "DELETE FROM feed_consumers WHERE name = $1",
            vec![name.into()],
        ))
        .await?;
    drop(writer);
    let deleted = result.rows_affected() > 0;
    if deleted {
        audit(
            db,
            AuditEntry {
                actor,
                action: AuditAction::DeleteFeedConsumer,
                target: Some(name),
                outcome: "succeeded",
                detail: None,
                address: None,
            },
        )
        .await?;
    }
    Ok(deleted)
}

/// The consumer's next items from its committed cursor, through `selection` (its own, narrowed
/// by the caller's scope); `holder` takes or renews its lease.
pub async fn items(
    db: &Db,
    name: &str,
    holder: Option<&str>,
    selection: &Selection,
    limit: usize,
) -> Result<(Consumer, Page), ConsumerError> {
    let consumer = lease(db, name, holder).await?;
    let page = read(db, Some(consumer.committed), selection, limit)
        .await
        .map_err(|e| match e {
            FeedError::Gone { oldest } => ConsumerError::Gone { oldest },
            FeedError::Db(e) => ConsumerError::Db(e),
        })?;
    Ok((consumer, page))
}

/// Moves the committed cursor forward to `cursor` (the same cursor again is a no-op).
pub async fn commit(
    db: &Db,
    name: &str,
    cursor: Cursor,
    holder: Option<&str>,
) -> Result<Consumer, ConsumerError> {
    let consumer = lease(db, name, holder).await?;
    if cursor < consumer.committed {
        return Err(ConsumerError::Backwards {
            committed: consumer.committed,
        });
    }
    if cursor == consumer.committed {
        return Ok(consumer);
    }
    let latest = super::latest(db).await?;
    if cursor > latest {
        return Err(ConsumerError::NotServed { latest });
    }
    move_to(db, &consumer, cursor, true).await
}

/// Moves the committed cursor to where `to` says, backwards or forwards; audited as `actor`'s
/// (a seek back makes items come again, a seek forward skips them).
pub async fn seek(
    db: &Db,
    name: &str,
    to: Seek,
    holder: Option<&str>,
    actor: &str,
) -> Result<Consumer, ConsumerError> {
    let consumer = lease(db, name, holder).await?;
    let cursor = match to {
        Seek::Earliest => super::earliest(db, consumer.selection().sources.as_deref()).await?,
        Seek::Latest => super::latest(db).await?,
        Seek::Time(at) => super::at_time(db, at, consumer.selection().sources.as_deref()).await?,
    };
    let moved = move_to(db, &consumer, cursor, false).await?;
    let detail = format!("from {} to {}", consumer.committed, moved.committed);
    audit(
        db,
        AuditEntry {
            actor,
            action: AuditAction::SeekFeedConsumer,
            target: Some(name),
            outcome: "succeeded",
            detail: Some(&detail),
            address: None,
        },
    )
    .await?;
    Ok(moved)
}

/// Sets the committed cursor; `forward_only`: unless another commit moved it past `cursor`
/// meanwhile.
async fn move_to(
    db: &Db,
    consumer: &Consumer,
    cursor: Cursor,
    forward_only: bool,
) -> Result<Consumer, ConsumerError> {
    let condition = if forward_only {
        " AND (committed_tx, committed_id) <= ($1, $2)"
    } else {
        ""
    };
    let writer = db.dashboard_writer().await?;
    let result = writer
        .execute_raw(crate::db::statement(
            db.backend(),
            format!(
                "UPDATE feed_consumers SET committed_tx = $1, committed_id = $2, committed_at = $3
                 WHERE name = $4{condition}"
            ),
            vec![
                cursor.tx.into(),
                cursor.id.into(),
                Utc::now().into(),
                consumer.name.as_str().into(),
            ],
        ))
        .await?;
    drop(writer);
    let now = get(db, &consumer.name)
        .await?
        .ok_or_else(|| ConsumerError::NotFound(consumer.name.clone()))?;
    if result.rows_affected() == 0 {
        // A commit raced past this one.
        return Err(ConsumerError::Backwards {
            committed: now.committed,
        });
    }
    Ok(now)
}

/// Renews `holder`'s lease of the consumer (after a long poll, so the lease outlasts the
/// answer by [`LEASE`]).
pub async fn renew_lease(db: &Db, name: &str, holder: &str) -> Result<(), ConsumerError> {
    lease(db, name, Some(holder)).await.map(|_| ())
}

/// The consumer, once its lease allows the caller: `holder` takes or renews it; without one,
/// only while nobody holds it.
async fn lease(db: &Db, name: &str, holder: Option<&str>) -> Result<Consumer, ConsumerError> {
    let now = Utc::now();
    let consumer = get(db, name)
        .await?
        .ok_or_else(|| ConsumerError::NotFound(name.to_string()))?;
    let Some(holder) = holder else {
        return match (consumer.leased_to(now), consumer.lease_until) {
            (Some(_), Some(until)) => Err(ConsumerError::Leased { until }),
            _ => Ok(consumer),
        };
    };
    let writer = db.dashboard_writer().await?;
    let result = writer
        .execute_raw(crate::db::statement(
            db.backend(),
            "UPDATE feed_consumers SET lease_holder = $1, lease_until = $2
             WHERE name = $3 AND (lease_holder IS NULL OR lease_holder = $1 OR lease_until <= $4)",
            vec![holder.into(), (now + LEASE).into(), name.into(), now.into()],
        ))
        .await?;
    drop(writer);
    let consumer = get(db, name)
        .await?
        .ok_or_else(|| ConsumerError::NotFound(name.to_string()))?;
    if result.rows_affected() == 0 {
        return Err(ConsumerError::Leased {
            until: consumer.lease_until.unwrap_or(now),
        });
    }
    Ok(consumer)
}

fn consumer_of(row: &QueryResult) -> Result<Consumer, DbErr> {
    let names = |column: &str| -> Result<Option<Vec<String>>, DbErr> {
        row.try_get::<Option<String>>("", column)?
            .map(|text| {
                serde_json::from_str(&text)
                    .map_err(|e| DbErr::Custom(format!("feed_consumers.{column}: {e}")))
            })
            .transpose()
    };
    Ok(Consumer {
        name: row.try_get("", "name")?,
        sources: names("sources")?,
        types: names("types")?,
        committed: super::cursor_of(row, "committed_tx", "committed_id")?,
        committed_at: row.try_get("", "committed_at")?,
        created_at: row.try_get("", "created_at")?,
        created_by: row.try_get("", "created_by")?,
        owner: row.try_get("", "owner_token_id")?,
        lease_holder: row.try_get("", "lease_holder")?,
        lease_until: row.try_get("", "lease_until")?,
    })
}
