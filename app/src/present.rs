//! How the dashboard shows stored JSON: laid out for reading with numbers exactly as stored, and
//! field-level changes between two snapshots. Server-side helpers of the pages, not queries.

use crate::json::{self, Node, Value as JsonValue};
use crate::model::FieldChange;

/// JSON laid out for reading; anything else as it is.
pub fn pretty(text: &str) -> String {
    match json::parse(text) {
        Ok(node) => {
            let mut out = String::new();
            write_pretty(&node, text, 0, &mut out);
            out
        }
        Err(_) => text.to_string(),
    }
}

/// Pretty-printing from the exact reader, so numbers are shown exactly as stored.
fn write_pretty(node: &Node<'_>, source: &str, indent: usize, out: &mut String) {
    let pad = |n: usize| "  ".repeat(n);
    match &node.value {
        JsonValue::Object(members) if !members.is_empty() => {
            out.push_str("{\n");
            for (i, (key, value)) in members.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push_str(": ");
                write_pretty(value, source, indent + 1, out);
                out.push_str(if i + 1 < members.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
        JsonValue::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                write_pretty(item, source, indent + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        _ => out.push_str(node.raw(source).trim()),
    }
}

/// Leaves of a JSON document by pointer (arrays count as one leaf), with their canonical form.
fn leaves<'a>(
    node: &Node<'a>,
    source: &'a str,
    path: String,
    out: &mut Vec<(String, String, String)>,
) {
    match &node.value {
        JsonValue::Object(members) if !members.is_empty() => {
            for (key, value) in members {
                let key = key.replace('~', "~0").replace('/', "~1");
                leaves(value, source, format!("{path}/{key}"), out);
            }
        }
        _ => out.push((path, node.raw(source).trim().to_string(), node.canonical())),
    }
}

/// Field-level changes between two snapshots.
pub fn diff(before: &str, after: &str) -> Vec<FieldChange> {
    let (Ok(b), Ok(a)) = (json::parse(before), json::parse(after)) else {
        return Vec::new();
    };
    let (mut old, mut new) = (Vec::new(), Vec::new());
    leaves(&b, before, String::new(), &mut old);
    leaves(&a, after, String::new(), &mut new);
    let mut changes = Vec::new();
    for (path, raw, canonical) in &new {
        match old.iter().rev().find(|(p, _, _)| p == path) {
            Some((_, _, c)) if c == canonical => {}
            Some((_, old_raw, _)) => changes.push(FieldChange {
                path: path.clone(),
                before: Some(old_raw.clone()),
                after: Some(raw.clone()),
            }),
            None => changes.push(FieldChange {
                path: path.clone(),
                before: None,
                after: Some(raw.clone()),
            }),
        }
    }
    for (path, raw, _) in &old {
        if !new.iter().any(|(p, _, _)| p == path) && !changes.iter().any(|c| &c.path == path) {
            changes.push(FieldChange {
                path: path.clone(),
                before: Some(raw.clone()),
                after: None,
            });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_names_changed_added_and_removed_fields() {
        let changes = diff(
            r#"{"status":"new","total":1.0,"gone":true,"n":{"a":1}}"#,
            r#"{"status":"paid","total":1,"n":{"a":2},"extra":null}"#,
        );
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
    fn pretty_printing_keeps_numbers_exact() {
        assert_eq!(
            pretty(r#"{"n":12345678901234567890.10}"#),
            "{\n  \"n\": 12345678901234567890.10\n}"
        );
        assert_eq!(pretty("not json"), "not json");
    }
}
