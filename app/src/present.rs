//! How the dashboard shows what it stores: JSON laid out for reading with numbers exactly as
//! stored and characters decoded ([`decode`]), cut when it is long ([`cut`]), field-level changes
//! between two snapshots, and times in the viewer's zone ([`zone`]). Server-side helpers of the
//! pages, not queries.
//!
//! All are bounded, whatever a sender stored: a body larger than [`PRETTY_MAX_BYTES`] is shown
//! as received (decoded), indentation stops growing after [`PRETTY_MAX_INDENT`] levels, and a
//! layout longer than [`PRETTY_MAX_GROWTH`] times the body falls back to the body as received. A
//! diff compares snapshots of at most [`DIFF_MAX_BYTES`], fields down to [`DIFF_MAX_DEPTH`]
//! levels (a deeper value is one field), in linear time, and names at most [`DIFF_MAX_CHANGES`]
//! changes, each value cut at [`DIFF_VALUE_CHARS`] characters.

pub mod decode;
pub mod zone;

use crate::json::{self, Node, Value as JsonValue};
use crate::model::FieldChange;
use decode::decoded;
use std::collections::{HashMap, HashSet};

/// A body larger than this (bytes) is shown as received, not laid out.
pub const PRETTY_MAX_BYTES: usize = 256 * 1024;
/// Levels of indentation at most: deeper values are indented as this level is.
pub const PRETTY_MAX_INDENT: usize = 16;
/// A layout at most this many times the body's size (plus 64 kB); else the body as received.
pub const PRETTY_MAX_GROWTH: usize = 8;
const PRETTY_SLACK: usize = 64 * 1024;

/// JSON laid out for reading, its characters [`decoded`]; JSON too large or too deep to lay out
/// within the bounds above, decoded as it is; anything else as it is.
pub fn pretty(text: &str) -> String {
    let Ok(node) = json::parse(text) else {
        return text.to_string();
    };
    if text.len() > PRETTY_MAX_BYTES {
        return decoded(text);
    }
    let budget = text.len().saturating_mul(PRETTY_MAX_GROWTH) + PRETTY_SLACK;
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    if write_pretty(&node, text, 0, &mut out, budget) {
        decoded(&out)
    } else {
        decoded(text)
    }
}

/// A body or snapshot shown on a page is cut after this many bytes ("Show all" shows the rest).
pub const SHOWN_MAX_BYTES: usize = 64 * 1024;
/// ... or after this many lines.
pub const SHOWN_MAX_LINES: usize = 2_000;

/// `text` as a page shows it at first: whole, or cut at the end of the last line within
/// [`SHOWN_MAX_BYTES`] and [`SHOWN_MAX_LINES`] (within a line longer than that, at a character);
/// and whether it was cut.
pub fn cut(text: &str) -> (&str, bool) {
    let newlines = text.bytes().filter(|b| *b == b'\n').count();
    if text.len() <= SHOWN_MAX_BYTES && newlines < SHOWN_MAX_LINES {
        return (text, false);
    }
    let end = text.floor_char_boundary(SHOWN_MAX_BYTES);
    let within = &text[..end];
    let at = within
        .match_indices('\n')
        .nth(SHOWN_MAX_LINES - 1)
        .map(|(at, _)| at)
        .or_else(|| within.rfind('\n').filter(|at| *at >= end / 2))
        .unwrap_or(end);
    (&text[..at], true)
}

/// Pretty-printing from the exact reader, so numbers are shown exactly as stored; `false` when
/// the output would pass `budget` bytes (it stops there).
fn write_pretty(
    node: &Node<'_>,
    source: &str,
    indent: usize,
    out: &mut String,
    budget: usize,
) -> bool {
    fn pad(out: &mut String, level: usize) {
        for _ in 0..level.min(PRETTY_MAX_INDENT) {
            out.push_str("  ");
        }
    }
    if out.len() > budget {
        return false;
    }
    match &node.value {
        JsonValue::Object(members) if !members.is_empty() => {
            out.push_str("{\n");
            for (i, (key, value)) in members.iter().enumerate() {
                pad(out, indent + 1);
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push_str(": ");
                if !write_pretty(value, source, indent + 1, out, budget) {
                    return false;
                }
                out.push_str(if i + 1 < members.len() { ",\n" } else { "\n" });
            }
            pad(out, indent);
            out.push('}');
        }
        JsonValue::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                pad(out, indent + 1);
                if !write_pretty(item, source, indent + 1, out, budget) {
                    return false;
                }
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            pad(out, indent);
            out.push(']');
        }
        _ => out.push_str(node.raw(source).trim()),
    }
    out.len() <= budget
}

/// Snapshots larger than this (bytes) are not compared field by field.
pub const DIFF_MAX_BYTES: usize = 256 * 1024;
/// Fields are compared down to this depth; a value deeper down is compared as one field.
pub const DIFF_MAX_DEPTH: usize = 16;
/// Changes named per comparison; the rest are counted.
pub const DIFF_MAX_CHANGES: usize = 100;
/// Characters of a value shown in a change; the rest is cut (`…`).
pub const DIFF_VALUE_CHARS: usize = 200;

/// The field-level changes between two snapshots, and what was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    pub changes: Vec<FieldChange>,
    /// Why the changes are incomplete or missing ("37 more changes not shown", "not compared:
    /// …"); `None` when they are all there.
    pub note: Option<String>,
    /// Changes found and left out of `changes`.
    pub left_out: usize,
}

/// Leaves of a JSON document by pointer (arrays count as one leaf, and so does a value
/// [`DIFF_MAX_DEPTH`] levels down), with their text and canonical form; the last of duplicate
/// keys wins, as in `jsonb`.
fn leaves<'a>(
    node: &Node<'a>,
    source: &'a str,
    path: &mut String,
    depth: usize,
    out: &mut HashMap<String, (&'a str, String)>,
) {
    match &node.value {
        JsonValue::Object(members) if !members.is_empty() && depth < DIFF_MAX_DEPTH => {
            for (key, value) in members {
                let len = path.len();
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                leaves(value, source, path, depth + 1, out);
                path.truncate(len);
            }
        }
        _ => {
            out.insert(path.clone(), (node.raw(source).trim(), node.canonical()));
        }
    }
}

/// A value as a change shows it: at most [`DIFF_VALUE_CHARS`] characters.
fn shown(raw: &str) -> String {
    match raw.char_indices().nth(DIFF_VALUE_CHARS) {
        Some((cut, _)) => format!("{}…", &raw[..cut]),
        None => raw.to_string(),
    }
}

/// A JSON value as a change shows it: [`decoded`], then [`shown`].
fn shown_value(raw: &str) -> String {
    shown(&decoded(raw))
}

/// Field-level changes between two snapshots, in the bounds of the module's constants: linear
/// in the snapshots' size.
pub fn diff(before: &str, after: &str) -> Diff {
    if before.len().max(after.len()) > DIFF_MAX_BYTES {
        return Diff {
            note: Some(format!(
                "not compared: a snapshot is larger than {} kB",
                DIFF_MAX_BYTES / 1024
            )),
            ..Diff::default()
        };
    }
    let (Ok(b), Ok(a)) = (json::parse(before), json::parse(after)) else {
        return Diff::default();
    };
    let (mut old, mut new) = (HashMap::new(), HashMap::new());
    leaves(&b, before, &mut String::new(), 0, &mut old);
    leaves(&a, after, &mut String::new(), 0, &mut new);
    let mut changes = Vec::new();
    for (path, (raw, canonical)) in &new {
        match old.get(path) {
            Some((_, c)) if c == canonical => {}
            Some((old_raw, _)) => changes.push((path, Some(*old_raw), Some(*raw))),
            None => changes.push((path, None, Some(*raw))),
        }
    }
    let new_paths: HashSet<&String> = new.keys().collect();
    for (path, (raw, _)) in &old {
        if !new_paths.contains(path) {
            changes.push((path, Some(*raw), None));
        }
    }
    changes.sort_by(|a, b| a.0.cmp(b.0));
    let more = changes.len().saturating_sub(DIFF_MAX_CHANGES);
    changes.truncate(DIFF_MAX_CHANGES);
    Diff {
        changes: changes
            .into_iter()
            .map(|(path, before, after)| FieldChange {
                path: shown(path),
                before: before.map(shown_value),
                after: after.map(shown_value),
            })
            .collect(),
        note: (more > 0).then(|| format!("{more} more changes not shown")),
        left_out: more,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_names_changed_added_and_removed_fields() {
        let changes = diff(
            r#"{"status":"new","total":1.0,"gone":true,"n":{"a":1}}"#,
            r#"{"status":"paid","total":1,"n":{"a":2},"extra":null}"#,
        )
        .changes;
        let paths: Vec<_> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.before.as_deref(), c.after.as_deref()))
            .collect();
        assert_eq!(
            paths,
            vec![
                ("/extra", None, Some("null")),
                ("/gone", Some("true"), None),
                ("/n/a", Some("1"), Some("2")),
                ("/status", Some("\"new\""), Some("\"paid\"")),
            ]
        );
    }

    #[test]
    fn a_diff_is_bounded_in_changes_depth_size_and_value_length() {
        let wide = |v: u32| {
            let fields: Vec<String> = (0..5000).map(|i| format!("\"f{i}\":{v}")).collect();
            format!("{{{}}}", fields.join(","))
        };
        let d = diff(&wide(1), &wide(2));
        assert_eq!(d.changes.len(), DIFF_MAX_CHANGES);
        assert_eq!(d.note.as_deref(), Some("4900 more changes not shown"));

        let deep = |v: u32| format!("{}{v}{}", "{\"a\":".repeat(100), "}".repeat(100));
        let d = diff(&deep(1), &deep(2));
        assert_eq!(d.changes.len(), 1);
        assert_eq!(d.changes[0].path, "/a".repeat(DIFF_MAX_DEPTH));
        let shown = d.changes[0].after.as_deref().unwrap_or_default();
        assert!(shown.chars().count() <= DIFF_VALUE_CHARS + 1, "{shown}");

        let big = format!("{{\"a\":\"{}\"}}", "x".repeat(DIFF_MAX_BYTES));
        let d = diff("{}", &big);
        assert!(d.changes.is_empty());
        assert!(
            d.note.is_some_and(|n| n.starts_with("not compared")),
            "a note"
        );
    }

    #[test]
    fn shown_json_has_its_characters_decoded_whatever_its_size() {
        assert_eq!(
            pretty(r#"{"city":"M\u00fcnchen","n":1.50}"#),
            "{\n  \"city\": \"München\",\n  \"n\": 1.50\n}"
        );
        // A key is decoded too, and an invisible character in it shown escaped.
        assert_eq!(
            pretty(r#"{"a\u202eb":"\u00e9"}"#),
            "{\n  \"a\\u202eb\": \"é\"\n}"
        );
        // Too large to lay out: decoded as it is.
        let large = format!("[\"M\\u00fcnchen\",{}1]", "1,".repeat(PRETTY_MAX_BYTES / 2));
        let shown = pretty(&large);
        assert!(shown.starts_with("[\"München\",1,1,"), "{}", &shown[..40]);
        assert_eq!(shown.len(), large.len() - 4);
        // Not JSON: as it is.
        assert_eq!(pretty("M\\u00fcnchen"), "M\\u00fcnchen");
        // A change's values are decoded.
        let d = diff(r#"{"city":"Munich"}"#, r#"{"city":"M\u00fcnchen"}"#);
        assert_eq!(d.changes[0].after.as_deref(), Some("\"München\""));
    }

    #[test]
    fn a_long_text_is_cut_at_a_line_within_its_bounds() {
        assert_eq!(cut("short\ntext"), ("short\ntext", false));
        // Too many lines: exactly SHOWN_MAX_LINES are shown.
        let lines = "x\n".repeat(SHOWN_MAX_LINES + 5);
        let (shown, was_cut) = cut(&lines);
        assert!(was_cut);
        assert_eq!(shown.lines().count(), SHOWN_MAX_LINES);
        // Too many bytes: the last whole line within the bound.
        let line = format!("{}\n", "y".repeat(99));
        let long = line.repeat(SHOWN_MAX_BYTES / 100 + 10);
        let (shown, was_cut) = cut(&long);
        assert!(was_cut && shown.len() <= SHOWN_MAX_BYTES, "{}", shown.len());
        assert!(shown.len() > SHOWN_MAX_BYTES - 100 && shown.ends_with('y'));
        // One long line of multi-byte characters: cut at a character.
        let wide = "ü".repeat(SHOWN_MAX_BYTES);
        let (shown, was_cut) = cut(&wide);
        assert!(was_cut && shown.len() <= SHOWN_MAX_BYTES && shown.len() % 2 == 0);
        // Exactly at the bounds: whole.
        let full = format!("{}{}", "z\n".repeat(SHOWN_MAX_LINES - 1), "z");
        assert_eq!(cut(&full), (full.as_str(), false));
    }

    #[test]
    fn pretty_printing_keeps_numbers_exact() {
        assert_eq!(
            pretty(r#"{"n":12345678901234567890.10}"#),
            "{\n  \"n\": 12345678901234567890.10\n}"
        );
        assert_eq!(pretty("not json"), "not json");
    }

    #[test]
    fn pretty_printing_is_bounded_by_size_and_depth() {
        // Deep nesting: indentation stops at its cap.
        let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        let laid_out = pretty(&deep);
        let widest = laid_out
            .lines()
            .map(|l| l.len() - l.trim_start().len())
            .max();
        assert_eq!(widest, Some(2 * PRETTY_MAX_INDENT));
        // Deep and wide: a layout past its growth is the body as received.
        let wide = format!(
            "{}{}1{}",
            "[".repeat(100),
            "1,".repeat(20_000),
            "]".repeat(100)
        );
        assert_eq!(pretty(&wide), wide);
        // Above the size, the body as received.
        let large = format!("[{}1]", "1,".repeat(PRETTY_MAX_BYTES / 2));
        assert_eq!(pretty(&large), large);
    }
}
