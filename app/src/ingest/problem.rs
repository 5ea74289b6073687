//! Failures as problems: the error class of a failed delivery (its cause without ids, numbers or
//! quoted values, so forty failures of one cause are one problem), and the classes of rows
//! archived before classes existed (filled at start-up, [`classify_unclassified`]).
//!
//! What an *open* failure is, and which failures a replay resolves, is written once, in
//! `db::problems` (the SQL every view reads) and `replay` (the one place a failure is resolved).

use crate::db::Db;
use crate::model::{OutcomeKind, Status};
use sea_orm::{ConnectionTrait, DbErr, Value};

/// The longest error class, in bytes (cut at a character boundary, `…` added).
pub const MAX_CLASS_BYTES: usize = 200;

/// What stands for a quoted value, a number and an id in a class.
const QUOTED: &str = "\"…\"";
const NUMBER: &str = "N";
const ID: &str = "<id>";

/// The error class of an archived delivery: `None` unless its outcome is a failure. The class
/// of a reused revision names no event (its message does); an invalid delivery's reason keeps
/// the field it names (`snapshot (/data) is missing`) and loses what varies between deliveries.
pub fn error_class(outcome: OutcomeKind, message: Option<&str>) -> Option<String> {
    if outcome.status() != Status::Failed {
        return None;
    }
    Some(match outcome {
        OutcomeKind::ReusedRevision => "object revision is already held by another event".into(),
        OutcomeKind::ReusedEventId => "event id was accepted before with other content".into(),
        _ => scrub(message.unwrap_or_default()),
    })
}

/// A message with its quoted values, numbers and ids replaced, whitespace collapsed, at most
/// [`MAX_CLASS_BYTES`].
pub fn scrub(message: &str) -> String {
    let unquoted = replace_quoted(message);
    let mut words: Vec<String> = Vec::new();
    for token in unquoted.split_whitespace() {
        let after_noun = words.last().is_some_and(|w| names_an_id(w));
        words.push(scrub_token(token, after_noun));
    }
    let class = words.join(" ");
    if class.is_empty() {
        return "(no message)".into();
    }
    crate::headers::cut(&class, MAX_CLASS_BYTES)
}

/// Quoted segments (`"…"`, `'…'`, `` `…` ``) as [`QUOTED`]; an unclosed quote runs to the end.
fn replace_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        // An apostrophe inside a word ("doesn't") is no quote.
        let opens = matches!(c, '"' | '`') || (c == '\'' && !out.ends_with(char::is_alphanumeric));
        if !opens {
            out.push(c);
            continue;
        }
        for inner in chars.by_ref() {
            if inner == c {
                break;
            }
        }
        out.push_str(QUOTED);
    }
    out
}

/// Whether the word before a token says the token is an id (`by event e-9`, `delivery 42`).
fn names_an_id(word: &str) -> bool {
    let word = word.trim_matches(|c: char| !c.is_alphanumeric());
    ["event", "events", "delivery", "object", "id", "key"]
        .iter()
        .any(|noun| word.eq_ignore_ascii_case(noun))
}

/// One whitespace-separated token: a number becomes [`NUMBER`], an id [`ID`], the rest stays
/// (JSON pointers and words alike, digits inside words too: `UTF-8`, `varying(255)`).
fn scrub_token(token: &str, after_noun: bool) -> String {
    let start = token
        .find(|c: char| c.is_alphanumeric())
        .unwrap_or(token.len());
    let end = token
        .rfind(|c: char| c.is_alphanumeric())
        .map_or(start, |i| {
            i + token[i..].chars().next().map_or(1, char::len_utf8)
        });
    if start >= end || token.starts_with('/') || token.starts_with("(/") {
        return token.to_string();
    }
    let (before, core, after) = (&token[..start], &token[start..end], &token[end..]);
    let digits = core.chars().filter(char::is_ascii_digit).count();
    let letters = core.chars().filter(|c| c.is_alphabetic()).count();
    let number = letters == 0
        && digits > 0
        && core
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '_'));
    let id_chars = core
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    // A generated id (a UUID, a hash, `ord_10231`), or any id-like token where the word before
    // names an id (`event e-9`; `event id` stays: `id` is a word).
    let id = id_chars
        && ((core.len() >= 8 && digits >= 2 && letters >= 1)
            || (after_noun && (digits > 0 || core.contains(['_', '-', '.', ':']))));
    let core = if number {
        NUMBER
    } else if id {
        ID
    } else {
        core
    };
    format!("{before}{core}{after}")
}

/// Rows classified per statement by [`classify_unclassified`].
const BATCH: usize = 1000;

/// Fills the error class of failed archive rows that have none (archived before classes
/// existed), in batches of [`BATCH`], through the partial index of unclassified failures.
/// Answers how many rows it classified. Run at start-up, after the migrations.
pub async fn classify_unclassified(db: &Db) -> Result<u64, DbErr> {
    let backend = db.backend();
    let mut classified = 0;
    loop {
        let rows = db
            .writer
            .query_all_raw(crate::db::statement(
                backend,
                format!(
                    "SELECT id, outcome, error_message FROM webhook_events
                     WHERE status = '{failed}' AND error_class IS NULL ORDER BY id LIMIT {BATCH}",
                    failed = Status::Failed.as_str()
                ),
                vec![],
            ))
            .await?;
        if rows.is_empty() {
            return Ok(classified);
        }
        // One statement per class of the batch: a batch holds few.
        let mut by_class: Vec<(String, Vec<i64>)> = Vec::new();
        for row in &rows {
            let id: i64 = row.try_get("", "id")?;
            let outcome: OutcomeKind = row.try_get("", "outcome")?;
            let message: Option<String> = row.try_get("", "error_message")?;
            let class = error_class(outcome, message.as_deref())
                .unwrap_or_else(|| scrub(message.as_deref().unwrap_or_default()));
            match by_class.iter_mut().find(|(c, _)| *c == class) {
                Some((_, ids)) => ids.push(id),
                None => by_class.push((class, vec![id])),
            }
        }
        let dialect = crate::db::dialect::Dialect::of(backend);
        for (class, ids) in by_class {
            let n = ids.len() as u64;
            db.writer
                .execute_raw(crate::db::statement(
                    backend,
                    format!(
                        "UPDATE webhook_events SET error_class = $1 WHERE id {}",
                        dialect.among_ids("$2")
                    ),
                    vec![Value::from(class), Value::from(dialect.id_list(&ids))],
                ))
                .await?;
            classified += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_has_a_class_and_nothing_else_does() {
        assert_eq!(error_class(OutcomeKind::Applied, None), None);
        assert_eq!(error_class(OutcomeKind::Duplicate, Some("x")), None);
        assert_eq!(
            error_class(
                OutcomeKind::ReusedRevision,
                Some("object revision is already held by event e-9")
            ),
            error_class(
                OutcomeKind::ReusedRevision,
                Some("object revision is already held by event ord_1.3")
            ),
        );
        assert_eq!(
            error_class(OutcomeKind::ReusedRevision, None).as_deref(),
            Some("object revision is already held by another event")
        );
    }

    #[test]
    fn the_field_a_reason_names_stays_and_what_varies_goes() {
        for (message, class) in [
            ("snapshot (/data) is missing", "snapshot (/data) is missing"),
            (
                "body is not valid JSON: expected value at byte 17",
                "body is not valid JSON: expected value at byte N",
            ),
            (
                "body is not UTF-8 (invalid byte at 3)",
                "body is not UTF-8 (invalid byte at N)",
            ),
            (
                "revision (/revision) must be at most 9223372036854775807",
                "revision (/revision) must be at most N",
            ),
            (
                r#"the database refused this delivery: invalid input syntax for type integer: "abc""#,
                r#"the database refused this delivery: invalid input syntax for type integer: "…""#,
            ),
            (
                "the database refused this delivery: value too long for type character varying(255)",
                "the database refused this delivery: value too long for type character varying(255)",
            ),
            (
                "revision 3 of 'ord_1' is already held by event e-9",
                "revision N of \"…\" is already held by event <id>",
            ),
            (
                "order 123e4567-e89b-12d3-a456-426614174000 was refused",
                "order <id> was refused",
            ),
            (
                "event id (/items/0/id) is missing",
                "event id (/items/0/id) is missing",
            ),
            ("  spaced\n out\t", "spaced out"),
            ("", "(no message)"),
            // The benchmark's seed (.ci/bench-dashboard) writes this class with the message.
            (
                "revision: must be a JSON integer from 1 to 2^63-1",
                "revision: must be a JSON integer from N to 2^63-1",
            ),
        ] {
            assert_eq!(scrub(message), class, "{message:?}");
        }
    }

    #[test]
    fn different_ids_and_numbers_give_one_class() {
        let a = scrub("delivery 41 of object ord_10231 doesn't fit: 3.5 > 2");
        let b = scrub("delivery 42 of object ord_99 doesn't fit: 7 > 1,000");
        assert_eq!(a, b);
        assert_eq!(a, "delivery N of object <id> doesn't fit: N > N");
    }

    #[test]
    fn a_class_is_bounded_in_bytes_at_a_character_boundary() {
        let long = "ü".repeat(500);
        let class = scrub(&long);
        assert!(class.len() <= MAX_CLASS_BYTES, "{}", class.len());
        assert!(class.ends_with('…'));
        assert!(scrub(&"word ".repeat(100)).len() <= MAX_CLASS_BYTES);
    }
}
