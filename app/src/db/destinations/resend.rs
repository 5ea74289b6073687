//! Re-sending delivered forward deliveries to their destination ("replay to endpoint",
//! "recover"): one, or every one delivered since a time, after a count and a typed confirmation.
//!
//! A re-send is a new pending row copying the delivered one (`resend_of` names it), so the
//! original keeps its status and attempts, and the copy is claimed, ordered and superseded like
//! any other row: it has its own `webhook-id`, and a greater revision of its object pending or
//! forwarded before it is sent supersedes it. So a re-send never takes an object back:
//! - one delivery is refused when a greater revision of its object was forwarded since, or when
//!   its event already waits at the destination (a re-send or a replay pending);
//! - "since a time" takes, of each event, its newest row at the destination when that row is
//!   delivered (an event with a pending or dead row is left out; dead ones are retried), not a
//!   re-send made after that time (so running it again takes only what the last run did not),
//!   and only the newest forwarded revision of each object; at most [`RESEND_LIMIT`], those
//!   delivered first.
//!
//! Both are audited (`resend_forward`), one entry per re-send. On PostgreSQL a re-send holds a
//! transaction-scoped lock on its destination, taken without waiting: two at once are refused,
//! never doubled.

use super::super::Db;
use super::super::audit::{AuditEntry, audit_on};
use super::super::dialect::Dialect;
use super::actions::{Actor, RetryError};
use crate::model::{AuditAction, ForwardStatus};
use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use sea_orm::{ConnectionTrait, DatabaseTransaction, TransactionTrait, Value};

/// The most forward deliveries one re-send creates.
pub const RESEND_LIMIT: i64 = 10_000;

/// The columns a re-send copies, and what it sets: pending, due now, no attempt yet.
fn copy_sql(condition: &str) -> String {
    format!(
        "INSERT INTO forward_deliveries (destination, source, event_id, object_id, revision,
             event_type, archive_id, status, attempts, next_attempt_at, created_at, received_at,
             payload, schedule_base, resend_of)
         SELECT destination, source, event_id, object_id, revision, event_type, archive_id,
                '{pending}', 0, $1, $1, received_at, payload, 0, id
         FROM forward_deliveries WHERE {condition}",
        pending = ForwardStatus::Pending.as_str()
    )
}

/// `what` of the rows of a greater revision of `f`'s object pending, delivered or dead at its
/// destination (a dead attempt may have reached the application).
fn greater_revision(what: &str, f: &str) -> String {
    format!(
        "SELECT {what} FROM forward_deliveries g
         WHERE g.destination = {f}.destination AND g.source = {f}.source
           AND g.object_id = {f}.object_id AND g.revision > {f}.revision
           AND g.status IN ('{pending}', '{delivered}', '{dead}')",
        pending = ForwardStatus::Pending.as_str(),
        delivered = ForwardStatus::Delivered.as_str(),
        dead = ForwardStatus::Dead.as_str(),
    )
}

/// The rows of destination `destination` a re-send since `since` takes, delivered first, at most
/// `limit` (each a parameter).
fn since_ids(destination: &str, since: &str, limit: &str) -> String {
    format!(
        "SELECT f.id FROM forward_deliveries f
         WHERE f.destination = {destination} AND f.status = '{delivered}' AND f.delivered_at >= {since}
           AND (f.resend_of IS NULL OR f.created_at < {since})
           AND NOT EXISTS (SELECT 1 FROM forward_deliveries n
                           WHERE n.destination = f.destination AND n.source = f.source
                             AND n.event_id = f.event_id AND n.id > f.id)
           AND (f.object_id IS NULL OR f.revision IS NULL OR NOT EXISTS ({greater}))
         ORDER BY f.delivered_at, f.id LIMIT {limit}",
        delivered = ForwardStatus::Delivered.as_str(),
        greater = greater_revision("1", "f"),
    )
}

/// Takes the destination's re-send lock for the transaction, or refuses: another re-send of it
/// is under way (PostgreSQL; SQLite's single writer serialises them already).
async fn lock_destination(txn: &DatabaseTransaction, destination: &str) -> Result<(), RetryError> {
    let dialect = Dialect::of(txn.get_database_backend());
    let locked = txn
        .query_one_raw(crate::db::statement(
            dialect.backend(),
            format!(
                "SELECT CASE WHEN {} THEN 1 ELSE 0 END AS locked",
                dialect.try_lock_key("$1")
            ),
            vec![format!("resend/{destination}").into()],
        ))
        .await?
        .map(|r| r.try_get::<i32>("", "locked"))
        .transpose()?;
    if locked == Some(1) {
        Ok(())
    } else {
        Err(RetryError::Refused(format!(
            "another re-send to {destination} is under way; try again in a moment"
        )))
    }
}

/// Ends a re-send's transaction: committed when it wrote (`Ok((_, true))`), else rolled back
/// before the answer leaves. A transaction merely dropped is rolled back only once its
/// connection is back in the pool, so its lock could refuse the operator's next request.
async fn finish<T>(
    txn: DatabaseTransaction,
    result: Result<(T, bool), RetryError>,
) -> Result<T, RetryError> {
    match result {
        Ok((value, true)) => {
            txn.commit().await?;
            Ok(value)
        }
        Ok((value, false)) => {
            txn.rollback().await?;
            Ok(value)
        }
        Err(refused) => {
            // The refusal is the answer; a failed rollback ends with the connection anyway.
            let _ = txn.rollback().await;
            Err(refused)
        }
    }
}

/// Sends delivered forward delivery `id` of `destination` again, as a new pending row; returns
/// its id. Audited. Refused, naming why, when the row is not a delivered one of `destination`,
/// when its event already waits there, or when a greater revision of its object was forwarded.
pub async fn resend_one(
    db: &Db,
    destination: &str,
    id: i64,
    actor: &Actor<'_>,
) -> Result<i64, RetryError> {
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    let result = resend_one_in(&txn, destination, id, actor).await;
    finish(txn, result.map(|created| (created, true))).await
}

async fn resend_one_in(
    txn: &DatabaseTransaction,
    destination: &str,
    id: i64,
    actor: &Actor<'_>,
) -> Result<i64, RetryError> {
    let backend = txn.get_database_backend();
    lock_destination(txn, destination).await?;
    let row = txn
        .query_one_raw(crate::db::statement(
            backend,
            format!(
                "SELECT f.status, f.event_id, f.object_id, f.revision,
                        (SELECT max(p.id) FROM forward_deliveries p
                          WHERE p.destination = f.destination AND p.source = f.source
                            AND p.event_id = f.event_id AND p.status = '{pending}') AS waiting,
                        ({greater}) AS greater
                 FROM forward_deliveries f WHERE f.id = $1 AND f.destination = $2",
                pending = ForwardStatus::Pending.as_str(),
                greater = greater_revision("max(g.revision)", "f"),
            ),
            vec![id.into(), destination.into()],
        ))
        .await?
        .ok_or_else(|| {
            RetryError::Refused(format!("{destination} has no forward delivery {id}"))
        })?;
    let status: ForwardStatus = row.try_get("", "status")?;
    if status != ForwardStatus::Delivered {
        return Err(RetryError::Refused(format!(
            "forward delivery {id} is {status}, not delivered: only delivered deliveries are \
             re-sent (a dead one is retried)"
        )));
    }
    if let Some(waiting) = row.try_get::<Option<i64>>("", "waiting")? {
        return Err(RetryError::Refused(format!(
            "event {} already waits to be sent to {destination}: forward delivery {waiting} is pending",
            row.try_get::<String>("", "event_id")?
        )));
    }
    if let Some(greater) = row.try_get::<Option<i64>>("", "greater")? {
        return Err(RetryError::Refused(format!(
            "revision {greater} of {} was forwarded to {destination} since: re-sending revision {} \
             would take it back",
            row.try_get::<Option<String>>("", "object_id")?
                .unwrap_or_default(),
            row.try_get::<Option<i64>>("", "revision")?
                .unwrap_or_default(),
        )));
    }
    let created = txn
        .query_one_raw(crate::db::statement(
            backend,
            format!("{} RETURNING id", copy_sql("id = $2")),
            vec![Utc::now().into(), id.into()],
        ))
        .await?
        .map(|r| r.try_get::<i64>("", "id"))
        .transpose()?
        .ok_or_else(|| RetryError::Refused(format!("forward delivery {id} was not copied")))?;
    audit_on(
        txn,
        AuditEntry {
            actor: actor.name,
            action: AuditAction::ResendForward,
            target: Some(&format!("{destination}/{id}")),
            outcome: "done",
            detail: Some(&format!("as forward delivery {created}")),
            address: Some(actor.address),
        },
    )
    .await?;
    Ok(created)
}

/// What a re-send since a time counted or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resent {
    /// How many it takes (or took): at most [`RESEND_LIMIT`].
    pub matched: i64,
    /// More than [`RESEND_LIMIT`] matched.
    pub more: bool,
    pub resent: bool,
}

/// The text to type to confirm a re-send of `matched` deliveries.
pub fn confirmation_of(matched: i64) -> String {
    format!("resend {matched}")
}

/// Counts what re-sending `destination`'s deliveries delivered since `since` takes (see the
/// module's rules); with `confirmation` equal to [`confirmation_of`] that count, re-sends them.
/// Audited when done, `scope` in the entry's detail.
pub async fn resend_since(
    db: &Db,
    destination: &str,
    since: DateTime<Utc>,
    scope: &str,
    confirmation: Option<&str>,
    actor: &Actor<'_>,
) -> Result<Resent, RetryError> {
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    let result = resend_since_in(&txn, destination, since, scope, confirmation, actor).await;
    finish(txn, result.map(|resent| (resent, resent.resent))).await
}

async fn resend_since_in(
    txn: &DatabaseTransaction,
    destination: &str,
    since: DateTime<Utc>,
    scope: &str,
    confirmation: Option<&str>,
    actor: &Actor<'_>,
) -> Result<Resent, RetryError> {
    let backend = txn.get_database_backend();
    lock_destination(txn, destination).await?;
    let now: Value = Utc::now().into();
    let counted = txn
        .query_one_raw(crate::db::statement(
            backend,
            format!(
                "SELECT count(*) AS n FROM ({}) c",
                since_ids("$1", "$2", "$3")
            ),
            vec![destination.into(), since.into(), (RESEND_LIMIT + 1).into()],
        ))
        .await?
        .map(|r| r.try_get::<i64>("", "n"))
        .transpose()?
        .unwrap_or(0);
    let (matched, more) = (counted.min(RESEND_LIMIT), counted > RESEND_LIMIT);
    let expected = confirmation_of(matched);
    match confirmation.map(str::trim) {
        None | Some("") => {
            return Ok(Resent {
                matched,
                more,
                resent: false,
            });
        }
        Some(typed) if typed == expected => {}
        Some(_) => {
            return Err(RetryError::Refused(format!(
                "type \"{expected}\" to confirm (the count may have changed)"
            )));
        }
    }
    if matched == 0 {
        return Ok(Resent {
            matched,
            more,
            resent: false,
        });
    }
    let copied = txn
        .execute_raw(crate::db::statement(
            backend,
            copy_sql(&format!("id IN ({})", since_ids("$2", "$3", "$4"))),
            vec![now, destination.into(), since.into(), RESEND_LIMIT.into()],
        ))
        .await?
        .rows_affected();
    let copied = i64::try_from(copied).unwrap_or(i64::MAX);
    audit_on(
        txn,
        AuditEntry {
            actor: actor.name,
            action: AuditAction::ResendForward,
            target: Some(destination),
            outcome: "done",
            detail: Some(&format!("{copied} deliveries of {scope}")),
            address: Some(actor.address),
        },
    )
    .await?;
    Ok(Resent {
        matched: copied,
        more,
        resent: true,
    })
}

/// The longest `since` accepted, in bytes.
const MAX_SINCE_BYTES: usize = 64;

/// A re-send's `since`: an RFC 3339 time, or a local date and time (`2026-12-01T10:00`,
/// seconds optional) or date (its midnight) in `zone`. A local time a clock change skips is
/// refused; one it repeats is its first occurrence. Else the reason, naming the field.
pub fn parse_since(text: &str, zone: Tz) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("since: give the time to re-send from (2026-12-01T10:00)".into());
    }
    if text.len() > MAX_SINCE_BYTES {
        return Err(format!("since: longer than {MAX_SINCE_BYTES} bytes"));
    }
    let not_a_time = || {
        format!(
            "since: {text:?} is not a date (2026-12-01), a local time (2026-12-01T10:00) or an RFC 3339 time"
        )
    };
    let time = if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        t.with_timezone(&Utc)
    } else {
        let local = [
            "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%dT%H:%M",
            "%Y-%m-%d %H:%M:%S",
            "%Y-%m-%d %H:%M",
        ]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
        .or_else(|| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })
        .ok_or_else(not_a_time)?;
        zone.from_local_datetime(&local)
            .earliest()
            .ok_or_else(|| format!("since: {text} does not exist in {zone} (the clocks skip it)"))?
            .with_timezone(&Utc)
    };
    use chrono::Datelike;
    if !(1..=9999).contains(&time.year()) {
        return Err(format!("since: {text:?} is out of range (years 1 to 9999)"));
    }
    Ok(time)
}

/// The deliveries a re-send since `since` takes, in words, with the time in `zone`:
/// `orders-app, delivered since 2026-12-01 10:00 (Europe/Berlin)`.
pub fn resend_scope(destination: &str, since: DateTime<Utc>, zone: Tz) -> String {
    format!(
        "{destination}, delivered since {} ({zone})",
        since.with_timezone(&zone).format("%Y-%m-%d %H:%M:%S")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_read_in_the_viewers_zone_or_as_given() {
        let berlin = chrono_tz::Europe::Berlin;
        assert_eq!(
            parse_since("2026-12-01T10:00", berlin).map(|t| t.to_rfc3339()),
            Ok("2026-12-01T09:00:00+00:00".into())
        );
        assert_eq!(
            parse_since("2026-12-01", berlin).map(|t| t.to_rfc3339()),
            Ok("2026-11-30T23:00:00+00:00".into())
        );
        assert_eq!(
            parse_since("2026-12-01T10:00:00Z", berlin).map(|t| t.to_rfc3339()),
            Ok("2026-12-01T10:00:00+00:00".into())
        );
        let skipped = parse_since("2026-03-29T02:30", berlin).expect_err("skipped");
        assert!(skipped.contains("does not exist"), "{skipped}");
        let bad = parse_since("yesterday", berlin).expect_err("not a time");
        assert!(
            bad.starts_with("since: \"yesterday\" is not a date"),
            "{bad}"
        );
        assert!(parse_since("", berlin).is_err());
        assert!(
            parse_since(&"9".repeat(65), berlin)
                .expect_err("long")
                .contains("64 bytes")
        );
    }
}
