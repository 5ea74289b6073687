//! What an attempt's answer does to its row: delivered on a 2xx; else the next wait of the
//! destination's schedule (or a larger `Retry-After`, cut to a day), or dead after the last one.

use crate::config::Destination;
use crate::db::Db;
use crate::db::dialect::{Binds, Dialect, Named, Param};
use crate::model::{AnswerClass, ForwardStatus};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait};
use std::sync::OnceLock;

use super::Claimed;

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptResult {
    pub started_at: DateTime<Utc>,
    pub duration_ms: i64,
    /// The answer's status, if one came.
    pub status_code: Option<u16>,
    /// Why it failed (a refused connection, a timeout, a non-2xx status).
    pub error: Option<String>,
    /// At most 1 KiB of the answer's body.
    pub response_excerpt: Option<String>,
    /// A `Retry-After` in seconds carried by a 429 or 503.
    pub retry_after_secs: Option<u64>,
}

impl AttemptResult {
    pub fn delivered(&self) -> bool {
        self.status_code.is_some_and(|s| (200..300).contains(&s))
    }
}

/// What became of a row after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterAttempt {
    Delivered,
    /// Pending again, due at this time.
    Retry(DateTime<Utc>),
    Dead,
}

/// The longest a destination's `Retry-After` can make a delivery wait: a day. A larger one (or
/// a date years away) is cut to it, so a destination cannot park a delivery forever.
pub const MAX_RETRY_AFTER_SECS: u64 = 24 * 60 * 60;

/// `now` plus `wait_secs`, saturating at the latest time hookbox can store instead of
/// overflowing.
fn retry_at(now: DateTime<Utc>, wait_secs: u64) -> DateTime<Utc> {
    i64::try_from(wait_secs)
        .ok()
        .and_then(Duration::try_seconds)
        .and_then(|wait| now.checked_add_signed(wait))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// A `Retry-After` value in seconds from `now`: whole seconds, or an HTTP date (a date in the
/// past is no wait). `None` when it is neither.
pub fn retry_after_secs(value: &str, now: DateTime<Utc>) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs);
    }
    let at = DateTime::parse_from_rfc2822(value).ok()?;
    Some(u64::try_from((at.with_timezone(&Utc) - now).num_seconds()).unwrap_or(0))
}

/// Attempts of one schedule after which a refusal ([`refused`]) makes a delivery dead: the first
/// and two more, the schedule's first waits, for an application answering wrongly a few seconds
/// (a deploy). An operator's retry starts a new schedule, so three more.
pub const REFUSED_ATTEMPTS: i32 = 3;

/// Whether an answer's status says the request itself is refused, so sending it again the same
/// will not help: [`AnswerClass::Refused`], a 4xx other than 408 (timeout), 409 (conflict), 425
/// (too early) and 429 (too many requests), which say "later".
pub fn refused(status: Option<u16>) -> bool {
    AnswerClass::of(status) == AnswerClass::Refused
}

/// What the attempt does to the row: delivered, the next wait of the schedule (or a larger
/// `Retry-After`), or dead after the last one, or after [`REFUSED_ATTEMPTS`] refused.
fn after(
    destination: &Destination,
    claimed: &Claimed,
    result: &AttemptResult,
    now: DateTime<Utc>,
) -> AfterAttempt {
    if result.delivered() {
        return AfterAttempt::Delivered;
    }
    let made = claimed.attempts - claimed.schedule_base + 1;
    if refused(result.status_code) && made >= REFUSED_ATTEMPTS {
        return AfterAttempt::Dead;
    }
    let step = usize::try_from(claimed.attempts - claimed.schedule_base).unwrap_or(usize::MAX);
    match destination.retry_schedule_secs.get(step) {
        None => AfterAttempt::Dead,
        Some(wait) => {
            let wait = (*wait).max(
                result
                    .retry_after_secs
                    .unwrap_or(0)
                    .min(MAX_RETRY_AFTER_SECS),
            );
            AfterAttempt::Retry(retry_at(now, wait))
        }
    }
}

/// The attempt's row in `forward_attempts`.
const INSERT_ATTEMPT: &str = "INSERT INTO forward_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
     VALUES (:id, :attempt, :started_at, :duration_ms, :status_code, :error, :response_excerpt)";

/// The delivery's row moved on, its lease released.
const UPDATE_DELIVERY: &str = "UPDATE forward_deliveries SET status = :status, attempts = :attempt,
        next_attempt_at = :next_attempt_at, last_status_code = :status_code, last_error = :error,
        delivered_at = :delivered_at, lease_until = NULL, leased_by = NULL
     WHERE id = :id";

/// The destination's last error, for its dashboard page.
const NOTE_DESTINATION_ERROR: &str =
    "INSERT INTO forward_destinations (destination, last_error, last_status_code, last_error_at)
     VALUES (:destination, :error, :status_code, :now)
     ON CONFLICT (destination) DO UPDATE SET last_error = excluded.last_error,
         last_status_code = excluded.last_status_code, last_error_at = excluded.last_error_at";

/// The values the attempt's statements bind, by name.
struct Recorded<'a> {
    claimed: &'a Claimed,
    result: &'a AttemptResult,
    attempt: i64,
    status: ForwardStatus,
    next_attempt_at: DateTime<Utc>,
    delivered_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
}

impl Binds for Recorded<'_> {
    fn param(&self, name: &str) -> Option<Param<'_>> {
        Some(match name {
            "id" => self.claimed.id.into(),
            "destination" => self.claimed.destination.as_str().into(),
            "attempt" => self.attempt.into(),
            "started_at" => self.result.started_at.into(),
            "duration_ms" => self.result.duration_ms.into(),
            "status_code" => self.result.status_code.map(i64::from).into(),
            "error" => self.result.error.as_deref().into(),
            "response_excerpt" => self.result.response_excerpt.as_deref().into(),
            "status" => self.status.as_str().into(),
            "next_attempt_at" => self.next_attempt_at.into(),
            "delivered_at" => self.delivered_at.into(),
            "now" => self.now.into(),
            _ => return None,
        })
    }
}

/// Records an attempt and moves the row on: delivered on a 2xx; else the next wait of the
/// schedule (or a larger `Retry-After`), or dead after the last one. The lease is released.
pub async fn record_attempt(
    db: &Db,
    destination: &Destination,
    claimed: &Claimed,
    result: &AttemptResult,
) -> Result<AfterAttempt, DbErr> {
    let dialect = Dialect::of(db.backend());
    let now = Utc::now();
    let after = after(destination, claimed, result, now);
    let (status, next_attempt_at, delivered_at) = match after {
        AfterAttempt::Delivered => (ForwardStatus::Delivered, now, Some(now)),
        AfterAttempt::Retry(at) => (ForwardStatus::Pending, at, None),
        AfterAttempt::Dead => (ForwardStatus::Dead, now, None),
    };
    let binds = Recorded {
        claimed,
        result,
        attempt: i64::from(claimed.attempts) + 1,
        status,
        next_attempt_at,
        delivered_at,
        now,
    };
    // Not a spelling (db::dialect): PostgreSQL runs the parts as one data-modifying statement in
    // autocommit, atomic as a transaction and one round trip; SQLite has no data-modifying
    // `WITH`, so the parts run in a transaction of the single writer.
    let statements = Statements::of(result.error.is_some());
    if dialect == Dialect::Postgres && after != AfterAttempt::Dead {
        db.writer
            .execute_raw(statements.postgres.statement(dialect, &binds)?)
            .await?;
        return Ok(after);
    }
    let txn = db.writer.begin().await?;
    if dialect == Dialect::Postgres {
        txn.execute_raw(statements.postgres.statement(dialect, &binds)?)
            .await?;
    } else {
        for part in &statements.parts {
            txn.execute_raw(part.statement(dialect, &binds)?).await?;
        }
    }
    if after == AfterAttempt::Dead {
        // Told in the transaction that made it dead.
        let facts = crate::notify::message::DeadFacts {
            destination: destination.name.clone(),
            source: claimed.source.clone(),
            answer: crate::model::AnswerClass::of(result.status_code)
                .name()
                .to_string(),
        };
        crate::db::notifications::record(
            &txn,
            crate::model::NotifyEvent::DestinationDead,
            &crate::db::notifications::Subject::Destination {
                name: destination.name.clone(),
                source: claimed.source.clone(),
            },
            &claimed.source,
            &facts,
        )
        .await?;
    }
    txn.commit().await?;
    Ok(after)
}

/// An attempt's statements, compiled once: with the destination's last error or without.
struct Statements {
    /// Each part on its own (SQLite's transaction).
    parts: Vec<Named>,
    /// The parts as one data-modifying statement (PostgreSQL).
    postgres: Named,
}

impl Statements {
    fn of(with_error: bool) -> &'static Statements {
        static WITH_ERROR: OnceLock<Statements> = OnceLock::new();
        static WITHOUT: OnceLock<Statements> = OnceLock::new();
        let cell = if with_error { &WITH_ERROR } else { &WITHOUT };
        cell.get_or_init(|| {
            let mut parts = vec![INSERT_ATTEMPT, UPDATE_DELIVERY];
            if with_error {
                parts.push(NOTE_DESTINATION_ERROR);
            }
            let steps: Vec<String> = parts
                .iter()
                .enumerate()
                .map(|(n, part)| format!("part{n} AS ({part})"))
                .collect();
            Statements {
                parts: parts.into_iter().map(Named::new).collect(),
                postgres: Named::new(&format!("WITH {} SELECT 1", steps.join(", "))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_after_is_seconds_or_a_date_and_any_wait_saturates() {
        let now = DateTime::parse_from_rfc3339("2015-10-21T07:27:00Z")
            .expect("time")
            .with_timezone(&Utc);
        assert_eq!(retry_after_secs(" 120 ", now), Some(120));
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(60)
        );
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(0)
        );
        assert_eq!(retry_after_secs("soon", now), None);
        assert_eq!(retry_after_secs("-5", now), None);
        assert_eq!(retry_at(now, u64::MAX), DateTime::<Utc>::MAX_UTC);
        assert_eq!(retry_at(now, 60), now + Duration::seconds(60));
    }

    #[test]
    fn a_refusal_is_dead_at_its_third_attempt_and_a_later_is_retried_the_whole_schedule() {
        let destination = crate::config::Destination {
            name: "orders-app".into(),
            url: "http://127.0.0.1:9/hook".into(),
            secret_env: "DESTINATION_SECRET".into(),
            key: crate::schemes::Scheme::StandardWebhooks
                .parse_secret("whsec_ZGVzdGluYXRpb24ta2V5")
                .expect("key"),
            timeout_secs: 5,
            retry_schedule_secs: vec![5; 11],
            rate_limit_per_sec: None,
        };
        let now = Utc::now();
        let after_status = |status: u16, attempts: i32, schedule_base: i32| {
            let claimed = Claimed {
                attempts,
                schedule_base,
                ..test_claimed()
            };
            let result = AttemptResult {
                status_code: Some(status),
                ..test_result()
            };
            after(&destination, &claimed, &result, now)
        };
        assert!(matches!(after_status(422, 0, 0), AfterAttempt::Retry(_)));
        assert!(matches!(after_status(422, 1, 0), AfterAttempt::Retry(_)));
        assert_eq!(after_status(422, 2, 0), AfterAttempt::Dead);
        assert_eq!(after_status(404, 5, 0), AfterAttempt::Dead);
        // An operator's retry starts a new schedule: three more.
        assert!(matches!(after_status(400, 3, 3), AfterAttempt::Retry(_)));
        assert_eq!(after_status(400, 5, 3), AfterAttempt::Dead);
        for later in [408, 409, 425, 429, 500, 503] {
            assert!(
                matches!(after_status(later, 5, 0), AfterAttempt::Retry(_)),
                "{later}"
            );
        }
        assert_eq!(after_status(500, 11, 0), AfterAttempt::Dead);
    }

    fn test_claimed() -> Claimed {
        Claimed {
            id: 7,
            destination: "orders-app".into(),
            source: "shop".into(),
            event_id: "event-1".into(),
            object_id: None,
            revision: None,
            event_type: None,
            received_at: Utc::now(),
            payload: "{}".into(),
            attempts: 0,
            schedule_base: 0,
        }
    }

    fn test_result() -> AttemptResult {
        AttemptResult {
            started_at: Utc::now(),
            duration_ms: 3,
            status_code: Some(500),
            error: Some("HTTP 500".into()),
            response_excerpt: None,
            retry_after_secs: None,
        }
    }

    #[test]
    fn every_statement_of_an_attempt_is_bound_on_both_dialects() {
        let claimed = test_claimed();
        let result = AttemptResult {
            started_at: Utc::now(),
            duration_ms: 3,
            status_code: Some(500),
            error: Some("HTTP 500".into()),
            response_excerpt: None,
            retry_after_secs: None,
        };
        let binds = Recorded {
            claimed: &claimed,
            result: &result,
            attempt: 1,
            status: ForwardStatus::Pending,
            next_attempt_at: Utc::now(),
            delivered_at: None,
            now: Utc::now(),
        };
        let statements = Statements::of(true);
        for dialect in [Dialect::Postgres, Dialect::Sqlite] {
            for named in statements.parts.iter().chain([&statements.postgres]) {
                let statement = named.statement(dialect, &binds).expect("bound");
                assert!(!statement.sql.contains(':'), "{}", statement.sql);
            }
        }
    }
}
