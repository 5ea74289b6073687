//! An archive id's day: on PostgreSQL every id of `webhook_events`, `forward_deliveries` (and a
//! forward attempt's `delivery_id`) is `day << 36 | n`, `day` the UTC day it was made on counted
//! from 1970-01-01 (the column default of migration `m20261206_000027`), so the tables are laid
//! out by day (`maintenance::partitions`) and a statement bounded by ids reads only the days it
//! needs. SQLite's ids are a plain sequence.

use chrono::{DateTime, Utc};

/// The bits of an id below its day.
pub const DAY_BITS: u32 = 36;

/// Days since 1970-01-01 (UTC) of `at`.
pub fn day_number(at: DateTime<Utc>) -> i64 {
    at.timestamp().div_euclid(86_400)
}

/// The first id of `day` (days since 1970-01-01); the first past it is `first_id(day + 1)`.
pub fn first_id(day: i64) -> i64 {
    day << DAY_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_of_a_day_is_below_the_first_of_the_next_and_safe_in_a_javascript_number() {
        let at = DateTime::parse_from_rfc3339("2026-12-06T23:59:59Z")
            .expect("a time")
            .with_timezone(&Utc);
        let day = day_number(at);
        assert_eq!(day, 20_793);
        assert_eq!(first_id(day) >> DAY_BITS, day);
        assert!(first_id(day) + (1 << DAY_BITS) - 1 < first_id(day + 1));
        // Until the year 2328, an id fits the 53 bits a JavaScript number holds exactly.
        assert!(first_id(day_number(at) + 110_000) < 1 << 53);
    }
}
