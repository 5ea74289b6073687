//! Containment of JSON, as `/events`' `match` (`db::contains`) and PostgreSQL's `@>` have it: an
//! object contains another when it has each of its keys (the last of duplicate keys counts) with
//! a value containing the other's; an array contains another when each of the other's elements
//! is contained in one of its elements; scalars by type and value (numbers by value, `1` and `1.0`
//! alike; `true` is not `1`, `"1"` is not `1`).

use crate::json::{Node, Value};
use serde_json::Value as Json;

/// The longest `match` accepted, in bytes.
pub const MAX_MATCH_BYTES: usize = 4096;
/// The deepest nesting of a `match`, and the most values it may name.
pub(crate) const MAX_DEPTH: usize = 8;
const MAX_VALUES: usize = 64;

/// A `match` (of `/events`, of a route, of a preview) as a JSON object, or why it is refused.
pub fn parse_match(text: &str) -> Result<Json, String> {
    if text.len() > MAX_MATCH_BYTES {
        return Err(format!("longer than {MAX_MATCH_BYTES} bytes"));
    }
    // hookbox's own reader first: it refuses what `jsonb` cannot hold (`\u0000`, lone
    // surrogates, numbers beyond `numeric` such as `10e-16384`), which PostgreSQL would answer
    // with an error at `CAST(? AS jsonb)`, so such a `match` is a 400 here, never a failed query.
    match crate::json::parse(text) {
        Ok(_) => {}
        Err(crate::json::JsonError::Syntax { offset, reason }) => {
            return Err(format!("not JSON: {reason} at byte {offset}"));
        }
        Err(crate::json::JsonError::Unsupported { offset, reason }) => {
            return Err(format!("{reason} at byte {offset}"));
        }
    }
    let value: Json = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if !value.is_object() {
        return Err("must be a JSON object, such as {\"customer\":\"cus_123\"}".into());
    }
    let (depth, values) = measure(&value);
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    if values > MAX_VALUES {
        return Err(format!("names more than {MAX_VALUES} values"));
    }
    Ok(value)
}

/// (nesting depth, number of values) of a JSON value.
fn measure(value: &Json) -> (usize, usize) {
    let children: Vec<&Json> = match value {
        Json::Object(map) => map.values().collect(),
        Json::Array(items) => items.iter().collect(),
        _ => return (0, 1),
    };
    children
        .into_iter()
        .map(measure)
        .fold((1, 1), |(d, n), (cd, cn)| (d.max(cd + 1), n + cn))
}

/// Whether `doc` contains `pattern`: what ingest asks, so nothing is built on the way (where it
/// fails is [`unmet`]'s).
pub fn contains(doc: &Node<'_>, pattern: &Json) -> bool {
    holds(&doc.value, pattern)
}

fn holds(value: &Value<'_>, pattern: &Json) -> bool {
    match pattern {
        Json::Object(wanted) => {
            let Value::Object(members) = value else {
                return false;
            };
            wanted.iter().all(|(key, sub)| {
                members
                    .iter()
                    .rev()
                    .find(|(k, _)| k == key)
                    .is_some_and(|(_, node)| holds(&node.value, sub))
            })
        }
        Json::Array(wanted) => {
            let Value::Array(items) = value else {
                return false;
            };
            wanted
                .iter()
                .all(|w| items.iter().any(|item| holds(&item.value, w)))
        }
        scalar => scalar_equal(value, scalar),
    }
}

/// A scalar of the pattern against a value: by type and value, numbers by value.
fn scalar_equal(value: &Value<'_>, scalar: &Json) -> bool {
    match scalar {
        Json::String(s) => matches!(value, Value::String(t) if t == s),
        Json::Number(n) => matches!(value, Value::Number(text)
            if crate::json::canonical_number(text) == crate::json::canonical_number(&n.to_string())),
        Json::Bool(b) => matches!(value, Value::Bool(v) if v == b),
        Json::Null => matches!(value, Value::Null),
        Json::Object(_) | Json::Array(_) => false,
    }
}

/// Where `doc` first fails to contain `pattern`: the JSON pointer of the place, and what was
/// wanted there; `None` when it contains it.
pub fn unmet(doc: &Node<'_>, pattern: &Json) -> Option<(String, String)> {
    let mut path = String::new();
    walk(&doc.value, pattern, &mut path)
        .then_some(())
        .map_or_else(
            || Some((pointer(&path), wanted(pattern_at(pattern, &path)))),
            |()| None,
        )
}

/// `/` for the whole document.
fn pointer(path: &str) -> String {
    if path.is_empty() {
        "/".into()
    } else {
        path.to_string()
    }
}

/// The part of `pattern` at `path` (a pointer this module built), for the message.
fn pattern_at<'p>(pattern: &'p Json, path: &str) -> &'p Json {
    if path.is_empty() {
        return pattern;
    }
    pattern.pointer(path).unwrap_or(pattern)
}

fn wanted(value: &Json) -> String {
    let mut text = value.to_string();
    if text.len() > WANTED_BYTES {
        let mut end = WANTED_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The most of a wanted value a message shows, in bytes.
const WANTED_BYTES: usize = 120;

/// Whether `value` contains `pattern`; on a failure `path` is left at the object key where it
/// failed (arrays are not descended into for the message: the array is named).
fn walk(value: &Value<'_>, pattern: &Json, path: &mut String) -> bool {
    match pattern {
        Json::Object(wanted) => {
            let Value::Object(members) = value else {
                return false;
            };
            for (key, sub) in wanted {
                let Some((_, node)) = members.iter().rev().find(|(k, _)| k == key) else {
                    push(path, key);
                    return false;
                };
                let before = path.len();
                push(path, key);
                if !walk(&node.value, sub, path) {
                    return false;
                }
                path.truncate(before);
            }
            true
        }
        Json::Array(wanted) => {
            let Value::Array(items) = value else {
                return false;
            };
            wanted.iter().all(|w| {
                items
                    .iter()
                    .any(|item| walk(&item.value, w, &mut String::new()))
            })
        }
        scalar => scalar_equal(value, scalar),
    }
}

/// Appends `key` to a JSON pointer (`~` and `/` escaped).
fn push(path: &mut String, key: &str) {
    path.push('/');
    path.push_str(&key.replace('~', "~0").replace('/', "~1"));
}
