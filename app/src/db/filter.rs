//! The `/events` filter as SQL: validated values (a bad one is a 400 naming the field) and
//! `WHERE` conditions with numbered placeholders, for PostgreSQL and SQLite alike.

pub(crate) use super::conditions::Conditions;
pub use super::conditions::QueryError;
use super::conditions::given;
use crate::model::{EventFilter, OutcomeKind, Status};
use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use chrono_tz::Tz;
use sea_orm::DatabaseBackend;

/// The years a `from` / `to` filter may name: what both databases store and compare correctly
/// (SQLite compares times as text, so a fifth digit would sort wrong).
const FILTER_YEARS: std::ops::RangeInclusive<i32> = 1..=9999;

/// `from` (`end_of_day` false) or `to` as a UTC time: a date is a day in `zone` (`to` takes the
/// whole day), an RFC 3339 time the instant it names.
fn parse_time(
    field: &str,
    text: &str,
    end_of_day: bool,
    zone: Tz,
) -> Result<DateTime<Utc>, QueryError> {
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
        let bound = crate::present::zone::local_midnight(zone, day);
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

/// The zone whose days a filter's dates are: its `tz` (an IANA name, or `UTC`), UTC when it
/// names none; anything else is a 400 naming `tz`.
pub fn filter_zone(filter: &EventFilter) -> Result<Tz, QueryError> {
    match given(&filter.tz) {
        None => Ok(chrono_tz::UTC),
        Some(name) => name.parse::<Tz>().map_err(|_| {
            QueryError::BadFilter(format!(
                "tz: {name:?} is not a time zone (an IANA name like Europe/Berlin, or UTC)"
            ))
        }),
    }
}

/// Received times from (inclusive) and to (exclusive), in UTC; `None`: unbounded.
pub type ReceivedRange = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// The received times a filter's `from` and `to` select.
pub fn received_range(filter: &EventFilter) -> Result<ReceivedRange, QueryError> {
    let zone = filter_zone(filter)?;
    let from = given(&filter.from)
        .map(|from| parse_time("from", &from, false, zone))
        .transpose()?;
    let to = given(&filter.to)
        .map(|to| parse_time("to", &to, true, zone))
        .transpose()?;
    Ok((from, to))
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
        ("tz", &filter.tz),
        ("open", &filter.open),
        ("class", &filter.class),
        ("type", &filter.event_type),
        ("event_id", &filter.event_id),
        ("object_id", &filter.object_id),
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
        c.and_with(status.as_str(), |p| format!("status = {p}"));
    }
    if let Some(outcome) = given(&filter.outcome) {
        let Some(outcome) = OutcomeKind::parse(&outcome) else {
            return Err(QueryError::BadFilter(format!(
                "outcome: {outcome:?} is not one of {}",
                OutcomeKind::spellings()
            )));
        };
        c.and_with(outcome.as_str(), |p| format!("outcome = {p}"));
    }
    if let Some(source) = given(&filter.source) {
        c.and_with(source, |p| format!("source = {p}"));
    }
    if let Some(visible) = &filter.visible_sources {
        let places: Vec<String> = visible.iter().map(|s| c.param(s.clone())).collect();
        c.and(if places.is_empty() {
            "1 = 0".to_string()
        } else {
            format!("source IN ({})", places.join(", "))
        });
    }
    for (column, value) in [
        ("event_type", &filter.event_type),
        ("event_id", &filter.event_id),
        ("object_id", &filter.object_id),
    ] {
        if let Some(value) = given(value) {
            c.and_with(value, |p| format!("{column} = {p}"));
        }
    }
    let (from, to) = received_range(filter)?;
    if let Some(from) = from {
        c.and_with(from, |p| format!("received_at >= {p}"));
    }
    if let Some(to) = to {
        c.and_with(to, |p| format!("received_at < {p}"));
    }
    if let Some(q) = given(&filter.q) {
        c.and_with2(q.clone(), q, |p, q| {
            format!("(event_id = {p} OR object_id = {q})")
        });
    }
    if let Some(text) = given(&filter.r#match) {
        let value = super::contains::parse_match(&text)?;
        super::contains::push_containment(c, backend, &text, &value);
    }
    if let Some(class) = given(&filter.class) {
        c.and_with(class, |p| format!("error_class = {p}"));
    }
    if open_only(filter)? {
        c.and(super::open_failures::open_failure("webhook_events"));
    }
    Ok(())
}

/// Whether the filter takes open failures only (`open=1`; `0` or empty: every row).
pub fn open_only(filter: &EventFilter) -> Result<bool, QueryError> {
    match given(&filter.open).as_deref() {
        None | Some("0") | Some("false") => Ok(false),
        Some("1") | Some("true") | Some("on") => Ok(true),
        Some(other) => Err(QueryError::BadFilter(format!(
            "open: {other:?} is not 1 (open failures only) or 0"
        ))),
    }
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
        ("days in", days_in(filter)),
        ("event or object id", given(&filter.q)),
        ("body contains", given(&filter.r#match)),
        ("cause", given(&filter.class)),
        ("status", status.map(str::to_string)),
    ] {
        if let Some(value) = value {
            parts.push(format!("{label} {value}"));
        }
    }
    if open_only(filter).unwrap_or(false) {
        parts.push("open only".into());
    }
    parts.join(", ")
}

/// The zone a filter's dates are days in, when it names a date (not an RFC 3339 time).
fn days_in(filter: &EventFilter) -> Option<String> {
    let is_date = |v: &Option<String>| {
        given(v).is_some_and(|text| NaiveDate::parse_from_str(&text, "%Y-%m-%d").is_ok())
    };
    (is_date(&filter.from) || is_date(&filter.to))
        .then(|| given(&filter.tz).unwrap_or_else(|| "UTC".into()))
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
            match parse_time(field, text, end_of_day, chrono_tz::UTC) {
                Err(QueryError::BadFilter(reason)) => assert!(
                    reason.starts_with(&format!("{field}: ")) && reason.contains("out of range"),
                    "{text}: {reason}"
                ),
                other => panic!("{text}: {other:?}"),
            }
        }
        let last = parse_time("to", "9999-12-31", true, chrono_tz::UTC).expect("the last day");
        assert_eq!(last.to_rfc3339(), "9999-12-31T23:59:59.999999+00:00");
        let next_day = parse_time("to", "2026-11-29", true, chrono_tz::UTC).expect("a day");
        assert_eq!(next_day.to_rfc3339(), "2026-11-30T00:00:00+00:00");
    }

    #[test]
    fn filter_dates_are_days_in_the_filters_zone() {
        let filter = |tz: Option<&str>| EventFilter {
            from: Some("2026-11-30".into()),
            to: Some("2026-11-30".into()),
            tz: tz.map(str::to_string),
            ..EventFilter::default()
        };
        let range = |tz| {
            let (from, to) = received_range(&filter(tz)).expect("a range");
            (from.map(|t| t.to_rfc3339()), to.map(|t| t.to_rfc3339()))
        };
        assert_eq!(
            range(Some("America/Los_Angeles")),
            (
                Some("2026-11-30T08:00:00+00:00".into()),
                Some("2026-12-01T08:00:00+00:00".into())
            )
        );
        assert_eq!(range(None), range(Some("UTC")));
        assert_eq!(
            range(Some(" UTC ")).0.as_deref(),
            Some("2026-11-30T00:00:00+00:00")
        );
        // An RFC 3339 time is the instant it names, whatever the zone.
        let exact = EventFilter {
            from: Some("2026-11-30T16:00:00-08:00".into()),
            tz: Some("Asia/Tokyo".into()),
            ..EventFilter::default()
        };
        let (from, _) = received_range(&exact).expect("a range");
        assert_eq!(
            from.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-12-01T00:00:00+00:00")
        );
        assert_eq!(
            in_words(&filter(Some("America/Los_Angeles")), None),
            "every source, from 2026-11-30, to 2026-11-30, days in America/Los_Angeles"
        );
        assert_eq!(
            in_words(&exact, None),
            "every source, from 2026-11-30T16:00:00-08:00"
        );
        match received_range(&filter(Some("Mars/Olympus_Mons"))) {
            Err(QueryError::BadFilter(reason)) => assert!(
                reason.starts_with("tz: \"Mars/Olympus_Mons\" is not a time zone"),
                "{reason}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
