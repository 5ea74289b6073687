//! The `/events` filter as SQL: validated values (a bad one is a 400 naming the field) and
//! `WHERE` conditions with numbered placeholders, for PostgreSQL and SQLite alike.

pub(crate) use super::conditions::Conditions;
pub use super::conditions::QueryError;
use super::conditions::given;
use crate::model::{EventFilter, OutcomeKind, Status};
use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use sea_orm::DatabaseBackend;

/// The years a `from` / `to` filter may name: what both databases store and compare correctly
/// (SQLite compares times as text, so a fifth digit would sort wrong).
const FILTER_YEARS: std::ops::RangeInclusive<i32> = 1..=9999;

fn parse_time(field: &str, text: &str, end_of_day: bool) -> Result<DateTime<Utc>, QueryError> {
    let out_of_range = || {
        QueryError::BadFilter(format!(
            "{field}: {text:?} is out of range (years {} to {})",
            FILTER_YEARS.start(),
            FILTER_YEARS.end()
        ))
    };
    let time = if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        if !FILTER_YEARS.contains(&date.year()) {
            return Err(out_of_range());
        }
        let day = if end_of_day {
            date.succ_opt().ok_or_else(out_of_range)?
        } else {
            date
        };
        // The day after 9999-12-31 is past the range: its last instant bounds it instead.
        let bound = start_of(day);
        if bound.year() > *FILTER_YEARS.end() {
            bound - Duration::microseconds(1)
        } else {
            bound
        }
    } else {
        let time = DateTime::parse_from_rfc3339(text)
            .map_err(|_| {
                QueryError::BadFilter(format!(
                    "{field}: {text:?} is not a date (2026-11-29) or an RFC 3339 time"
                ))
            })?
            .with_timezone(&Utc);
        if !FILTER_YEARS.contains(&time.year()) {
            return Err(out_of_range());
        }
        time
    };
    Ok(time)
}

/// Midnight (UTC) at the start of `day`.
pub(crate) fn start_of(day: NaiveDate) -> DateTime<Utc> {
    day.and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc())
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

pub(crate) fn filter_conditions(
    filter: &EventFilter,
    backend: DatabaseBackend,
) -> Result<Conditions, QueryError> {
    let mut c = Conditions::new();
    add_filter_conditions(&mut c, filter, backend)?;
    Ok(c)
}

/// The longest value of a free-text filter (`q`, `source`, `status`, `outcome`, `from`, `to`),
/// in bytes: an id is at most 255 (`envelope::MAX_ID_BYTES`). `match` has its own bound
/// ([`super::contains::MAX_MATCH_BYTES`]). A longer one is a 400 naming the field, refused
/// before anything runs or is audited.
pub const MAX_FILTER_BYTES: usize = 256;

/// Refuses a filter whose free-text fields are longer than their bounds, naming the field.
pub fn check_lengths(filter: &EventFilter) -> Result<(), QueryError> {
    for (field, value) in [
        ("status", &filter.status),
        ("outcome", &filter.outcome),
        ("source", &filter.source),
        ("from", &filter.from),
        ("to", &filter.to),
        ("q", &filter.q),
    ] {
        if value.as_ref().is_some_and(|v| v.len() > MAX_FILTER_BYTES) {
            return Err(QueryError::BadFilter(format!(
                "{field}: longer than {MAX_FILTER_BYTES} bytes"
            )));
        }
    }
    if let Some(text) = &filter.r#match
        && text.len() > super::contains::MAX_MATCH_BYTES
    {
        return Err(QueryError::BadFilter(format!(
            "match: longer than {} bytes",
            super::contains::MAX_MATCH_BYTES
        )));
    }
    Ok(())
}

pub(crate) fn add_filter_conditions(
    c: &mut Conditions,
    filter: &EventFilter,
    backend: DatabaseBackend,
) -> Result<(), QueryError> {
    check_lengths(filter)?;
    if let Some(status) = given(&filter.status) {
        let Some(status) = Status::parse(&status) else {
            return Err(QueryError::BadFilter(format!(
                "status: {status:?} is not one of {}",
                Status::spellings()
            )));
        };
        c.push("status = ?", status.as_str());
    }
    if let Some(outcome) = given(&filter.outcome) {
        let Some(outcome) = OutcomeKind::parse(&outcome) else {
            return Err(QueryError::BadFilter(format!(
                "outcome: {outcome:?} is not one of {}",
                OutcomeKind::spellings()
            )));
        };
        c.push("outcome = ?", outcome.as_str());
    }
    if let Some(source) = given(&filter.source) {
        c.push("source = ?", source);
    }
    if let Some(from) = given(&filter.from) {
        c.push("received_at >= ?", parse_time("from", &from, false)?);
    }
    if let Some(to) = given(&filter.to) {
        c.push("received_at < ?", parse_time("to", &to, true)?);
    }
    if let Some(q) = given(&filter.q) {
        c.push_pair("(event_id = ? OR object_id = ?)", q.clone(), q);
    }
    if let Some(text) = given(&filter.r#match) {
        let value = super::contains::parse_match(&text)?;
        super::contains::push_containment(c, backend, &text, &value);
    }
    Ok(())
}

/// The filter in words, its fields as given (trimmed; empty ones left out), then `status` when
/// one is given: `source crm, outcome invalid, status failed`, or `every source`. Bulk replay
/// names the status it takes (failed), an export the filter's own.
pub fn in_words(filter: &EventFilter, status: Option<&str>) -> String {
    let mut parts = vec![match given(&filter.source) {
        Some(source) => format!("source {source}"),
        None => "every source".to_string(),
    }];
    for (label, value) in [
        ("outcome", given(&filter.outcome)),
        ("from", given(&filter.from)),
        ("to", given(&filter.to)),
        ("event or object id", given(&filter.q)),
        ("body contains", given(&filter.r#match)),
        ("status", status.map(str::to_string)),
    ] {
        if let Some(value) = value {
            parts.push(format!("{label} {value}"));
        }
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_filter_dates_are_refused_naming_the_field() {
        for (field, text, end_of_day) in [
            ("to", "+262142-12-31", true),
            ("from", "+262142-12-31", false),
            ("from", "-262143-01-01", false),
            ("to", "0000-12-31", true),
            ("to", "+10000-01-01", true),
            ("from", "9999-12-31T23:00:00-23:00", false),
        ] {
            match parse_time(field, text, end_of_day) {
                Err(QueryError::BadFilter(reason)) => assert!(
                    reason.starts_with(&format!("{field}: ")) && reason.contains("out of range"),
                    "{text}: {reason}"
                ),
                other => panic!("{text}: {other:?}"),
            }
        }
        let last = parse_time("to", "9999-12-31", true).expect("the last day");
        assert_eq!(last.to_rfc3339(), "9999-12-31T23:59:59.999999+00:00");
        let next_day = parse_time("to", "2026-11-29", true).expect("a day");
        assert_eq!(next_day.to_rfc3339(), "2026-11-30T00:00:00+00:00");
    }
}
