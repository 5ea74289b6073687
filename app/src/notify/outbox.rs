//! The outbox of notifications: a change recorded in its transaction ([`record`]), handed to
//! each channel that wants it ([`fan_out`]), claimed a subject at a time with the changes a
//! message will stand for ([`claim`]), and settled by what the channel answered ([`settle`]).
//!
//! Sent exactly once per change and channel: a change is a row written with the change that
//! caused it; a channel's copy is made once (unique per change and channel) and claimed under a
//! lease by one process at a time (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: one writer).
//! A process killed after a channel took a message and before it recorded so sends it again
//! when the lease ends (the `webhook` kind carries the same `webhook-id` both times).

use crate::config::Channel;
use crate::db::Db;
use crate::db::dialect::Dialect;
use crate::db::statement;
use crate::model::{NotificationStatus, NotifyEvent};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait, Value};

/// How long a channel is tried before its message is given up (`failed`).
pub const GIVE_UP_AFTER: Duration = Duration::hours(24);
/// The waits between attempts: from 10 s, doubling, at most 15 minutes.
pub fn backoff(attempts: i32) -> Duration {
    let doublings = u32::try_from(attempts.clamp(1, 8) - 1).unwrap_or(0);
    Duration::seconds((10_i64 << doublings).min(900))
}

/// Changes handed to the channels a round, at most.
const FAN_OUT_BATCH: u64 = 100;

/// Hands the changes not yet handed to each channel of `channels` that wants them (by event and
/// source): a pending copy per channel. A change older than [`GIVE_UP_AFTER`] goes to no channel
/// (one configured long after it, on a database where none was, is not told of the past).
/// Answers how many changes it handed.
pub async fn fan_out(db: &Db, channels: &[Channel]) -> Result<usize, DbErr> {
    let dialect = Dialect::of(db.backend());
    let txn = db.writer.begin().await?;
    let rows = txn
        .query_all_raw(statement(
            dialect,
            format!(
                "SELECT id, event, subject, source, changes, created_at FROM notifications
                 WHERE NOT fanned_out ORDER BY id LIMIT {FAN_OUT_BATCH}{}",
                dialect.lock_skipping_locked()
            ),
            vec![],
        ))
        .await?;
    let now = crate::clock::now();
    for row in &rows {
        let id: i64 = row.try_get("", "id")?;
        let event: String = row.try_get("", "event")?;
        let source: String = row.try_get("", "source")?;
        let subject: String = row.try_get("", "subject")?;
        let changes: i64 = row.try_get("", "changes")?;
        let created_at: DateTime<Utc> = row.try_get("", "created_at")?;
        let event = NotifyEvent::parse(&event).filter(|_| now - created_at < GIVE_UP_AFTER);
        for channel in channels
            .iter()
            .filter(|c| event.is_some_and(|e| c.wants(e, &source)))
        {
            txn.execute_raw(statement(
                dialect,
                format!(
                    "INSERT INTO notification_sends
                        (notification_id, channel, subject, changes, status, next_attempt_at, created_at)
                     VALUES ($1, $2, $3, $4, '{pending}', $5, $5)
                     ON CONFLICT (notification_id, channel) DO NOTHING",
                    pending = NotificationStatus::Pending.as_str()
                ),
                vec![
                    id.into(),
                    channel.name.clone().into(),
                    subject.clone().into(),
                    changes.into(),
                    now.into(),
                ],
            ))
            .await?;
        }
        txn.execute_raw(statement(
            dialect,
            "UPDATE notifications SET fanned_out = TRUE WHERE id = $1",
            vec![id.into()],
        ))
        .await?;
    }
    txn.commit().await?;
    Ok(rows.len())
}

/// A message claimed for a channel: the newest change of a subject, and the copies it stands
/// for (the older ones are folded into it when it is sent).
#[derive(Debug, Clone)]
pub struct Claimed {
    pub channel: String,
    pub subject: String,
    /// The newest copy: the message's id (`webhook-id`), event and facts.
    pub id: i64,
    pub event: NotifyEvent,
    pub facts: String,
    /// Every copy it stands for, the newest included.
    pub copies: Vec<i64>,
    /// The changes they stand for.
    pub changes: i64,
    /// How many times it was tried already, and when the oldest copy was made.
    pub attempts: i32,
    pub since: DateTime<Utc>,
}

/// Subjects claimed a round per channel, at most.
const CLAIM_BATCH: u64 = 20;

/// Claims, for `channel`, the subjects with a copy due and no message sent within its
/// `min_interval_secs`, each with every pending copy, leased to `worker` for `lease`. A subject
/// whose interval has not passed is put off until it has (its copies wait, to be folded).
pub async fn claim(
    db: &Db,
    channel: &Channel,
    worker: &str,
    lease: std::time::Duration,
) -> Result<Vec<Claimed>, DbErr> {
    let dialect = Dialect::of(db.backend());
    let now = crate::clock::now();
    let lease_until = now + Duration::from_std(lease).unwrap_or(Duration::seconds(60));
    let interval = Duration::seconds(i64::try_from(channel.min_interval_secs).unwrap_or(0));
    let pending = NotificationStatus::Pending.as_str();
    let txn = db.writer.begin().await?;
    let due = txn
        .query_all_raw(statement(
            dialect,
            format!(
                "SELECT id, subject FROM notification_sends
                 WHERE channel = $1 AND status = '{pending}' AND next_attempt_at <= $2
                   AND (lease_until IS NULL OR lease_until < $2)
                 ORDER BY next_attempt_at, id LIMIT {CLAIM_BATCH}{}",
                dialect.lock_skipping_locked()
            ),
            vec![channel.name.clone().into(), now.into()],
        ))
        .await?;
    let mut subjects: Vec<String> = Vec::new();
    for row in &due {
        let subject: String = row.try_get("", "subject")?;
        if !subjects.contains(&subject) {
            subjects.push(subject);
        }
    }
    let mut claimed = Vec::new();
    for subject in subjects {
        let at = Leasing {
            now,
            interval,
            lease_until,
            worker,
        };
        if let Some(one) = claim_subject(&txn, channel, &subject, &at).await? {
            claimed.push(one);
        }
    }
    txn.commit().await?;
    Ok(claimed)
}

/// When a round of claims runs, and what its leases are.
struct Leasing<'a> {
    now: DateTime<Utc>,
    interval: Duration,
    lease_until: DateTime<Utc>,
    worker: &'a str,
}

/// Claims `subject` for `channel` in `txn`: every pending copy leased, when no other process
/// is deciding about it and no message of it was sent within the interval (else its copies are
/// put off until then).
async fn claim_subject(
    txn: &sea_orm::DatabaseTransaction,
    channel: &Channel,
    subject: &str,
    at: &Leasing<'_>,
) -> Result<Option<Claimed>, DbErr> {
    let dialect = Dialect::of(txn.get_database_backend());
    let pending = NotificationStatus::Pending.as_str();
    let (now, interval, lease_until, worker) = (at.now, at.interval, at.lease_until, at.worker);
    // One process at a time decides about a subject: another's leases are committed, and
    // seen, before this lock is taken again.
    let locked: i32 = txn
        .query_one_raw(statement(
            dialect,
            format!(
                "SELECT CASE WHEN {} THEN 1 ELSE 0 END AS locked",
                dialect.try_lock_key("$1")
            ),
            vec![format!("notify/{}/{subject}", channel.name).into()],
        ))
        .await?
        .map_or(Ok(0), |row| row.try_get("", "locked"))?;
    if locked != 1 {
        return Ok(None);
    }
    let key = vec![channel.name.clone().into(), subject.into()];
    let last_sent: Option<DateTime<Utc>> = txn
        .query_one_raw(statement(
            dialect,
            format!(
                "SELECT max(sent_at) AS at FROM notification_sends
                 WHERE channel = $1 AND subject = $2 AND status = '{}'",
                NotificationStatus::Sent.as_str()
            ),
            key.clone(),
        ))
        .await?
        .map(|row| row.try_get("", "at"))
        .transpose()?
        .flatten();
    if let Some(last) = last_sent
        && last + interval > now
    {
        put_off(txn, &key, last + interval).await?;
        return Ok(None);
    }
    let copies = txn
        .query_all_raw(statement(
            dialect,
            format!(
                "SELECT s.id, s.changes, s.attempts, s.created_at, n.event, n.facts
                 FROM notification_sends s JOIN notifications n ON n.id = s.notification_id
                 WHERE s.channel = $1 AND s.subject = $2 AND s.status = '{pending}'
                   AND (s.lease_until IS NULL OR s.lease_until < $3)
                 ORDER BY s.id"
            ),
            vec![key[0].clone(), key[1].clone(), now.into()],
        ))
        .await?;
    let Some(newest) = copies.last() else {
        return Ok(None);
    };
    let event: String = newest.try_get("", "event")?;
    let mut one = Claimed {
        channel: channel.name.clone(),
        subject: subject.to_string(),
        id: newest.try_get("", "id")?,
        event: NotifyEvent::parse(&event)
            .ok_or_else(|| DbErr::Type(format!("no notification event {event}")))?,
        facts: newest.try_get("", "facts")?,
        copies: Vec::with_capacity(copies.len()),
        changes: 0,
        attempts: 0,
        since: now,
    };
    for copy in &copies {
        one.copies.push(copy.try_get("", "id")?);
        one.changes += copy.try_get::<i64>("", "changes")?;
        one.attempts = one.attempts.max(copy.try_get("", "attempts")?);
        one.since = one.since.min(copy.try_get("", "created_at")?);
    }
    lease_copies(txn, &one.copies, lease_until, worker).await?;
    Ok(Some(one))
}

/// The pending copies of (channel, subject) `key` wait until `until`.
async fn put_off<C: ConnectionTrait>(
    conn: &C,
    key: &[Value],
    until: DateTime<Utc>,
) -> Result<(), DbErr> {
    conn.execute_raw(statement(
        conn.get_database_backend(),
        format!(
            "UPDATE notification_sends SET next_attempt_at = $3
             WHERE channel = $1 AND subject = $2 AND status = '{}' AND next_attempt_at < $3",
            NotificationStatus::Pending.as_str()
        ),
        vec![key[0].clone(), key[1].clone(), until.into()],
    ))
    .await?;
    Ok(())
}

async fn lease_copies<C: ConnectionTrait>(
    conn: &C,
    ids: &[i64],
    until: DateTime<Utc>,
    worker: &str,
) -> Result<(), DbErr> {
    let dialect = Dialect::of(conn.get_database_backend());
    conn.execute_raw(statement(
        dialect,
        format!(
            "UPDATE notification_sends SET lease_until = $1, leased_by = $2 WHERE id {}",
            dialect.among_ids("$3")
        ),
        vec![until.into(), worker.into(), dialect.id_list(ids).into()],
    ))
    .await?;
    Ok(())
}

/// What became of a claimed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// The channel took it: the newest copy sent, the older ones folded into it.
    Sent,
    /// The channel did not: tried again after a wait.
    Retry,
    /// Not taken within [`GIVE_UP_AFTER`]: every copy failed.
    GaveUp,
}

/// Settles `claimed` by what the channel answered (`error`: why it did not take it).
pub async fn settle(db: &Db, claimed: &Claimed, error: Option<&str>) -> Result<Settled, DbErr> {
    let dialect = Dialect::of(db.backend());
    let now = crate::clock::now();
    let txn = db.writer.begin().await?;
    let among = dialect.among_ids("$1");
    let ids: Value = dialect.id_list(&claimed.copies).into();
    let settled = match error {
        None => {
            txn.execute_raw(statement(
                dialect,
                format!(
                    "UPDATE notification_sends
                     SET status = CASE WHEN id = $2 THEN '{sent}' ELSE '{folded}' END,
                         folded_into = CASE WHEN id = $2 THEN NULL ELSE $2 END,
                         sent_at = CASE WHEN id = $2 THEN $3 ELSE NULL END,
                         attempts = attempts + 1, lease_until = NULL, leased_by = NULL
                     WHERE id {among}",
                    sent = NotificationStatus::Sent.as_str(),
                    folded = NotificationStatus::Folded.as_str(),
                ),
                vec![ids, claimed.id.into(), now.into()],
            ))
            .await?;
            Settled::Sent
        }
        Some(error) => {
            let gave_up = now - claimed.since >= GIVE_UP_AFTER;
            let status = if gave_up {
                NotificationStatus::Failed
            } else {
                NotificationStatus::Pending
            };
            let error = crate::headers::cut(error, 500);
            txn.execute_raw(statement(
                dialect,
                format!(
                    "UPDATE notification_sends
                     SET status = $2, attempts = attempts + 1, last_error = $3,
                         next_attempt_at = $4, lease_until = NULL, leased_by = NULL
                     WHERE id {among}"
                ),
                vec![
                    ids,
                    status.as_str().into(),
                    error.into(),
                    (now + backoff(claimed.attempts + 1)).into(),
                ],
            ))
            .await?;
            if gave_up {
                Settled::GaveUp
            } else {
                Settled::Retry
            }
        }
    };
    txn.commit().await?;
    Ok(settled)
}

/// The messages waiting per channel: how many, since when, and the last error of one whose
/// last attempt failed (`None`: none failed yet). For `hookbox_notifications_pending` and the
/// overview's failing channels.
pub async fn waiting(db: &Db) -> Result<Vec<Waiting>, DbErr> {
    let pending = NotificationStatus::Pending.as_str();
    let rows = db
        .dashboard
        .query_all_raw(statement(
            db.backend(),
            format!(
                "SELECT w.channel, w.n, w.since,
                        (SELECT s.last_error FROM notification_sends s
                         WHERE s.channel = w.channel AND s.status = '{pending}'
                           AND s.last_error IS NOT NULL
                         ORDER BY s.id DESC LIMIT 1) AS last_error
                 FROM (SELECT channel, count(*) AS n, min(created_at) AS since
                       FROM notification_sends WHERE status = '{pending}' GROUP BY channel) w
                 ORDER BY w.channel"
            ),
            vec![],
        ))
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Waiting {
                channel: row.try_get("", "channel")?,
                count: row.try_get("", "n")?,
                since: row.try_get("", "since")?,
                last_error: row.try_get("", "last_error")?,
            })
        })
        .collect()
}

/// What waits for one channel.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub channel: String,
    pub count: i64,
    pub since: DateTime<Utc>,
    pub last_error: Option<String>,
}

/// The channels of `channels` whose messages wait after a failed attempt (the overview).
pub async fn failing(
    db: &Db,
    channels: &[Channel],
) -> Result<Vec<crate::model::FailingChannel>, DbErr> {
    Ok(waiting(db)
        .await?
        .into_iter()
        .filter(|w| w.last_error.is_some() && channels.iter().any(|c| c.name == w.channel))
        .map(|w| crate::model::FailingChannel {
            name: w.channel,
            waiting: w.count,
            since: w.since.to_rfc3339(),
            last_error: w.last_error,
        })
        .collect())
}
