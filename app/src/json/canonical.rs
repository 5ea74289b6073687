//! The canonical form of a value: equal for two values exactly when PostgreSQL `jsonb` calls
//! them equal (key order and white space ignored, the last of duplicate keys wins, numbers by
//! value).

use super::number::decimal;
use super::{Node, Value};
use std::fmt::Write as _;

impl<'a> Node<'a> {
    /// The canonical text: equal for two values exactly when `jsonb` calls them equal.
    pub fn canonical(&self) -> String {
        let mut out = String::new();
        self.write_canonical(&mut out);
        out
    }

    fn write_canonical(&self, out: &mut String) {
        match &self.value {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(text) => out.push_str(&canonical_number(text)),
            Value::String(s) => write_string(out, s),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_canonical(out);
                }
                out.push(']');
            }
            Value::Object(members) => {
                // Keys in byte order, the last of duplicates winning: a stable sort keeps
                // duplicates in file order, so the last of each run is kept. O(n log n), so
                // a body of many keys costs no more than sorting them.
                let mut sorted: Vec<(&String, &Node<'a>)> =
                    members.iter().map(|(key, value)| (key, value)).collect();
                sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                let mut unique: Vec<(&String, &Node<'a>)> = Vec::with_capacity(sorted.len());
                for (key, value) in sorted {
                    match unique.last_mut() {
                        Some(last) if last.0 == key => last.1 = value,
                        _ => unique.push((key, value)),
                    }
                }
                out.push('{');
                for (i, (key, value)) in unique.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(out, key);
                    out.push(':');
                    value.write_canonical(out);
                }
                out.push('}');
            }
        }
    }
}

pub(crate) fn canonical_number(text: &str) -> String {
    match decimal(text) {
        Some(d) if d.digits == "0" => "0".to_string(),
        Some(d) => format!(
            "{}{}e{}",
            if d.negative { "-" } else { "" },
            d.digits,
            d.exponent
        ),
        // Unreachable for parsed values: the parser refuses what `decimal` cannot read.
        None => text.to_string(),
    }
}

/// `s` as a JSON string literal.
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
