//! The `match` filter of `/events`: deliveries whose JSON body contains a given JSON object, the
//! way PostgreSQL's `@>` has it: an object contains another when it has each of its keys with a
//! value containing the other's; an array contains another when each of the other's elements is
//! contained in one of its elements; scalars by type and value (numbers by value, `1` and `1.0`
//! alike; `true` is not `1`).
//!
//! A form-encoded body is searched as the JSON object of its fields (`body_fields`, migration
//! m20261203_000017). On PostgreSQL it is `@>` itself over the GIN index of
//! `hookbox_body_doc(body, body_fields)` (the fields, else the body as `jsonb`). On SQLite the same rules are spelled
//! with `json_each`, reading each body: correct, and as fast as a scan of the archive (see
//! docs/dashboard.md). The top bar's search looks for a value anywhere in a body
//! ([`push_value_anywhere`]) over the same index.

use super::conditions::{Conditions, QueryError};
use sea_orm::DatabaseBackend;
use serde_json::Value as Json;

use crate::routing::MAX_DEPTH;
pub use crate::routing::MAX_MATCH_BYTES;

/// A `match` parameter as a JSON object, or a 400 naming the problem
/// ([`crate::routing::parse_match`]: a route's `match` is held to the same rules).
pub fn parse_match(text: &str) -> Result<Json, QueryError> {
    crate::routing::parse_match(text).map_err(|why| QueryError::BadFilter(format!("match: {why}")))
}

/// Adds the condition "the body contains `value`" (`text` is its JSON as given).
pub(crate) fn push_containment(
    c: &mut Conditions,
    backend: DatabaseBackend,
    text: &str,
    value: &Json,
) {
    // Not a spelling (`db::dialect`) but two algorithms: PostgreSQL has the operator itself over
    // its GIN index; SQLite's containment is a tree of `json_each` subqueries built from `value`.
    if backend == DatabaseBackend::Postgres {
        c.and_with(text.to_string(), |p| {
            format!("hookbox_body_doc(body, body_fields) @> CAST({p} AS jsonb)")
        });
        return;
    }
    let mut aliases = 0;
    let inner = sqlite_contains(c, "m0", value, &mut aliases);
    // The body wrapped in an array, so that its one element has a type and a value like every
    // element below; a body that is not JSON contains nothing (and is never parsed as JSON).
    c.and(format!(
        "(CASE WHEN json_valid(COALESCE(body_fields, CAST(body AS TEXT)))
               THEN EXISTS (SELECT 1 FROM json_each(json_array(json(COALESCE(body_fields, CAST(body AS TEXT))))) AS m0 WHERE {inner})
               ELSE 0 END)"
    ));
}

/// SQLite: whether the `json_each` row `row` (its `type` and `value`) contains `value`.
fn sqlite_contains(c: &mut Conditions, row: &str, value: &Json, aliases: &mut usize) -> String {
    fn next(aliases: &mut usize) -> String {
        *aliases += 1;
        format!("m{aliases}")
    }
    match value {
        Json::Object(map) => {
            let mut parts = vec![format!("{row}.type = 'object'")];
            for (key, sub) in map {
                let child = next(aliases);
                let last = next(aliases);
                let key = c.param(key.clone());
                let inner = sqlite_contains(c, &child, sub, aliases);
                // Of duplicate keys the last counts, as in `jsonb` (json_each's ids follow the
                // text's order).
                parts.push(format!(
                    "EXISTS (SELECT 1 FROM json_each({row}.value) AS {child} WHERE {child}.key = {key}
                       AND {child}.id = (SELECT max({last}.id) FROM json_each({row}.value) AS {last} WHERE {last}.key = {key})
                       AND {inner})"
                ));
            }
            parts.join(" AND ")
        }
        Json::Array(items) => {
            let mut parts = vec![format!("{row}.type = 'array'")];
            for item in items {
                let child = next(aliases);
                let inner = sqlite_contains(c, &child, item, aliases);
                parts.push(format!(
                    "EXISTS (SELECT 1 FROM json_each({row}.value) AS {child} WHERE {inner})"
                ));
            }
            parts.join(" AND ")
        }
        Json::String(text) => {
            let p = c.param(text.clone());
            format!("({row}.type = 'text' AND {row}.value = {p})")
        }
        Json::Number(n) => {
            let p = match n.as_i64() {
                Some(i) => c.param(i),
                None => c.param(n.as_f64().unwrap_or(f64::NAN)),
            };
            format!("({row}.type IN ('integer', 'real') AND {row}.value = {p})")
        }
        Json::Bool(true) => format!("{row}.type = 'true'"),
        Json::Bool(false) => format!("{row}.type = 'false'"),
        Json::Null => format!("{row}.type = 'null'"),
    }
}

/// What the top bar's search looks for anywhere in a body ([`push_value_anywhere`]): what was
/// typed, also in lower case, and the JSON number it spells (`10231` finds `"10231"` and `10231`).
/// Whole values; a part of a text value is [`push_part_anywhere`]'s.
#[derive(Debug, Clone, PartialEq)]
pub struct AnyValue {
    pub strings: Vec<String>,
    pub number: Option<serde_json::Number>,
}

impl AnyValue {
    /// What `text` finds whole: itself and its lower case; typed with a leading `#` (`#1041`, a
    /// Shopify order's name), also without it (`1041`, the order number other sources quote), and
    /// the number that spells.
    pub fn of(text: &str) -> AnyValue {
        let bare = text.strip_prefix('#').map(str::trim).unwrap_or(text);
        let mut strings: Vec<String> = Vec::new();
        for spelling in [text, bare] {
            for s in [spelling.to_string(), spelling.to_lowercase()] {
                if !s.is_empty() && !strings.contains(&s) {
                    strings.push(s);
                }
            }
        }
        let number = serde_json::from_str::<serde_json::Number>(bare)
            .ok()
            .filter(|_| bare.len() <= 40);
        AnyValue { strings, number }
    }
}

/// The fewest characters a search needs before it also looks for them inside text values
/// ([`push_part_anywhere`]): shorter ones would match nearly every body.
pub const PART_MIN_CHARS: usize = 3;

/// The spellings of one character whatever its case: itself, its lower and upper case (each when
/// it is one character; `ß` upper-cases to `SS`, which is left out).
fn case_variants(c: char) -> Vec<char> {
    fn one(spelled: impl Iterator<Item = char>) -> Option<char> {
        let mut it = spelled;
        match (it.next(), it.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }
    let upper = one(c.to_uppercase());
    let candidates = [
        one(c.to_lowercase()),
        upper,
        upper.and_then(|u| one(u.to_lowercase())),
    ];
    let mut out = vec![c];
    for v in candidates.into_iter().flatten() {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// Writes a letter of several spellings as a bracket of them (`ü` → `[üÜ]`); `false` for a
/// character of one spelling, left to the caller.
fn push_spellings(out: &mut String, c: char) -> bool {
    let variants = case_variants(c);
    if variants.len() < 2 {
        return false;
    }
    out.push('[');
    out.extend(variants);
    out.push(']');
    true
}

/// `text` as a PostgreSQL regular expression (the jsonpath `like_regex`'s) that finds it inside a
/// value whatever the case, Unicode included, and whatever the database's locale: each letter a
/// bracket of its spellings (`müll` → `[mM][üÜ][lL][lL]`), every other character but letters and
/// digits escaped.
pub fn part_regex(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if push_spellings(&mut out, c) {
            continue;
        }
        if c.is_alphanumeric() {
            out.push(c);
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
}

/// `text` as a SQLite `GLOB` pattern that finds it inside a value whatever the case: each letter
/// a bracket of its spellings, `*`, `?` and `[` taken literally, `*` on both sides.
pub fn part_glob(text: &str) -> String {
    let mut out = String::from("*");
    for c in text.chars() {
        if push_spellings(&mut out, c) {
            continue;
        }
        if matches!(c, '*' | '?' | '[') {
            out.push('[');
            out.push(c);
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out.push('*');
    out
}

/// Adds the condition "some text value in the body, at any depth, holds `text`, whatever the
/// case": on PostgreSQL a JSON path `like_regex` ([`part_regex`]) evaluated on each body (no
/// index serves a part of a value: the caller bounds the rows read); on SQLite `json_tree` and
/// `GLOB` ([`part_glob`]). A body that is not JSON holds nothing.
pub(crate) fn push_part_anywhere(c: &mut Conditions, backend: DatabaseBackend, text: &str) {
    // Two algorithms, not a spelling: a JSON path, or `json_tree` over each body.
    if backend == DatabaseBackend::Postgres {
        let path = c.param(format!(
            "$.** ? (@ like_regex {})",
            Json::String(part_regex(text))
        ));
        // The function, not `@?`: the GIN index cannot serve a regular expression, and the
        // planner must walk the newest rows instead.
        c.and(format!(
            "jsonb_path_exists(hookbox_body_doc(body, body_fields), CAST({path} AS jsonpath))"
        ));
        return;
    }
    let p = c.param(part_glob(text));
    c.and(format!(
        "(CASE WHEN json_valid(COALESCE(body_fields, CAST(body AS TEXT)))
               THEN EXISTS (SELECT 1 FROM json_tree(COALESCE(body_fields, CAST(body AS TEXT))) AS v WHERE v.type = 'text' AND v.atom GLOB {p})
               ELSE 0 END)"
    ));
}

/// Adds the condition "some value in the body, at any depth (inside objects and arrays), equals
/// one of `values`": on PostgreSQL a JSON path (`$.** ? (@ == "…")`) over the GIN index of
/// `hookbox_body_doc(body, body_fields)` (its `jsonb_ops` class); on SQLite
/// `json_tree` reading each body. A body that is not JSON holds nothing.
pub(crate) fn push_value_anywhere(c: &mut Conditions, backend: DatabaseBackend, values: &AnyValue) {
    // Two algorithms, not a spelling: the index's operator, or reading each body.
    if backend == DatabaseBackend::Postgres {
        let mut tests: Vec<String> = values
            .strings
            .iter()
            .map(|s| format!("@ == {}", Json::String(s.clone())))
            .collect();
        if let Some(n) = &values.number {
            tests.push(format!("@ == {n}"));
        }
        // Built, not pushed: `push` would take the operator's `?` for a placeholder.
        let path = c.param(format!("$.** ? ({})", tests.join(" || ")));
        c.and(format!(
            "hookbox_body_doc(body, body_fields) @? CAST({path} AS jsonpath)"
        ));
        return;
    }
    let mut tests: Vec<String> = values
        .strings
        .iter()
        .map(|s| {
            let p = c.param(s.clone());
            format!("(v.type = 'text' AND v.atom = {p})")
        })
        .collect();
    if let Some(n) = &values.number {
        let p = match n.as_i64() {
            Some(i) => c.param(i),
            None => c.param(n.as_f64().unwrap_or(f64::NAN)),
        };
        tests.push(format!("(v.type IN ('integer', 'real') AND v.atom = {p})"));
    }
    c.and(format!(
        "(CASE WHEN json_valid(COALESCE(body_fields, CAST(body AS TEXT)))
               THEN EXISTS (SELECT 1 FROM json_tree(COALESCE(body_fields, CAST(body AS TEXT))) AS v WHERE {})
               ELSE 0 END)",
        tests.join(" OR ")
    ));
}

/// The fields of a body an operator can search by from its page: each scalar leaf inside
/// objects (strings, booleans, integers) as (its JSON pointer, the `match` object that finds
/// it), at most `limit`. Leaves inside arrays are left out.
pub fn searchable_fields(body: &Json, limit: usize) -> Vec<(String, String)> {
    fn walk(
        value: &Json,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, Json)>,
        limit: usize,
    ) {
        if out.len() >= limit || path.len() > MAX_DEPTH {
            return;
        }
        match value {
            Json::Object(map) => {
                for (key, sub) in map {
                    path.push(key.clone());
                    walk(sub, path, out, limit);
                    path.pop();
                }
            }
            Json::String(_) | Json::Bool(_) if !path.is_empty() => {
                out.push((path.clone(), value.clone()))
            }
            Json::Number(n) if n.is_i64() && !path.is_empty() => {
                out.push((path.clone(), value.clone()))
            }
            _ => {}
        }
    }
    let mut leaves = Vec::new();
    walk(body, &mut Vec::new(), &mut leaves, limit);
    leaves
        .into_iter()
        .map(|(path, leaf)| {
            let pointer: String = path
                .iter()
                .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
                .collect();
            let matcher = path.iter().rev().fold(leaf, |inner, key| {
                let mut map = serde_json::Map::new();
                map.insert(key.clone(), inner);
                Json::Object(map)
            });
            (pointer, matcher.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_match_must_be_a_small_json_object() {
        for (text, why) in [
            ("{\"a\":", "match: not JSON"),
            ("[1]", "match: must be a JSON object"),
            ("\"x\"", "match: must be a JSON object"),
            (&"{\"a\":".repeat(10).to_string(), "match: not JSON"),
        ] {
            match parse_match(text) {
                Err(QueryError::BadFilter(reason)) => {
                    assert!(reason.starts_with(why), "{text}: {reason}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let deep = format!("{}1{}", "{\"a\":".repeat(9), "}".repeat(9));
        assert!(
            matches!(parse_match(&deep), Err(QueryError::BadFilter(r)) if r.contains("deeper"))
        );
        assert!(parse_match(r#"{"customer":{"id":"cus_1"},"tags":["a"]}"#).is_ok());
        // What jsonb refuses is refused here, naming `match`.
        for text in [
            r#"{"a":"\u0000"}"#,
            r#"{"a":10e-16384}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":1e200000}"#,
        ] {
            match parse_match(text) {
                Err(QueryError::BadFilter(reason)) => {
                    assert!(reason.starts_with("match: "), "{text}: {reason}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_value_anywhere_is_what_was_typed_in_lower_case_too_and_the_number_it_spells() {
        let typed = AnyValue::of("Ana@Example.com");
        assert_eq!(typed.strings, ["Ana@Example.com", "ana@example.com"]);
        assert_eq!(typed.number, None);
        let order = AnyValue::of("10231");
        assert_eq!(order.strings, ["10231"]);
        assert_eq!(
            order.number.map(|n| n.to_string()).as_deref(),
            Some("10231")
        );
        let mut c = Conditions::new();
        push_value_anywhere(&mut c, DatabaseBackend::Postgres, &AnyValue::of("a\"b"));
        assert_eq!(
            c.values,
            [sea_orm::Value::from(r#"$.** ? (@ == "a\"b")"#.to_string())]
        );
    }

    #[test]
    fn a_part_is_found_whatever_its_case_and_a_hash_is_kept() {
        assert_eq!(part_regex("müll"), "[mM][üÜ][lL][lL]");
        assert_eq!(part_regex("#10.2"), "\\#10\\.2");
        assert_eq!(
            part_glob("Straße*?[1]"),
            "*[Ss][tT][rR][aA]ß[eE][*][?][[]1]*"
        );
        let hash = AnyValue::of("#1041");
        assert_eq!(hash.strings, ["#1041", "1041"]);
        assert_eq!(hash.number.map(|n| n.to_string()).as_deref(), Some("1041"));
    }

    #[test]
    fn each_scalar_field_of_a_body_finds_itself() {
        let body: Json = serde_json::from_str(
            r#"{"id":"evt_1","data":{"customer":"cus_123","paid":true,"n":3,"rate":0.5},"items":[{"sku":"A"}],"a/b":"x"}"#,
        )
        .expect("JSON");
        // Keys in their sorted order (serde_json's map).
        assert_eq!(
            searchable_fields(&body, 10),
            [
                ("/a~1b".to_string(), r#"{"a/b":"x"}"#.to_string()),
                (
                    "/data/customer".to_string(),
                    r#"{"data":{"customer":"cus_123"}}"#.to_string()
                ),
                ("/data/n".to_string(), r#"{"data":{"n":3}}"#.to_string()),
                (
                    "/data/paid".to_string(),
                    r#"{"data":{"paid":true}}"#.to_string()
                ),
                ("/id".to_string(), r#"{"id":"evt_1"}"#.to_string()),
            ]
        );
        assert_eq!(searchable_fields(&body, 2).len(), 2);
    }
}
