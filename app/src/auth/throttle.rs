//! The sign-in throttle: per client (an IPv4 address, an IPv6 /64), a growing delay after too
//! many failures of a name or of the client, and the clients this process remembers as
//! throttled until their delay ends.

use super::lock;
use crate::db::audit::CountedFailures;
use chrono::{DateTime, Duration, Utc};
use std::collections::HashMap;
use std::sync::Mutex;

/// Failed sign-ins of one user name from one client within [`THROTTLE_WINDOW_MINUTES`] before
/// its further attempts wait the growing delay.
pub const MAX_FAILURES_PER_USER: i64 = 5;
/// Failed sign-ins from one client, whatever the names, before the same.
pub const MAX_FAILURES_PER_ADDRESS: i64 = 20;
/// How long a failure counts.
pub const THROTTLE_WINDOW_MINUTES: i64 = 60;
/// The delay after the failure that reaches a limit; each further failure doubles it.
pub const FIRST_DELAY: std::time::Duration = std::time::Duration::from_secs(2);
/// The longest delay.
pub const MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(15 * 60);
/// Clients (and names) this process remembers as throttled, at most.
const MAX_REMEMBERED_BLOCKS: usize = 10_000;

/// Whole seconds, rounded up, at least 1: a `Retry-After` value.
pub fn retry_after_secs(wait: std::time::Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// "5 seconds", "3 minutes" (rounded up).
pub fn wait_text(wait: std::time::Duration) -> String {
    let secs = retry_after_secs(wait);
    match secs {
        1 => "1 second".into(),
        s if s < 60 => format!("{s} seconds"),
        s => {
            let minutes = s.div_ceil(60);
            format!("{minutes} minute{}", if minutes == 1 { "" } else { "s" })
        }
    }
}

/// The client a throttle counts: an IPv4 address as it is, an IPv6 address as its /64 (what one
/// subscriber is usually given, so a client cannot escape the throttle by changing addresses
/// within it); anything else (`unknown`) as it is.
pub fn client_key(address: &str) -> String {
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => ipnet::Ipv6Net::new(v6, 64)
                .map(|net| net.trunc().to_string())
                .unwrap_or_else(|_| address.to_string()),
        },
        _ => address.to_string(),
    }
}

/// The delay after the failure that brought `failures` to `limit` or beyond: [`FIRST_DELAY`] at
/// the limit, doubling with each further failure, at most [`MAX_DELAY`]; none below the limit.
pub fn throttle_delay(failures: i64, limit: i64) -> Option<std::time::Duration> {
    let beyond = failures.checked_sub(limit).filter(|beyond| *beyond >= 0)?;
    // Doubling 31 times is past any cap; more shifts would overflow.
    let shift = u32::try_from(beyond).unwrap_or(u32::MAX).min(31);
    Some(
        FIRST_DELAY
            .checked_mul(1u32 << shift)
            .unwrap_or(MAX_DELAY)
            .min(MAX_DELAY),
    )
}

/// Until when the throttle refuses an attempt, given the counted failures; and whether it is the
/// client's limit across names (else the name's from that client).
pub(super) fn throttled_until(counted: &CountedFailures) -> Option<(DateTime<Utc>, bool)> {
    let until = |failures, limit, last: Option<DateTime<Utc>>| {
        Some(last? + Duration::from_std(throttle_delay(failures, limit)?).ok()?)
    };
    let by_name = until(counted.of_name, MAX_FAILURES_PER_USER, counted.name_last);
    let by_client = until(
        counted.of_client,
        MAX_FAILURES_PER_ADDRESS,
        counted.client_last,
    );
    match (by_name, by_client) {
        (Some(n), Some(c)) if c >= n => Some((c, true)),
        (Some(n), _) => Some((n, false)),
        (None, Some(c)) => Some((c, true)),
        (None, None) => None,
    }
}

/// Who this process refuses without a query, until when: (store, client, name or `None` for
/// every name).
type Blocks = HashMap<(String, String, Option<String>), DateTime<Utc>>;

fn blocks() -> &'static Mutex<Blocks> {
    static BLOCKS: std::sync::OnceLock<Mutex<Blocks>> = std::sync::OnceLock::new();
    BLOCKS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// How long `name` from `client` is still refused, as this process remembers it, and whether
/// for every name of the client.
pub(super) fn remembered_block(
    store: &str,
    client: &str,
    name: &str,
) -> Option<(std::time::Duration, bool)> {
    let now = crate::clock::now();
    let blocks = lock(blocks());
    let key = |name: Option<&str>| {
        (
            store.to_string(),
            client.to_string(),
            name.map(str::to_string),
        )
    };
    [(key(None), true), (key(Some(name)), false)]
        .into_iter()
        .filter_map(|(k, every_name)| Some((*blocks.get(&k)?, every_name)))
        .filter(|(until, _)| *until > now)
        .max_by_key(|(until, _)| *until)
        .and_then(|(until, every_name)| Some(((until - now).to_std().ok()?, every_name)))
}

pub(super) fn remember_block(store: &str, client: &str, name: Option<&str>, until: DateTime<Utc>) {
    let mut blocks = lock(blocks());
    if blocks.len() >= MAX_REMEMBERED_BLOCKS {
        let now = crate::clock::now();
        blocks.retain(|_, until| *until > now);
        if blocks.len() >= MAX_REMEMBERED_BLOCKS {
            return;
        }
    }
    blocks.insert(
        (
            store.to_string(),
            client.to_string(),
            name.map(str::to_string),
        ),
        until,
    );
}
