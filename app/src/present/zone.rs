//! Times in the viewer's zone: the text a time is shown as, and the UTC bounds of a local day
//! or hour, which the filters' days and the charts' bars are made of. The browser writes the
//! same text with `Intl` (`components::zone`), so a page reads the same before and after it
//! hydrates.

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Timelike, Utc};
use chrono_tz::Tz;

/// How every time on a page is written, in the viewer's zone: `2026-11-30 00:02:50`.
pub const SHOWN_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

/// An RFC 3339 time as [`SHOWN_FORMAT`] in `zone`; any other text as it is.
pub fn local_text(rfc3339: &str, zone: Tz) -> String {
    match DateTime::parse_from_rfc3339(rfc3339) {
        Ok(time) => time.with_timezone(&zone).format(SHOWN_FORMAT).to_string(),
        Err(_) => rfc3339.to_string(),
    }
}

/// Local midnight at the start of `day` in `zone`, as a UTC time; where a clock change skips
/// midnight, the day's first local time; where it repeats it, the earlier one.
pub fn local_midnight(zone: Tz, day: NaiveDate) -> DateTime<Utc> {
    (0..24)
        .filter_map(|hour| day.and_hms_opt(hour, 0, 0))
        .find_map(|t| zone.from_local_datetime(&t).earliest())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|| day.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
}

/// The UTC range `[start, end)` of the local `day` in `zone` (23 or 25 hours on the days the
/// clocks change).
pub fn local_day(zone: Tz, day: NaiveDate) -> (DateTime<Utc>, DateTime<Utc>) {
    let next = day.succ_opt().unwrap_or(day);
    (local_midnight(zone, day), local_midnight(zone, next))
}

/// The local day `time` falls on in `zone`.
pub fn day_of(zone: Tz, time: DateTime<Utc>) -> NaiveDate {
    time.with_timezone(&zone).date_naive()
}

/// The start of the local hour `time` is in (in `zone`); the two hours a clock change repeats
/// are two hours.
pub fn local_hour_start(zone: Tz, time: DateTime<Utc>) -> DateTime<Utc> {
    let local = time.with_timezone(&zone);
    time - Duration::seconds(i64::from(local.minute() * 60 + local.second()))
        - Duration::nanoseconds(i64::from(local.nanosecond()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("a time")
            .with_timezone(&Utc)
    }

    #[test]
    fn times_are_written_in_the_zone_whatever_offset_they_carry() {
        let berlin = chrono_tz::Europe::Berlin;
        assert_eq!(
            local_text("2026-11-29T23:02:50.987654+00:00", berlin),
            "2026-11-30 00:02:50"
        );
        assert_eq!(
            local_text("2026-11-30T05:32:50+05:30", chrono_tz::UTC),
            "2026-11-30 00:02:50"
        );
        assert_eq!(
            local_text("2026-11-30T23:59:59Z", chrono_tz::America::Los_Angeles),
            "2026-11-30 15:59:59"
        );
        assert_eq!(local_text("not a time", berlin), "not a time");
    }

    #[test]
    fn a_local_day_is_bounded_by_its_midnights_also_when_the_clocks_change() {
        let la = chrono_tz::America::Los_Angeles;
        let day = NaiveDate::from_ymd_opt(2026, 11, 30).expect("a day");
        let (start, end) = local_day(la, day);
        assert_eq!(start, utc("2026-11-30T08:00:00Z"));
        assert_eq!(end, utc("2026-12-01T08:00:00Z"));
        // Spring forward: 23 hours; fall back: 25.
        let berlin = chrono_tz::Europe::Berlin;
        let (s, e) = local_day(berlin, NaiveDate::from_ymd_opt(2026, 3, 29).expect("a day"));
        assert_eq!(
            (s, e - s),
            (utc("2026-03-28T23:00:00Z"), Duration::hours(23))
        );
        let (s, e) = local_day(
            berlin,
            NaiveDate::from_ymd_opt(2026, 10, 25).expect("a day"),
        );
        assert_eq!(
            (s, e - s),
            (utc("2026-10-24T22:00:00Z"), Duration::hours(25))
        );
        // Santiago's clocks skipped midnight on 2022-09-11: the day began at 01:00.
        let skipped = NaiveDate::from_ymd_opt(2022, 9, 11).expect("a day");
        assert_eq!(
            local_midnight(chrono_tz::America::Santiago, skipped),
            utc("2022-09-11T04:00:00Z")
        );
        assert_eq!(day_of(la, utc("2026-12-01T07:59:59Z")), day);
    }

    #[test]
    fn a_local_hour_begins_on_the_zones_hour() {
        let kathmandu = chrono_tz::Asia::Kathmandu;
        assert_eq!(
            local_hour_start(kathmandu, utc("2026-12-03T10:07:30.5Z")),
            utc("2026-12-03T09:15:00Z")
        );
        assert_eq!(
            local_hour_start(chrono_tz::UTC, utc("2026-12-03T10:07:30Z")),
            utc("2026-12-03T10:00:00Z")
        );
    }
}
