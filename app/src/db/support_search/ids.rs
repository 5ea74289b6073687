//! The id statements of the search: PostgreSQL's index ranges of ids in lower case and reversed,
//! SQLite's bounded scan, and whole ids in the archive.

use sea_orm::{DatabaseBackend, Statement, Value};

/// PostgreSQL: the distinct objects whose id starts or ends with `lower` (case aside), and the
/// events likewise, from the inbox's indexes; `None` when no range can be formed.
pub(super) fn indexed_ids(lower: &str, shown: usize) -> Option<Statement> {
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
    Some(crate::db::statement(DatabaseBackend::Postgres, sql, values))
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
pub(super) fn scanned_ids(q: &str, floor: Option<i64>, shown: usize) -> Vec<Statement> {
    let literal = like_literal(q);
    let window = floor.map_or(String::new(), |f| format!("id > {f} AND "));
    let by = |column: &str, field: &str, grouped: &str, object: &str| {
        crate::db::statement(
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
pub(super) fn exact_in_archive(
    backend: DatabaseBackend,
    q: &str,
    lower: &str,
    shown: usize,
) -> Statement {
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
    crate::db::statement(backend, sql, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_range_ends_at_the_next_string_and_wildcards_are_literal() {
        assert_eq!(after_prefix("ord_1023").as_deref(), Some("ord_1024"));
        assert_eq!(after_prefix("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(after_prefix("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(after_prefix("\u{10FFFF}"), None);
        assert_eq!(like_literal(r"50%_a\b"), r"50\%\_a\\b");
    }
}
