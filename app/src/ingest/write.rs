//! The write path of a delivery: the only statements that write `webhook_inbox`, `object_state`,
//! `webhook_events` and `forward_deliveries` rows on the ingest path. Their column lists, their
//! parameters (bound by name, [`Named`]) and the outcomes they decide are written here once; the
//! three ways a delivery is recorded are built from them:
//!
//! - PostgreSQL: one data-modifying statement in autocommit mode, so `BEGIN`, the claim, the
//!   projection, the archive row, the forward deliveries and `COMMIT` cost the database one
//!   parse-bind-execute and hookbox one wake-up
//!   ([decision 0007](../../../docs/decisions/0007-one-round-trip-per-delivery.md));
//! - SQLite: the same steps as one script of statements (SQLite has no data-modifying `WITH`;
//!   what a later step needs of an earlier one goes through a temporary table of the
//!   connection's own, filled by `changes()` and `last_insert_rowid()` right after the statement
//!   they describe), wrapped in `BEGIN IMMEDIATE … COMMIT`;
//! - inside a caller's transaction (replay, and the tests that hold a delivery's locks open):
//!   the same statement or script, without a transaction of its own.
//!
//! Each comes in two: with the forward rows of `:destinations`, and without them for a delivery
//! with nowhere to go, which then never names `forward_deliveries` (nor waits while a day of it
//! is dropped under its lock).
//!
//! What the multi-statement transaction guaranteed still holds on every path:
//! - The claim runs first (every later part reads it), so a delivery takes the inbox row before
//!   the projection's row lock: the lock order of the transaction.
//! - The projection's "only a greater revision" comparison is the upsert's own `WHERE`, decided
//!   under the row lock `ON CONFLICT` takes, against the newest committed row.
//! - The statement is atomic: the inbox row, the projection, the archive row and the forward
//!   rows commit together or not at all.
//! - A delivery that is not claimed (a retry, a reused id or revision) writes nothing there and
//!   returns no row; it is then classified by a statement of its own ([`Statements::classify`]),
//!   whose fresh snapshot sees the row the claim met, and archived ([`Statements::archive`]),
//!   the only row it writes. On PostgreSQL a retry of an event received the same day is
//!   archived by the classification's statement itself.
//!
//! The outcomes are decided by the statements as the vocabulary spells them
//! (`OutcomeKind::as_str`), their status is `OutcomeKind::status`, and which of them are
//! forwarded is `OutcomeKind::forwards`: the SQL is built from those, and every answer is
//! decoded back into an [`Outcome`] strictly (an outcome the vocabulary does not know is an
//! error, never a default).

use crate::db::dialect::{Dialect, Named};
use crate::model::{ForwardStatus, OutcomeKind};
use std::sync::OnceLock;

/// The inbox row's columns (SQLite adds the snapshot's canonical form, its content identity).
const INBOX_COLUMNS: &str =
    "source, event_id, object_id, revision, snapshot, received_at, signed_body_digest";

/// The projection's columns.
const PROJECTION_COLUMNS: &str = "source, object_id, revision, snapshot, updated_at";

/// The archive row's columns, in the order of [`archive_values`] (after the id, on PostgreSQL:
/// [`archive_columns`]).
const ARCHIVE_COLUMNS: &str = "source, event_id, object_id, revision, event_type, status, outcome,
        error_message, headers, body, received_at, replay_of, replayed_by, error_class, body_fields";

/// The archive row's columns as `dialect` inserts them: on PostgreSQL the id first, made of the
/// day the delivery was received (`db::days`), so the row is in that day's table and an event's
/// rows are found in the day the inbox received it.
fn archive_columns(dialect: Dialect) -> String {
    match dialect.new_day_id("webhook_events_id_seq", ":received_at") {
        Some(_) => format!("id, {ARCHIVE_COLUMNS}"),
        None => ARCHIVE_COLUMNS.to_string(),
    }
}

/// A forward delivery's columns, in the order of [`forward_values`].
const FORWARD_COLUMNS: &str = "destination, source, event_id, object_id, revision, event_type,
        archive_id, status, attempts, next_attempt_at, created_at, received_at, payload";

/// The archive row's values for [`ARCHIVE_COLUMNS`]: the delivery's parameters, with the
/// status, the outcome, the error (its message and class) and the body (with a form's fields)
/// as the statement decides them.
fn archive_values(
    dialect: Dialect,
    status: &str,
    outcome: &str,
    (error, class): (&str, &str),
    (body, fields): (&str, &str),
) -> String {
    format!(
        "{id}:source, :event_id, :object_id, :revision, :event_type, {status}, {outcome}, {error},
        {headers}, {body}, :received_at, :replay_of, :replayed_by, {class}, {fields}",
        id = dialect
            .new_day_id("webhook_events_id_seq", ":received_at")
            .map(|id| format!("{id}, "))
            .unwrap_or_default(),
        headers = dialect.json(":headers"),
    )
}

/// A forward delivery's values for [`FORWARD_COLUMNS`]: pending, due now, carrying the snapshot
/// as sent or (without one) a dedup source's whole body.
fn forward_values(destination: &str, archive_id: &str) -> String {
    format!(
        "{destination}, :source, :event_id, :object_id, :revision, :event_type, {archive_id},
        '{pending}', 0, :now, :now, :received_at, COALESCE(:snapshot, :body_payload)",
        pending = ForwardStatus::Pending.as_str(),
    )
}

/// The projection's upsert from `rows`: only a greater revision replaces the stored one.
fn projection_upsert(dialect: Dialect, rows: &str) -> String {
    format!(
        "INSERT INTO object_state AS cur ({PROJECTION_COLUMNS})
    SELECT :source, :object_id, :revision, {snapshot}, :received_at FROM {rows}
    ON CONFLICT (source, object_id) DO UPDATE
       SET revision = excluded.revision, snapshot = excluded.snapshot, updated_at = excluded.updated_at
     WHERE cur.revision < excluded.revision",
        snapshot = dialect.json(":snapshot"),
    )
}

/// The projection's revision for a stale answer (`outcome` is the archive row's): read only
/// then, the one answer that names it, so an applied delivery reads nothing more.
fn current_revision(outcome: &str) -> String {
    format!(
        "CASE WHEN {outcome} = {stale} THEN
        (SELECT revision FROM object_state WHERE source = :source AND object_id = :object_id)
    END",
        stale = literal(OutcomeKind::Stale)
    )
}

/// A spelling of the vocabulary as an SQL literal.
fn literal(kind: OutcomeKind) -> String {
    format!("'{}'", kind.as_str())
}

/// The archive status of `kind` as an SQL literal.
fn status_literal(kind: OutcomeKind) -> String {
    format!("'{}'", kind.status().as_str())
}

/// The claimed outcomes' status: a claimed delivery is applied, stale or accepted, all one
/// status (checked by a test).
fn claimed_status() -> String {
    status_literal(OutcomeKind::Applied)
}

/// The outcomes that are forwarded, as an SQL list.
fn forwarded_outcomes() -> String {
    OutcomeKind::ALL
        .iter()
        .filter(|kind| kind.forwards())
        .map(|kind| literal(*kind))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The statements of the write path for one dialect, built once.
pub(super) struct Statements {
    /// The claimed path of a delivery with somewhere to go (`:destinations`): the claim,
    /// projection, archive row and forward rows.
    pub forwarding: Claimed,
    /// The claimed path of a delivery with nowhere to go: the same without the forward rows, so
    /// it never names `forward_deliveries` (and never waits for a lock on it, as while a day of
    /// it is dropped).
    pub unforwarded: Claimed,
    /// What an unclaimed delivery's claim met, in one statement (one snapshot): one row of
    /// `same_content` (null when no row has the event id), `body_holder` (the event that carried
    /// that signed body), `revision_holder` (the event holding that object revision),
    /// `event_day` (the day the inbox received the event id's row) and `archived`: on
    /// PostgreSQL, a duplicate of an event received the same day is archived by this statement
    /// too (the row's id; a retry costs two round trips, not three), null otherwise.
    pub classify: Named,
    /// One archive row with the outcome, status and error bound (`id`). A duplicate whose body
    /// is byte for byte an earlier archived body of its event refers to that row (`body_of`)
    /// with an empty body of its own: a re-post costs its headers, not another copy.
    pub archive: Named,
    /// A failure's archive row when its cause's problem is one the failure changes nothing of
    /// (open or ignored: `problems::marks::unchanged_by_a_failure`, whose row it holds `FOR
    /// SHARE` until it commits): `id`, or no row (nothing written) when the problem's change
    /// must be decided in a transaction (`problems::marks::failed`).
    pub failure_of_unchanged_problem: Named,
    /// The projection's revision after a stale answer (`revision`).
    pub current_revision: Named,
    /// A replay (the archive row `replay`) that did not fail resolves the failure it replays
    /// (`replayed`) and, up the chain of `replay_of`, the failures that one replays (the
    /// original of a replay of a replay too), and the failed replays of any of them. Each
    /// failed row's `resolved_by` is set once.
    pub resolve: Named,
}

/// The claimed path: PostgreSQL's one statement, SQLite's script. Answers one row (`id`,
/// `outcome`, `current_revision`) when it claimed, none when it did not.
pub(super) struct Claimed {
    /// With a transaction of its own (PostgreSQL's autocommit, SQLite's `BEGIN IMMEDIATE`).
    pub own: Named,
    /// Inside a caller's transaction (the SQLite script without `BEGIN` and `COMMIT`).
    pub in_transaction: Named,
}

impl Claimed {
    fn build(dialect: Dialect, forwards: bool) -> Claimed {
        match dialect {
            Dialect::Postgres => {
                let statement = postgres_claimed(forwards);
                Claimed {
                    own: Named::new(&statement),
                    in_transaction: Named::new(&statement),
                }
            }
            Dialect::Sqlite => Claimed {
                own: Named::new(&sqlite_claimed(true, forwards)),
                in_transaction: Named::new(&sqlite_claimed(false, forwards)),
            },
        }
    }
}

impl Statements {
    pub(super) fn of(dialect: Dialect) -> &'static Statements {
        static POSTGRES: OnceLock<Statements> = OnceLock::new();
        static SQLITE: OnceLock<Statements> = OnceLock::new();
        match dialect {
            Dialect::Postgres => POSTGRES.get_or_init(|| Statements::build(dialect)),
            Dialect::Sqlite => SQLITE.get_or_init(|| Statements::build(dialect)),
        }
    }

    fn build(dialect: Dialect) -> Statements {
        Statements {
            forwarding: Claimed::build(dialect, true),
            unforwarded: Claimed::build(dialect, false),
            classify: Named::new(&classify(dialect)),
            archive: Named::new(&archive(dialect, "")),
            failure_of_unchanged_problem: Named::new(&format!(
                "WITH problem AS ({unchanged})\n{archive}",
                unchanged = crate::db::problems::marks::unchanged_by_a_failure(
                    dialect,
                    (":source", ":outcome", ":error_class")
                ),
                archive = archive(dialect, "WHERE EXISTS (SELECT 1 FROM problem)"),
            )),
            current_revision: Named::new(
                "SELECT revision FROM object_state WHERE source = :source AND object_id = :object_id",
            ),
            resolve: Named::new(&super::resolution::statement()),
        }
    }
}

/// PostgreSQL: the claimed path as one data-modifying statement; `forwards`: with the forward
/// rows of `:destinations`.
pub(super) fn postgres_claimed(forwards: bool) -> String {
    let d = Dialect::Postgres;
    let forwarded = if forwards {
        format!(
            ",
forwarded AS (
    INSERT INTO forward_deliveries ({FORWARD_COLUMNS})
    SELECT {forward} FROM archived, {destinations}
    WHERE archived.outcome IN ({forwarded})
)",
            forward = forward_values("d.value", "archived.id"),
            destinations = d.json_strings(":destinations"),
            forwarded = forwarded_outcomes(),
        )
    } else {
        String::new()
    };
    format!(
        "WITH claim AS (
    INSERT INTO webhook_inbox ({INBOX_COLUMNS})
    VALUES (:source, :event_id, :object_id, :revision, {snapshot}, :received_at, :digest)
    ON CONFLICT DO NOTHING
    RETURNING 1
),
advanced AS (
    {project}
    RETURNING 1
),
decided AS (
    SELECT CASE WHEN NOT :projected THEN {accepted}
                WHEN EXISTS (SELECT 1 FROM advanced) THEN {applied}
                ELSE {stale} END AS outcome
    FROM claim
),
archived AS (
    INSERT INTO webhook_events ({archive_columns})
    SELECT {archive} FROM decided
    RETURNING id, outcome
){forwarded}
SELECT archived.id, archived.outcome, {current} AS current_revision
FROM archived",
        current = current_revision("archived.outcome"),
        archive_columns = archive_columns(d),
        snapshot = d.json(":snapshot"),
        project = projection_upsert(d, "claim WHERE :projected"),
        accepted = literal(OutcomeKind::Accepted),
        applied = literal(OutcomeKind::Applied),
        stale = literal(OutcomeKind::Stale),
        archive = archive_values(
            d,
            &claimed_status(),
            "decided.outcome",
            ("NULL", "NULL"),
            (":body", ":body_fields")
        ),
    )
}

/// SQLite: the claimed path as one script; `own_transaction` wraps it in `BEGIN IMMEDIATE …
/// COMMIT`, otherwise it runs in the caller's transaction; `forwards`: with the forward rows of
/// `:destinations`.
fn sqlite_claimed(own_transaction: bool, forwards: bool) -> String {
    let d = Dialect::Sqlite;
    let (begin, commit) = if own_transaction {
        ("BEGIN IMMEDIATE;", "COMMIT;")
    } else {
        ("", "")
    };
    let forwarded = if forwards {
        format!(
            "UPDATE temp.hookbox_ingest_step SET archive_id = last_insert_rowid() WHERE k = 1 AND claimed = 1;
INSERT INTO forward_deliveries ({FORWARD_COLUMNS})
    SELECT {forward}
    FROM temp.hookbox_ingest_step AS s, {destinations}
    WHERE s.k = 1 AND s.claimed = 1
      AND (CASE WHEN NOT :projected THEN {accepted} WHEN s.advanced = 1 THEN {applied} ELSE {stale} END)
          IN ({forwarded});",
            forward = forward_values("d.value", "s.archive_id"),
            destinations = d.json_strings(":destinations"),
            accepted = literal(OutcomeKind::Accepted),
            applied = literal(OutcomeKind::Applied),
            stale = literal(OutcomeKind::Stale),
            forwarded = forwarded_outcomes(),
        )
    } else {
        String::new()
    };
    format!(
        "CREATE TEMP TABLE IF NOT EXISTS hookbox_ingest_step (
    k INTEGER PRIMARY KEY, claimed INTEGER NOT NULL, advanced INTEGER NOT NULL, archive_id INTEGER);
{begin}
INSERT INTO webhook_inbox ({INBOX_COLUMNS}, snapshot_canonical)
    VALUES (:source, :event_id, :object_id, :revision, :snapshot, :received_at, :digest, :canonical)
    ON CONFLICT DO NOTHING;
INSERT OR REPLACE INTO temp.hookbox_ingest_step (k, claimed, advanced, archive_id) VALUES (1, changes(), 0, NULL);
{project};
UPDATE temp.hookbox_ingest_step SET advanced = changes() WHERE k = 1 AND claimed = 1 AND :projected;
INSERT INTO webhook_events ({archive_columns})
    SELECT {archive}
    FROM temp.hookbox_ingest_step WHERE k = 1 AND claimed = 1
    RETURNING id, outcome, {current} AS current_revision;
{forwarded}
{commit}",
        archive_columns = archive_columns(d),
        current = current_revision("outcome"),
        project = projection_upsert(
            d,
            "temp.hookbox_ingest_step WHERE k = 1 AND claimed = 1 AND :projected"
        ),
        archive = archive_values(
            d,
            &claimed_status(),
            &format!(
                "CASE WHEN NOT :projected THEN {} WHEN advanced = 1 THEN {} ELSE {} END",
                literal(OutcomeKind::Accepted),
                literal(OutcomeKind::Applied),
                literal(OutcomeKind::Stale)
            ),
            ("NULL", "NULL"),
            (":body", ":body_fields")
        ),
    )
}

/// What an unclaimed delivery's claim met, and on PostgreSQL the archive row of a duplicate of
/// an event the inbox received the same day (see [`Statements::classify`]).
fn classify(dialect: Dialect) -> String {
    let met = met(dialect);
    match dialect {
        Dialect::Postgres => {
            let decided = Decided {
                status: &status_literal(OutcomeKind::Duplicate),
                outcome: &literal(OutcomeKind::Duplicate),
                // A duplicate is no failure: no error (checked by a test).
                error: ("NULL", "NULL"),
                // The delivery's own day, so the plan reads that day's table alone; an event
                // the inbox received on another day is archived by `archive`.
                event_day: ":event_day",
            };
            // `Met::outcome`'s duplicate: the event id's row holds this content, or any content
            // for a dedup source. `record` checks the two agree.
            let condition = "WHERE met.event_day = :event_day
      AND (met.same_content OR (met.same_content IS NOT NULL AND :dedup))";
            format!(
                "WITH met AS (
{met}
),
archived AS (
    {archive}
)
SELECT met.same_content, met.body_holder, met.revision_holder, met.event_day,
       (SELECT id FROM archived) AS archived
FROM met",
                archive = archive_from(dialect, &decided, "met", condition),
            )
        }
        Dialect::Sqlite => format!("{met},\n    NULL AS archived"),
    }
}

/// What an unclaimed delivery's claim met, in one snapshot: content compared as `jsonb` on
/// PostgreSQL, through the canonical form on SQLite.
fn met(dialect: Dialect) -> String {
    let (column, content) = if dialect.compares_canonical() {
        ("snapshot_canonical", ":content".to_string())
    } else {
        ("snapshot", dialect.json(":content"))
    };
    format!(
        "SELECT
    (SELECT {same_object} AND {same_revision} AND {same_content}
       FROM webhook_inbox WHERE source = :source AND event_id = :event_id) AS same_content,
    (SELECT event_id FROM webhook_inbox
      WHERE source = :source AND signed_body_digest = :digest LIMIT 1) AS body_holder,
    (SELECT event_id FROM webhook_inbox
      WHERE source = :source AND object_id = :object_id AND revision = :revision LIMIT 1) AS revision_holder,
    (SELECT {day} FROM webhook_inbox
      WHERE source = :source AND event_id = :event_id) AS event_day",
        day = dialect.day_number("received_at"),
        same_object = dialect.is_same("object_id", ":object_id"),
        same_revision = dialect.is_same("revision", ":revision"),
        same_content = dialect.is_same(column, &content),
    )
}

/// What an archive row's statement decides that the delivery's parameters do not carry: its
/// status, outcome and error (message, class) as SQL, and the day the inbox received its event.
struct Decided<'a> {
    status: &'a str,
    outcome: &'a str,
    error: (&'a str, &'a str),
    event_day: &'a str,
}

/// An archive row's outcome as bound by an [`ArchiveRow`].
const BOUND: Decided<'static> = Decided {
    status: ":status",
    outcome: ":outcome",
    error: (":error_message", ":error_class"),
    event_day: ":event_day",
};

/// One archive row with its outcome bound (see [`Statements::archive`]), written when
/// `condition` (a `WHERE` clause, or nothing) holds.
fn archive(dialect: Dialect, condition: &str) -> String {
    archive_from(dialect, &BOUND, "(SELECT 1) AS one", condition)
}

/// One archive row of the outcome `decided`, selected from `from` when `condition` holds.
fn archive_from(dialect: Dialect, decided: &Decided<'_>, from: &str, condition: &str) -> String {
    format!(
        "INSERT INTO webhook_events ({archive_columns}, body_of)
    SELECT {values}, same.id
    FROM {from} {same}
    {condition}
    RETURNING id",
        archive_columns = archive_columns(dialect),
        values = archive_values(
            dialect,
            decided.status,
            decided.outcome,
            decided.error,
            (
                &format!(
                    "CASE WHEN same.id IS NULL THEN :body ELSE {} END",
                    dialect.empty_bytes()
                ),
                // A form's fields go with its body: none where the body is a reference.
                "CASE WHEN same.id IS NULL THEN :body_fields END",
            ),
        ),
        same = dialect.left_join_lateral(
            &format!(
                "SELECT id FROM webhook_events
           WHERE {outcome} = {duplicate} AND event_id = :event_id AND source = :source
             AND body_of IS NULL AND body = :body{that_day}
           LIMIT 1{key_share}",
                outcome = decided.outcome,
                duplicate = literal(OutcomeKind::Duplicate),
                // The event's first delivery was archived on the day the inbox received it: on
                // PostgreSQL that day's table alone is read. Any row holding the body will do:
                // no order, so the plan goes by the event's index, not along the day's ids.
                that_day = dialect.ids_of_day("id", decided.event_day),
                // The row referred to is kept from a purge or a body expiry until this commits;
                // one of those under way is waited for, and then the row is gone or its body
                // is: this duplicate keeps its own copy.
                key_share = dialect.lock_key_share()
            ),
            "same",
        ),
    )
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
