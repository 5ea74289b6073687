//! The top bar's search (`/search?q=`): what support types (`#10231`, `ORD_10231`, an email)
//! found by event id or object id, exactly, by prefix or by suffix, whatever the case, and as a
//! whole value anywhere inside the bodies; grouped by object, each with its current revision and
//! newest delivery.
//!
//! - PostgreSQL: ids through the inbox's indexes of ids in lower case and reversed (migration
//!   m20261203_000014), whole archive rows by their exact id (the archive's own indexes), and
//!   bodies through the GIN index of `hookbox_body_doc(body, body_fields)` ([`super::contains`]).
//! - SQLite: no index can serve a suffix or a value anywhere, so ids and bodies are read in the
//!   newest [`SCAN_ROWS`] deliveries (the result says when there were more), and exact ids in the
//!   whole archive through its indexes.
//!
//! Every statement runs through [`super::search_bounds::query_within`]: cancelled at the deadline or
//! when the request is dropped; the caller holds a body search's permit.

use super::Db;
use super::conditions::{Conditions, QueryError};
use super::contains::{AnyValue, PART_MIN_CHARS, push_part_anywhere, push_value_anywhere};
use super::events::{EVENT_COLUMNS, event_row};
use super::search_bounds::{SearchError, query_within};
use crate::model::{EventRow, FindResult, FoundEvent, FoundObject, Match, MatchField, MatchHow};
use sea_orm::{DatabaseBackend, DbErr, QueryResult, Statement};
use std::time::{Duration, Instant};

mod details;
mod ids;
pub(crate) use details::accepted_counts;
use details::{newest_deliveries, object_states};
pub use ids::like_literal;
use ids::{exact_in_archive, indexed_ids, scanned_ids};

/// The longest search accepted, in bytes (after trimming); a longer one is a 400 naming it.
pub const MAX_QUERY_BYTES: usize = 200;
/// The most objects, and events, a result shows.
pub const SHOWN: usize = 50;
/// SQLite: the newest deliveries whose ids and bodies a search reads.
pub const SCAN_ROWS: i64 = 100_000;
/// The newest deliveries with a matching body a search reads (they are grouped by object).
pub const BODY_MATCHES: usize = 200;

/// The bounds of one search ([`Limits::default`] in production; tests shrink them).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub scan_rows: i64,
    pub shown: usize,
    pub body_matches: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            scan_rows: SCAN_ROWS,
            shown: SHOWN,
            body_matches: BODY_MATCHES,
        }
    }
}

/// What was typed, as searched: trimmed; `None` when nothing but a `#` is left. The `#` is kept
/// (a Shopify order's name is `#1041`); ids are searched without it ([`bare`]).
/// Longer than [`MAX_QUERY_BYTES`], or holding control characters, is a 400 naming `q`.
pub fn parse_query(typed: &str) -> Result<Option<String>, QueryError> {
    let text = typed.trim();
    if text.len() > MAX_QUERY_BYTES {
        return Err(QueryError::BadFilter(format!(
            "q: longer than {MAX_QUERY_BYTES} bytes; type an id, an order number or an email"
        )));
    }
    if text.chars().any(char::is_control) {
        return Err(QueryError::BadFilter(
            "q: holds control characters; type an id, an order number or an email".into(),
        ));
    }
    Ok((!bare(text).is_empty()).then(|| text.to_string()))
}

/// What was typed without its leading `#`: how ids are searched (`#10231` finds `ord_10231`).
pub fn bare(q: &str) -> &str {
    q.strip_prefix('#').map(str::trim).unwrap_or(q)
}

/// An object (source, object id) or an event (source, event id, or the delivery's id when it
/// has none) found, with how.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Object(String, String),
    Event(String, String),
    Delivery(String, i64),
}

/// What the searches found, in the order found, each key once.
#[derive(Default)]
struct Found {
    keys: Vec<(Key, Vec<Match>)>,
    /// Body matches already read, by key: the newest delivery of an event found by its body.
    rows: Vec<(Key, EventRow)>,
    more_objects: bool,
    more_events: bool,
}

impl Found {
    fn add(&mut self, key: Key, how: Match) {
        match self.keys.iter_mut().find(|(k, _)| *k == key) {
            Some((_, matched)) if !matched.contains(&how) => matched.push(how),
            Some(_) => {}
            None => self.keys.push((key, vec![how])),
        }
    }

    /// An id match: of the object when the row has one, else of the event.
    fn add_id(&mut self, source: String, object_id: Option<String>, event_id: String, how: Match) {
        let key = match object_id {
            Some(object_id) => Key::Object(source, object_id),
            None => Key::Event(source, event_id),
        };
        self.add(key, how);
    }
}

/// Searches for `q` (as [`parse_query`] gave it) within `deadline`.
pub async fn find(
    db: &Db,
    q: &str,
    limits: &Limits,
    deadline: Duration,
) -> Result<FindResult, SearchError> {
    let within = Within {
        db,
        end: Instant::now() + deadline,
        deadline,
    };
    let backend = db.backend();
    let typed = q;
    let q = bare(typed);
    // The database's own lower case of what was typed: ids are compared in it.
    let lowered = within
        .run(crate::db::statement(
            backend,
            "SELECT lower($1) AS l",
            vec![q.into()],
        ))
        .await?;
    let lower: String = lowered
        .first()
        .map(|r| r.try_get("", "l"))
        .transpose()?
        .unwrap_or_else(|| q.to_lowercase());

    let mut found = Found::default();
    // The newest `scan_rows` deliveries: SQLite's whole search, and where both backends look for
    // a part of a text value (no index serves that).
    let window = within
        .run(crate::db::statement(
            backend,
            format!(
                "SELECT id FROM webhook_events ORDER BY id DESC LIMIT 1 OFFSET {}",
                limits.scan_rows
            ),
            vec![],
        ))
        .await?
        .first()
        .map(|r| r.try_get::<i64>("", "id"))
        .transpose()?;
    // Not a spelling (`db::dialect`) but two algorithms: index ranges, or a bounded scan.
    let postgres = backend == DatabaseBackend::Postgres;
    let floor = if postgres {
        if let Some(statement) = indexed_ids(&lower, limits.shown) {
            let rows = within.run(statement).await?;
            id_rows(&rows, &lower, limits.shown, &mut found)?;
        }
        None
    } else {
        for statement in scanned_ids(q, window, limits.shown) {
            let rows = within.run(statement).await?;
            id_rows(&rows, &lower, limits.shown, &mut found)?;
        }
        window
    };
    let searched = searched_words(postgres, window.is_some(), limits.scan_rows);
    let exact = within
        .run(exact_in_archive(backend, q, &lower, limits.shown))
        .await?;
    id_rows(&exact, &lower, limits.shown, &mut found)?;

    let mut c = Conditions::new();
    push_value_anywhere(&mut c, backend, &AnyValue::of(typed));
    if let Some(floor) = floor {
        c.and_with(floor, |p| format!("id > {p}"));
    }
    let body = within.run(crate::db::statement(
        backend,
        format!(
            "SELECT {EVENT_COLUMNS} FROM webhook_events {} ORDER BY received_at DESC, id DESC LIMIT {}",
            c.clause(),
            limits.body_matches + 1
        ),
        c.values,
    ))
    .await?;
    let mut body_more = body_rows(&body, MatchHow::Value, limits.body_matches, &mut found)?;
    if typed.chars().count() >= PART_MIN_CHARS {
        body_more |= parts_in_bodies(&within, typed, window, limits, &mut found).await?;
    }
    let mut result = assemble(db, typed, found, limits.shown, searched, floor.is_some()).await?;
    result.body_more = body_more;
    result.body_limit = limits.body_matches;
    Ok(result)
}

/// A search's statements, each within what is left of its deadline.
struct Within<'a> {
    db: &'a Db,
    end: Instant,
    deadline: Duration,
}

impl Within<'_> {
    async fn run(&self, statement: Statement) -> Result<Vec<QueryResult>, SearchError> {
        let left = self.end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(SearchError::TimedOut(self.deadline));
        }
        query_within(self.db, statement, left)
            .await
            .map_err(|e| match e {
                SearchError::TimedOut(_) => SearchError::TimedOut(self.deadline),
                other => other,
            })
    }
}

/// A part of a text value, whatever the case (`müll` finds `Müller`, `10231` finds
/// `"Order #10231"`), in the deliveries after `window` (the newest), newest first: the scan
/// stops at the bound. Whether there were more than it reads.
async fn parts_in_bodies(
    within: &Within<'_>,
    typed: &str,
    window: Option<i64>,
    limits: &Limits,
    found: &mut Found,
) -> Result<bool, SearchError> {
    let backend = within.db.backend();
    let mut c = Conditions::new();
    push_part_anywhere(&mut c, backend, typed);
    if let Some(floor) = window {
        c.and_with(floor, |p| format!("id > {p}"));
    }
    let parts = within
        .run(crate::db::statement(
            backend,
            format!(
                "SELECT {EVENT_COLUMNS} FROM webhook_events {} ORDER BY id DESC LIMIT {}",
                c.clause(),
                limits.body_matches + 1
            ),
            c.values,
        ))
        .await?;
    Ok(body_rows(
        &parts,
        MatchHow::Part,
        limits.body_matches,
        found,
    )?)
}

/// What a search looked through, in words: on PostgreSQL every id and whole value through the
/// indexes, and the text of the newest `scan_rows` bodies when there are more (`windowed`); on
/// SQLite the newest `scan_rows` deliveries, and older ones' exact ids.
fn searched_words(postgres: bool, windowed: bool, scan_rows: i64) -> String {
    match (postgres, windowed) {
        (true, false) => "the ids of every accepted event, the exact ids of every archived delivery and every archived body".to_string(),
        (true, true) => format!(
            "the ids of every accepted event, the exact ids of every archived delivery, the whole values of every archived body and the text of the newest {} bodies",
            thousands(scan_rows)
        ),
        (false, true) => format!(
            "the ids and bodies of the newest {} deliveries, and the exact ids of older ones",
            thousands(scan_rows)
        ),
        (false, false) => "the ids and body of every archived delivery".to_string(),
    }
}

/// Reads body matches (`how`: a whole value or a part) into `found`, at most `limit`; answers
/// whether there were more.
fn body_rows(
    rows: &[QueryResult],
    how: MatchHow,
    limit: usize,
    found: &mut Found,
) -> Result<bool, DbErr> {
    let how = Match {
        field: MatchField::Body,
        how,
    };
    for row in rows.iter().take(limit) {
        let row = event_row(row)?;
        let key = match (&row.object_id, &row.event_id) {
            (Some(object_id), _) => Key::Object(row.source.clone(), object_id.clone()),
            (None, Some(event_id)) => Key::Event(row.source.clone(), event_id.clone()),
            (None, None) => Key::Delivery(row.source.clone(), row.id),
        };
        // A part of a value is said only of what nothing else found (an id, a whole value).
        let known = found.keys.iter().any(|(k, _)| *k == key);
        if how.how == MatchHow::Value || !known {
            found.add(key.clone(), how);
        }
        if !found.rows.iter().any(|(k, _)| *k == key) {
            found.rows.push((key, row));
        }
    }
    Ok(rows.len() > limit)
}

/// The objects and events, exact id matches first, with their current revisions, counts and
/// newest deliveries.
async fn assemble(
    db: &Db,
    q: &str,
    found: Found,
    shown: usize,
    searched: String,
    bound_reached: bool,
) -> Result<FindResult, SearchError> {
    let exact = |m: &Vec<Match>| m.iter().any(|m| m.how == MatchHow::Exact);
    let mut keys = found.keys;
    keys.sort_by_key(|(_, m)| !exact(m));
    let (objects, events): (Vec<_>, Vec<_>) = keys
        .into_iter()
        .partition(|(k, _)| matches!(k, Key::Object(..)));
    let more_objects = found.more_objects || objects.len() > shown;
    let more_events = found.more_events || events.len() > shown;
    let objects: Vec<_> = objects.into_iter().take(shown).collect();
    let events: Vec<_> = events.into_iter().take(shown).collect();

    let (owned, matched): (Vec<(String, String)>, Vec<Vec<Match>>) = objects
        .into_iter()
        .filter_map(|(k, m)| match k {
            Key::Object(source, id) => Some(((source, id), m)),
            _ => None,
        })
        .unzip();
    let object_keys: Vec<(&str, &str)> = owned
        .iter()
        .map(|(source, id)| (source.as_str(), id.as_str()))
        .collect();
    let states = object_states(db, &object_keys).await?;
    let counts = accepted_counts(db, &object_keys).await?;
    let newest =
        newest_deliveries(db, &object_keys, "object_id", "received_at DESC, id DESC").await?;
    let event_keys: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|(k, _)| match k {
            Key::Event(source, id) => Some((source.as_str(), id.as_str())),
            _ => None,
        })
        .collect();
    let newest_events = newest_deliveries(db, &event_keys, "event_id", "id DESC").await?;

    let objects = matched
        .into_iter()
        .zip(object_keys.iter())
        .enumerate()
        .map(|(i, (matched, (source, object_id)))| {
            let (current_revision, updated_at) = states[i].clone().unzip();
            let accepted = counts[i];
            FoundObject {
                source: source.to_string(),
                object_id: object_id.to_string(),
                current_revision,
                updated_at,
                accepted: accepted.min(FoundObject::ACCEPTED_COUNTED),
                accepted_more: accepted > FoundObject::ACCEPTED_COUNTED,
                newest: newest[i].clone(),
                matched,
            }
        })
        .collect();
    let events = found_events(events, newest_events, &found.rows);
    Ok(FindResult {
        q: q.to_string(),
        objects,
        events,
        more_objects,
        more_events,
        limit: shown,
        searched,
        body_more: false,
        body_limit: 0,
        bound_reached,
    })
}

/// The events found, each with its newest delivery: read by event id (`newest_events`, in the
/// order of the events found by id), or the body match already read (`rows`).
fn found_events(
    events: Vec<(Key, Vec<Match>)>,
    newest_events: Vec<Option<EventRow>>,
    rows: &[(Key, EventRow)],
) -> Vec<FoundEvent> {
    let mut event_index = 0;
    events
        .into_iter()
        .map(|(key, matched)| {
            let (source, event_id, newest) = match &key {
                Key::Event(source, event_id) => {
                    event_index += 1;
                    (
                        source.clone(),
                        Some(event_id.clone()),
                        newest_events[event_index - 1].clone(),
                    )
                }
                _ => {
                    let row = rows
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map(|(_, row)| row.clone());
                    let source = row.as_ref().map(|r| r.source.clone()).unwrap_or_default();
                    (source, None, row)
                }
            };
            FoundEvent {
                source,
                event_id,
                newest,
                matched,
            }
        })
        .collect()
}

/// Reads id matches (`source`, `object_id`, `event_id`, `l_id`: the matched id in lower case,
/// `field`: `object` or `event`, `branch`: the part of the statement that found it, each bounded
/// to `shown` + 1 rows) into `found`, classifying each against `lower`.
fn id_rows(
    rows: &[QueryResult],
    lower: &str,
    shown: usize,
    found: &mut Found,
) -> Result<(), DbErr> {
    let mut per_branch: Vec<(String, usize)> = Vec::new();
    for row in rows {
        let branch: String = row.try_get("", "branch")?;
        let branch_exact = branch.starts_with("exact");
        let seen = match per_branch.iter_mut().find(|(b, _)| *b == branch) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                per_branch.push((branch, 1));
                1
            }
        };
        let source: String = row.try_get("", "source")?;
        let object_id: Option<String> = row.try_get("", "object_id")?;
        let event_id: Option<String> = row.try_get("", "event_id")?;
        let l_id: String = row.try_get("", "l_id")?;
        let field: String = row.try_get("", "field")?;
        let how = if l_id == lower {
            MatchHow::Exact
        } else if l_id.starts_with(lower) {
            MatchHow::Prefix
        } else {
            MatchHow::Suffix
        };
        let field = if field == "object" {
            MatchField::ObjectId
        } else {
            MatchField::EventId
        };
        // A branch of distinct matches answered past its bound: more match than are shown. (The
        // exact branches read deliveries, several of one object, within a bound of their own.)
        if seen > shown && !branch_exact {
            match field {
                MatchField::ObjectId => found.more_objects = true,
                _ => found.more_events = true,
            }
            continue;
        }
        found.add_id(
            source,
            object_id,
            event_id.unwrap_or_default(),
            Match { field, how },
        );
    }
    Ok(())
}

/// `100000` → `100,000`.
fn thousands(n: i64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_typed_is_trimmed_its_hash_taken_off_and_bounded() {
        assert_eq!(
            parse_query("  #10231 ").expect("accepted"),
            Some("#10231".into())
        );
        assert_eq!(bare("#10231"), "10231");
        assert_eq!(
            parse_query("ORD_10231").expect("accepted"),
            Some("ORD_10231".into())
        );
        assert_eq!(parse_query("   ").expect("accepted"), None);
        assert_eq!(parse_query("#").expect("accepted"), None);
        assert!(
            parse_query(&"a".repeat(MAX_QUERY_BYTES))
                .expect("accepted")
                .is_some()
        );
        for bad in [
            "a".repeat(MAX_QUERY_BYTES + 1),
            "a\u{0}b".into(),
            "a\nb".into(),
        ] {
            match parse_query(&bad) {
                Err(QueryError::BadFilter(why)) => assert!(why.starts_with("q: "), "{why}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(999), "999");
    }
}
