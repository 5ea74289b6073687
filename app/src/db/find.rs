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
//! Every statement runs through [`super::search::query_within`]: cancelled at the deadline or
//! when the request is dropped; the caller holds a body search's permit.

use super::Db;
use super::conditions::{Conditions, QueryError};
use super::contains::{AnyValue, push_value_anywhere};
use super::events::{EVENT_COLUMNS, event_row};
use super::search::{SearchError, query_within};
use crate::model::{EventRow, FindResult, FoundEvent, FoundObject, Match, MatchField, MatchHow};
use sea_orm::{DatabaseBackend, DbErr, QueryResult, Statement, Value};
use std::time::{Duration, Instant};

mod details;
pub(crate) use details::accepted_counts;
use details::{newest_deliveries, object_states};

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

/// What was typed, as searched: trimmed, a leading `#` taken off; `None` when nothing is left.
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
    let text = text.strip_prefix('#').unwrap_or(text).trim();
    Ok((!text.is_empty()).then(|| text.to_string()))
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
    let end = Instant::now() + deadline;
    let run = |statement: Statement| async move {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(SearchError::TimedOut(deadline));
        }
        query_within(db, statement, left)
            .await
            .map_err(|e| match e {
                SearchError::TimedOut(_) => SearchError::TimedOut(deadline),
                other => other,
            })
    };
    let backend = db.backend();
    // The database's own lower case of what was typed: ids are compared in it.
    let lowered = run(Statement::from_sql_and_values(
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
    // Not a spelling (`db::dialect`) but two algorithms: index ranges, or a bounded scan.
    let (floor, searched) = if backend == DatabaseBackend::Postgres {
        let statement = indexed_ids(&lower, limits.shown);
        if let Some(statement) = statement {
            let rows = run(statement).await?;
            id_rows(&rows, &lower, limits.shown, &mut found)?;
        }
        (
            None,
            "the ids of every accepted event, the exact ids of every archived delivery and every archived body"
                .to_string(),
        )
    } else {
        let floor = run(Statement::from_sql_and_values(
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
        for statement in scanned_ids(q, floor, limits.shown) {
            let rows = run(statement).await?;
            id_rows(&rows, &lower, limits.shown, &mut found)?;
        }
        let searched = match floor {
            Some(_) => format!(
                "the ids and bodies of the newest {} deliveries, and the exact ids of older ones",
                thousands(limits.scan_rows)
            ),
            None => "the ids and body of every archived delivery".to_string(),
        };
        (floor, searched)
    };
    let exact = run(exact_in_archive(backend, q, &lower, limits.shown)).await?;
    id_rows(&exact, &lower, limits.shown, &mut found)?;

    let mut c = Conditions::new();
    push_value_anywhere(&mut c, backend, &AnyValue::of(q));
    if let Some(floor) = floor {
        c.push("id > ?", floor);
    }
    let body = run(Statement::from_sql_and_values(
        backend,
        format!(
            "SELECT {EVENT_COLUMNS} FROM webhook_events {} ORDER BY received_at DESC, id DESC LIMIT {}",
            c.clause(),
            limits.body_matches + 1
        ),
        c.values,
    ))
    .await?;
    let body_more = body.len() > limits.body_matches;
    let how = Match {
        field: MatchField::Body,
        how: MatchHow::Value,
    };
    for row in body.iter().take(limits.body_matches) {
        let row = event_row(row)?;
        let key = match (&row.object_id, &row.event_id) {
            (Some(object_id), _) => Key::Object(row.source.clone(), object_id.clone()),
            (None, Some(event_id)) => Key::Event(row.source.clone(), event_id.clone()),
            (None, None) => Key::Delivery(row.source.clone(), row.id),
        };
        found.add(key.clone(), how);
        found.rows.push((key, row));
    }
    let mut result = assemble(db, q, found, limits.shown, searched, floor.is_some()).await?;
    result.body_more = body_more;
    result.body_limit = limits.body_matches;
    Ok(result)
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
    let mut event_index = 0;
    let events = events
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
                    let row = found
                        .rows
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
        .collect();
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

/// PostgreSQL: the distinct objects whose id starts or ends with `lower` (case aside), and the
/// events likewise, from the inbox's indexes; `None` when no range can be formed.
fn indexed_ids(lower: &str, shown: usize) -> Option<Statement> {
    let reversed: String = lower.chars().rev().collect();
    let (Some(after), Some(after_reversed)) = (after_prefix(lower), after_prefix(&reversed)) else {
        return None;
    };
    let limit = shown + 1;
    // Each step of the walk is one descent of the index to the next distinct (id, source,
    // object), so an object with many revisions costs one step.
    let walk = |name: &str, key: &str, lo: &str, hi: &str| {
        format!(
            r#"{name}(k, source, object_id) AS (
                 (SELECT {key} COLLATE "C", source, object_id FROM webhook_inbox
                   WHERE {key} COLLATE "C" >= {lo} AND {key} COLLATE "C" < {hi}
                   ORDER BY 1, 2, 3 LIMIT 1)
                 UNION ALL
                 (SELECT n.k, n.source, n.object_id FROM {name},
                   LATERAL (SELECT {key} COLLATE "C" AS k, i.source, i.object_id FROM webhook_inbox i
                     WHERE ({key} COLLATE "C", i.source, i.object_id) > ({name}.k, {name}.source, {name}.object_id)
                       AND {key} COLLATE "C" < {hi}
                     ORDER BY 1, 2, 3 LIMIT 1) AS n))"#
        )
    };
    let events = |key: &str, lo: &str, hi: &str| {
        format!(
            r#"SELECT source, object_id, event_id, lower(event_id) AS l_id, 'event' AS field, '{key}' AS branch FROM (
                 SELECT source, object_id, event_id FROM webhook_inbox
                 WHERE {key} COLLATE "C" >= {lo} AND {key} COLLATE "C" < {hi}
                 ORDER BY {key} COLLATE "C" LIMIT {limit}) AS e"#
        )
    };
    let sql = format!(
        "WITH RECURSIVE {}, {}
         SELECT source, object_id, NULL AS event_id, lower(object_id) AS l_id, 'object' AS field, 'starts' AS branch
           FROM (SELECT * FROM starts LIMIT {limit}) AS s
         UNION ALL
         SELECT source, object_id, NULL, lower(object_id), 'object', 'ends'
           FROM (SELECT * FROM ends LIMIT {limit}) AS e
         UNION ALL {}
         UNION ALL {}",
        walk("starts", "lower(object_id)", "$1", "$2"),
        walk("ends", "reverse(lower(object_id))", "$3", "$4"),
        events("lower(event_id)", "$1", "$2"),
        events("reverse(lower(event_id))", "$3", "$4"),
    );
    let values: Vec<Value> = vec![
        lower.into(),
        after.into(),
        reversed.into(),
        after_reversed.into(),
    ];
    Some(Statement::from_sql_and_values(
        DatabaseBackend::Postgres,
        sql,
        values,
    ))
}

/// The least string above every string starting with `prefix`, in code point (UTF-8 byte)
/// order: its last character incremented; `None` when every character is the greatest.
fn after_prefix(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        if (0xD800..0xE000).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// `text` as a literal inside a `LIKE` pattern: `%`, `_` and `\` escaped with `\`.
pub fn like_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// SQLite: the objects, then the events, whose id starts or ends with `q` (ASCII case aside)
/// among the deliveries newer than `floor`.
fn scanned_ids(q: &str, floor: Option<i64>, shown: usize) -> Vec<Statement> {
    let literal = like_literal(q);
    let window = floor.map_or(String::new(), |f| format!("id > {f} AND "));
    let by = |column: &str, field: &str, grouped: &str, object: &str| {
        Statement::from_sql_and_values(
            DatabaseBackend::Sqlite,
            format!(
                "SELECT source, {object} AS object_id, max(event_id) AS event_id,
                        lower({column}) AS l_id, '{field}' AS field, '{field}' AS branch
                 FROM webhook_events
                 WHERE {window}{column} IS NOT NULL
                   AND (lower({column}) LIKE lower($1) ESCAPE '\\' OR lower({column}) LIKE lower($2) ESCAPE '\\')
                 GROUP BY source, {grouped}
                 ORDER BY lower({column}), source LIMIT {}",
                shown + 1
            ),
            vec![format!("{literal}%").into(), format!("%{literal}").into()],
        )
    };
    vec![
        by("object_id", "object", "object_id", "object_id"),
        by("event_id", "event", "event_id", "max(object_id)"),
    ]
}

/// Whole archive rows whose object or event id is `q` as typed, in lower case or in upper case,
/// through the archive's indexes (deliveries never accepted, past SQLite's scan).
fn exact_in_archive(backend: DatabaseBackend, q: &str, lower: &str, shown: usize) -> Statement {
    let mut spellings = vec![q.to_string(), lower.to_string(), q.to_uppercase()];
    spellings.dedup();
    spellings.sort();
    spellings.dedup();
    let mut values: Vec<Value> = Vec::new();
    let mut list = Vec::new();
    for s in spellings {
        values.push(s.into());
        list.push(format!("${}", values.len()));
    }
    let list = list.join(", ");
    // The newest deliveries of each spelling: bounded, whatever an object's history.
    let limit = 4 * (shown + 1);
    let sql = format!(
        "SELECT source, object_id, event_id, lower(object_id) AS l_id, 'object' AS field, 'exact object' AS branch FROM (
           SELECT source, object_id, event_id FROM webhook_events WHERE object_id IN ({list})
           ORDER BY object_id, received_at DESC, id DESC LIMIT {limit}) AS o
         UNION ALL
         SELECT source, object_id, event_id, lower(event_id), 'event', 'exact event' FROM (
           SELECT source, object_id, event_id FROM webhook_events WHERE event_id IN ({list})
           ORDER BY event_id, source LIMIT {limit}) AS e"
    );
    Statement::from_sql_and_values(backend, sql, values)
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
            Some("10231".into())
        );
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
    fn a_prefix_range_ends_at_the_next_string_and_wildcards_are_literal() {
        assert_eq!(after_prefix("ord_1023").as_deref(), Some("ord_1024"));
        assert_eq!(after_prefix("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(after_prefix("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(after_prefix("\u{10FFFF}"), None);
        assert_eq!(like_literal(r"50%_a\b"), r"50\%\_a\\b");
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(999), "999");
    }
}
