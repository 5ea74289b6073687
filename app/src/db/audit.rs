//! `audit_log`: who signed in, or replayed, paused, exported what. Writes go through
//! [`audit_on`] so they can join the transaction of the change they record, or [`audit`] for a
//! row on its own (on [`Db::dashboard_writer`]); reads are the audit page.
//!
//! Sign-ins that did not succeed are no audit rows: they are counted in `sign_in_failures`, one
//! row per client, user name and minute ([`record_sign_in_failure`], [`add_refused_sign_ins`]),
//! so a flood of wrong passwords costs a bounded number of rows. The audit page shows those
//! counts among the audit rows ("12 failed sign-ins as olga from 10.0.0.5 in the minute of
//! 14:02 UTC").

use super::Db;
use super::conditions::{Conditions, QueryError};
use crate::model::{AuditAction, AuditRow};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult, TransactionTrait, Value};

/// Rows the audit page shows, at most.
const AUDIT_PAGE_ROWS: usize = 200;

#[derive(FromQueryResult)]
struct AuditRecord {
    id: i64,
    at: DateTime<Utc>,
    actor: String,
    action: AuditAction,
    target: Option<String>,
    outcome: String,
    detail: Option<String>,
}

/// The newest audit rows, with the counted sign-in failures among them (action `sign_in`,
/// outcome `failed`, `throttled` or `busy`, a count in the detail), newest first: the audit
/// page's first page.
pub async fn audit_entries(
    db: &Db,
    action: Option<&str>,
    actor: Option<&str>,
) -> Result<Vec<AuditRow>, DbErr> {
    match audit_page(db, action, actor, None, AUDIT_PAGE_ROWS).await {
        Ok((rows, _)) => Ok(rows),
        Err(QueryError::Db(e)) => Err(e),
        // No cursor was given, and nothing else is refused.
        Err(QueryError::BadFilter(_)) => Ok(Vec::new()),
    }
}

/// Where a page of the audit log ends: after the audit row `(at, id)` (`a…`), or after the
/// counted sign-ins of `client` as `name` in the minute `at` (`c…`, client and name in hex). In
/// one instant, audit rows come first (newest id first), then the minute's counts by client and
/// name; a page never ends between the up to three counts of one client, name and minute.
enum AuditCursor {
    AfterRow(DateTime<Utc>, i64),
    AfterCount(DateTime<Utc>, String, String),
}

/// Which row an entry came from: an audit row, or a `sign_in_failures` row (client, name).
type Entry = (DateTime<Utc>, Option<(String, String)>, AuditRow);

impl AuditCursor {
    fn parse(text: &str) -> Option<AuditCursor> {
        let at = |nanos: &str| {
            nanos
                .parse::<i64>()
                .ok()
                .map(DateTime::from_timestamp_nanos)
        };
        let text_of = |h: &str| String::from_utf8(hex::decode(h).ok()?).ok();
        if let Some(rest) = text.strip_prefix('a') {
            let (nanos, id) = rest.split_once('.')?;
            Some(AuditCursor::AfterRow(at(nanos)?, id.parse().ok()?))
        } else {
            let mut parts = text.strip_prefix('c')?.split('.');
            let (nanos, client, name) = (parts.next()?, parts.next()?, parts.next()?);
            match parts.next() {
                Some(_) => None,
                None => Some(AuditCursor::AfterCount(
                    at(nanos)?,
                    text_of(client)?,
                    text_of(name)?,
                )),
            }
        }
    }

    fn after((at, counted, row): &Entry) -> String {
        let nanos = at.timestamp_nanos_opt().unwrap_or_default();
        match counted {
            None => format!("a{nanos}.{}", row.id),
            Some((client, name)) => {
                format!("c{nanos}.{}.{}", hex::encode(client), hex::encode(name))
            }
        }
    }
}

/// A page of at most `limit` audit rows (up to two more, to keep one client's counts of a minute
/// together), newest first, after `cursor`; and the cursor of the next page.
pub async fn audit_page(
    db: &Db,
    action: Option<&str>,
    actor: Option<&str>,
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<AuditRow>, Option<String>), QueryError> {
    let action = action.filter(|a| !a.is_empty());
    let actor = actor.filter(|a| !a.is_empty());
    let cursor = cursor
        .filter(|c| !c.is_empty())
        .map(|c| {
            AuditCursor::parse(c).ok_or_else(|| {
                QueryError::BadFilter(format!("cursor: {c:?} is not a cursor from a page"))
            })
        })
        .transpose()?;
    let mut c = Conditions::new();
    if let Some(action) = action {
        c.and_with(action.to_string(), |p| format!("action = {p}"));
    }
    if let Some(actor) = actor {
        c.and_with(actor.to_string(), |p| format!("actor = {p}"));
    }
    match &cursor {
        Some(AuditCursor::AfterRow(at, id)) => {
            let (a, b, i) = (c.param(*at), c.param(*at), c.param(*id));
            c.and(format!("(at < {a} OR (at = {b} AND id < {i}))"));
        }
        Some(AuditCursor::AfterCount(at, _, _)) => c.and_with(*at, |p| format!("at < {p}")),
        None => {}
    }
    let sql = format!(
        "SELECT id, at, actor, action, target, outcome, detail FROM audit_log {} ORDER BY at DESC, id DESC LIMIT {}",
        c.clause(),
        limit + 1
    );
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(db.backend(), sql, c.values))
        .await?;
    let mut entries = rows
        .iter()
        .map(|r| {
            let r = AuditRecord::from_query_result(r, "")?;
            let row = AuditRow {
                id: r.id,
                at: r.at.to_rfc3339(),
                actor: r.actor,
                action: r.action,
                target: r.target,
                outcome: r.outcome,
                detail: r.detail,
            };
            Ok((r.at, None, row))
        })
        .collect::<Result<Vec<Entry>, DbErr>>()?;
    if action.is_none_or(|a| a == AuditAction::SignIn.as_str()) {
        entries.extend(counted_sign_ins(db, actor, cursor.as_ref(), limit + 1).await?);
        // Newest first; in one instant audit rows (newest first), then counts in their order.
        entries.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(a.1.is_some().cmp(&b.1.is_some()))
                .then(b.2.id.cmp(&a.2.id))
                .then(a.1.cmp(&b.1))
        });
    }
    if entries.len() <= limit {
        return Ok((entries.into_iter().map(|(_, _, row)| row).collect(), None));
    }
    // Cut after `limit` rows, then take the rest of the last one's counts of that minute.
    let mut keep = limit;
    while keep < entries.len()
        && entries[keep].1.is_some()
        && (entries[keep].0, &entries[keep].1) == (entries[keep - 1].0, &entries[keep - 1].1)
    {
        keep += 1;
    }
    entries.truncate(keep);
    let next = entries.last().map(AuditCursor::after);
    Ok((entries.into_iter().map(|(_, _, row)| row).collect(), next))
}

#[derive(FromQueryResult)]
struct FailureRecord {
    client: String,
    name: String,
    minute: DateTime<Utc>,
    failed: i64,
    throttled: i64,
    busy: i64,
}

/// The newest `sign_in_failures` rows after `cursor`, at most `limit`, as audit rows (ids below
/// 0, counted down through the page: they are no `audit_log` row).
async fn counted_sign_ins(
    db: &Db,
    name: Option<&str>,
    cursor: Option<&AuditCursor>,
    limit: usize,
) -> Result<Vec<Entry>, DbErr> {
    let mut c = Conditions::new();
    if let Some(name) = name {
        c.and_with(name.to_string(), |p| format!("name = {p}"));
    }
    match cursor {
        // Every count of that instant comes after its audit rows.
        Some(AuditCursor::AfterRow(at, _)) => c.and_with(*at, |p| format!("minute <= {p}")),
        Some(AuditCursor::AfterCount(at, client, name)) => {
            let (m1, m2) = (c.param(*at), c.param(*at));
            let (c1, c2) = (c.param(client.clone()), c.param(client.clone()));
            let n = c.param(name.clone());
            c.and(format!(
                "(minute < {m1} OR (minute = {m2} AND (client > {c1} OR (client = {c2} AND name > {n}))))"
            ));
        }
        None => {}
    }
    let sql = format!(
        "SELECT client, name, minute, failed, throttled, busy FROM sign_in_failures {}
         ORDER BY minute DESC, client, name LIMIT {limit}",
        c.clause()
    );
    let rows = db
        .dashboard
        .query_all_raw(crate::db::statement(db.backend(), sql, c.values))
        .await?;
    let mut entries = Vec::new();
    for row in &rows {
        let r = FailureRecord::from_query_result(row, "")?;
        let minute = r.minute.format("%H:%M UTC");
        let who = format!("as {} from {} in the minute of {minute}", r.name, r.client);
        let plural = |n: i64| if n == 1 { "" } else { "s" };
        for (outcome, n, detail) in [
            (
                "failed",
                r.failed,
                format!("{} failed sign-in{} {who}", r.failed, plural(r.failed)),
            ),
            (
                "throttled",
                r.throttled,
                format!(
                    "{} sign-in{} {who} refused by the throttle, unchecked",
                    r.throttled,
                    plural(r.throttled)
                ),
            ),
            (
                "busy",
                r.busy,
                format!(
                    "{} sign-in{} {who} refused, unchecked: no password check slot was free",
                    r.busy,
                    plural(r.busy)
                ),
            ),
        ] {
            if n > 0 {
                entries.push((
                    r.minute,
                    Some((r.client.clone(), r.name.clone())),
                    AuditRow {
                        id: -1 - entries.len() as i64,
                        at: r.minute.to_rfc3339(),
                        actor: r.name.clone(),
                        action: AuditAction::SignIn,
                        target: None,
                        outcome: outcome.to_string(),
                        detail: Some(detail),
                    },
                ));
            }
        }
    }
    Ok(entries)
}

/// One audit row to write.
pub struct AuditEntry<'a> {
    pub actor: &'a str,
    pub action: AuditAction,
    pub target: Option<&'a str>,
    pub outcome: &'a str,
    pub detail: Option<&'a str>,
    pub address: Option<&'a str>,
}

/// Writes one audit row on its own (no change to commit it with), on [`Db::dashboard_writer`].
pub async fn audit(db: &Db, entry: AuditEntry<'_>) -> Result<(), DbErr> {
    audit_on(&*db.dashboard_writer().await?, entry).await
}

/// Writes one audit row on any connection (a transaction too, so it commits with the change).
pub async fn audit_on<C: ConnectionTrait>(conn: &C, entry: AuditEntry<'_>) -> Result<(), DbErr> {
    conn.execute_raw(crate::db::statement(
        conn.get_database_backend(),
        "INSERT INTO audit_log (at, actor, action, target, outcome, detail, address) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        vec![
            crate::clock::now().into(),
            entry.actor.into(),
            entry.action.as_str().into(),
            entry.target.into(),
            entry.outcome.into(),
            entry.detail.into(),
            entry.address.into(),
        ],
    ))
    .await?;
    Ok(())
}

/// The start of the minute of `at`: the `minute` of its `sign_in_failures` row.
pub fn minute_of(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(at.timestamp().div_euclid(60) * 60, 0).unwrap_or(at)
}

/// Counts one password checked (and taken as wrong until it proves right) of `name` from
/// `client` at `at`, before the check, so that parallel attempts in any process count each other.
/// One upsert of the minute's row, on the dashboard's writer.
pub async fn record_sign_in_failure(
    db: &Db,
    client: &str,
    name: &str,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    let writer = db.dashboard_writer().await?;
    writer
        .execute_raw(crate::db::statement(
            db.backend(),
            "INSERT INTO sign_in_failures (client, name, minute, failed, counted, throttled, busy, last_failed_at)
             VALUES ($1, $2, $3, 1, 1, 0, 0, $4)
             ON CONFLICT (client, name, minute) DO UPDATE SET
                 failed = sign_in_failures.failed + 1,
                 counted = sign_in_failures.counted + 1,
                 last_failed_at = excluded.last_failed_at",
            vec![
                client.into(),
                name.into(),
                minute_of(at).into(),
                at.into(),
            ],
        ))
        .await?;
    Ok(())
}

/// After a successful sign-in, in its transaction: the failure counted before its check (at
/// `attempted_at`) is taken back, and the throttle forgets the earlier failures of `name` from
/// `client` (their counts stay, for the audit page).
pub async fn clear_sign_in_failures_on<C: ConnectionTrait>(
    conn: &C,
    client: &str,
    name: &str,
    attempted_at: DateTime<Utc>,
) -> Result<(), DbErr> {
    let backend = conn.get_database_backend();
    let key = || -> Vec<Value> { vec![client.into(), name.into(), minute_of(attempted_at).into()] };
    for sql in [
        "UPDATE sign_in_failures SET failed = failed - 1
         WHERE client = $1 AND name = $2 AND minute = $3 AND failed > 0",
        "DELETE FROM sign_in_failures
         WHERE client = $1 AND name = $2 AND minute = $3 AND failed = 0 AND throttled = 0 AND busy = 0",
    ] {
        conn.execute_raw(crate::db::statement(backend, sql, key()))
            .await?;
    }
    conn.execute_raw(crate::db::statement(
        backend,
        "UPDATE sign_in_failures SET counted = 0 WHERE client = $1 AND name = $2 AND counted > 0",
        vec![client.into(), name.into()],
    ))
    .await?;
    Ok(())
}

/// What the throttle reads: the failures it still counts from one client since a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountedFailures {
    /// Of the user name asked for.
    pub of_name: i64,
    /// The newest of them.
    pub name_last: Option<DateTime<Utc>>,
    /// Of every name.
    pub of_client: i64,
    pub client_last: Option<DateTime<Utc>>,
}

#[derive(FromQueryResult)]
struct CountedRecord {
    of_name: i64,
    name_last: Option<DateTime<Utc>>,
    of_client: i64,
    client_last: Option<DateTime<Utc>>,
}

/// The counted failures of `client` (and of `name` from it) in rows of minutes from `since`:
/// one read of the client's rows by primary key.
pub async fn counted_failures(
    db: &Db,
    client: &str,
    name: &str,
    since: DateTime<Utc>,
) -> Result<CountedFailures, DbErr> {
    let row = db
        .dashboard
        .query_one_raw(crate::db::statement(
            db.backend(),
            "SELECT CAST(COALESCE(SUM(CASE WHEN name = $2 THEN counted ELSE 0 END), 0) AS BIGINT) AS of_name,
                    MAX(CASE WHEN name = $2 AND counted > 0 THEN last_failed_at END) AS name_last,
                    CAST(COALESCE(SUM(counted), 0) AS BIGINT) AS of_client,
                    MAX(CASE WHEN counted > 0 THEN last_failed_at END) AS client_last
             FROM sign_in_failures WHERE client = $1 AND minute >= $3",
            vec![client.into(), name.into(), minute_of(since).into()],
        ))
        .await?;
    Ok(match row {
        Some(row) => {
            let r = CountedRecord::from_query_result(&row, "")?;
            CountedFailures {
                of_name: r.of_name,
                name_last: r.name_last,
                of_client: r.of_client,
                client_last: r.client_last,
            }
        }
        None => CountedFailures::default(),
    })
}

/// Sign-ins refused unchecked, counted in memory and written once per minute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedSignIns {
    pub client: String,
    pub name: String,
    pub minute: DateTime<Utc>,
    /// By the throttle.
    pub throttled: i64,
    /// For want of a password check slot.
    pub busy: i64,
}

/// Rows of one `INSERT` of [`add_refused_sign_ins`].
const REFUSED_PER_STATEMENT: usize = 100;

/// Adds counts of refused sign-ins to their minutes' rows: one short transaction on the
/// dashboard's writer, one statement per [`REFUSED_PER_STATEMENT`] rows.
pub async fn add_refused_sign_ins(db: &Db, counts: &[RefusedSignIns]) -> Result<(), DbErr> {
    if counts.is_empty() {
        return Ok(());
    }
    let writer = db.dashboard_writer().await?;
    let txn = writer.begin().await?;
    for chunk in counts.chunks(REFUSED_PER_STATEMENT) {
        let mut values: Vec<Value> = Vec::with_capacity(chunk.len() * 5);
        let rows: Vec<String> = chunk
            .iter()
            .enumerate()
            .map(|(i, c)| {
                values.extend([
                    c.client.clone().into(),
                    c.name.clone().into(),
                    c.minute.into(),
                    c.throttled.into(),
                    c.busy.into(),
                ]);
                let p = i * 5;
                format!(
                    "(${}, ${}, ${}, 0, 0, ${}, ${})",
                    p + 1,
                    p + 2,
                    p + 3,
                    p + 4,
                    p + 5
                )
            })
            .collect();
        let sql = format!(
            "INSERT INTO sign_in_failures (client, name, minute, failed, counted, throttled, busy)
             VALUES {}
             ON CONFLICT (client, name, minute) DO UPDATE SET
                 throttled = sign_in_failures.throttled + excluded.throttled,
                 busy = sign_in_failures.busy + excluded.busy",
            rows.join(", ")
        );
        txn.execute_raw(crate::db::statement(db.backend(), sql, values))
            .await?;
    }
    txn.commit().await
}

/// Deletes the `sign_in_failures` rows of minutes before `cutoff`, and, of the rows of minutes
/// before `window_start` (which the throttle no longer reads), all but the newest `keep` (or a
/// few fewer: a minute is kept or deleted whole). Returns the rows deleted.
pub async fn trim_sign_in_failures(
    db: &Db,
    cutoff: DateTime<Utc>,
    window_start: DateTime<Utc>,
    keep: u64,
) -> Result<u64, DbErr> {
    let writer = db.dashboard_writer().await?;
    let aged = writer
        .execute_raw(crate::db::statement(
            db.backend(),
            "DELETE FROM sign_in_failures WHERE minute < $1",
            vec![minute_of(cutoff).into()],
        ))
        .await?
        .rows_affected();
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    let capped = writer
        .execute_raw(crate::db::statement(
            db.backend(),
            "DELETE FROM sign_in_failures WHERE minute < $1 AND minute <= (
                 SELECT minute FROM sign_in_failures ORDER BY minute DESC LIMIT 1 OFFSET $2)",
            vec![minute_of(window_start).into(), keep.into()],
        ))
        .await?
        .rows_affected();
    Ok(aged + capped)
}
