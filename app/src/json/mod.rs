//! An exact JSON reader for delivery bodies.
//!
//! Why not `serde_json::Value`: it turns numbers into `f64` (or needs a crate-wide feature that
//! changes every other user of serde_json in the build). hookbox must store the sent value exactly,
//! so this reader keeps every value's byte span in the body and every number as its text.
//!
//! It also gives each value a *canonical form* with the equality of PostgreSQL `jsonb`: key order
//! and white space ignored, the last of duplicate keys wins, numbers compared by value (`1.0` =
//! `1`), `true` ≠ `1`, `"1"` ≠ `1`. SQLite compares snapshots through that form.
//!
//! It refuses what `jsonb` cannot store (`\u0000`, lone surrogates, numbers beyond `numeric`), so a
//! body the database would reject is a clear 4xx at the edge, never a failed transaction.
//!
//! The types and the reading of a node are here; the reader in `parser.rs`, the canonical form
//! in `canonical.rs`, and what `numeric` can store in `number.rs`.

mod canonical;

pub(crate) use canonical::{canonical_number, write_string};
mod number;
mod parser;

use std::ops::Range;

/// Deeper bodies are refused rather than risking the parser's (or PostgreSQL's) stack.
pub const MAX_DEPTH: usize = 128;

#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    /// The number exactly as sent.
    Number(&'a str),
    String(String),
    Array(Vec<Node<'a>>),
    /// Members in the order sent, duplicates included.
    Object(Vec<(String, Node<'a>)>),
}

/// A value and where it stands in the source text.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<'a> {
    pub value: Value<'a>,
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not JSON at all: a 400.
    Syntax { offset: usize, reason: &'static str },
    /// Well-formed JSON that hookbox cannot store exactly: a 422.
    Unsupported { offset: usize, reason: &'static str },
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonError::Syntax { offset, reason } => {
                write!(f, "body is not valid JSON: {reason} at byte {offset}")
            }
            JsonError::Unsupported { offset, reason } => write!(f, "{reason} at byte {offset}"),
        }
    }
}

impl std::error::Error for JsonError {}

/// Parses one JSON document (surrounding white space allowed, nothing else).
pub fn parse(text: &str) -> Result<Node<'_>, JsonError> {
    parser::parse_with(text, false)
}

/// Parses a document [`parse`] refuses as [`JsonError::Unsupported`] as far as it can: a number
/// beyond `numeric` is kept as sent, a `\u` escape that cannot be stored reads as U+FFFD. Only
/// for reading the identity of a delivery that is refused anyway; the depth limit still holds.
pub fn parse_tolerant(text: &str) -> Result<Node<'_>, JsonError> {
    parser::parse_with(text, true)
}

impl<'a> Node<'a> {
    /// The value's text exactly as sent.
    pub fn raw<'s>(&self, source: &'s str) -> &'s str {
        &source[self.span.clone()]
    }

    /// A member of an object, with `jsonb`'s rule that the last duplicate wins.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match &self.value {
            Value::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// RFC 6901 JSON pointer (`""` is the whole document).
    pub fn pointer(&self, pointer: &str) -> Option<&Node<'a>> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        let mut node = self;
        for token in rest.split('/') {
            let token = token.replace("~1", "/").replace("~0", "~");
            node = match &node.value {
                Value::Object(_) => node.get(&token)?,
                Value::Array(items) => {
                    if token.len() > 1 && token.starts_with('0') {
                        return None;
                    }
                    items.get(token.parse::<usize>().ok()?)?
                }
                _ => return None,
            };
        }
        Some(node)
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
