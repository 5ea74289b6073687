//! The time hookbox reads where a test must see time pass without waiting for it (the sign-in
//! throttle's delays, the rate limits' refills): the system's clock, moved on by what
//! [`advance`] added. Nothing but a test advances it, so in a running hookbox it is the
//! system's clock. A process's whole clock moves: each test runs in a process of its own
//! (`cargo nextest`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How far [`advance`] has moved this process's clock, in milliseconds.
static AHEAD_MS: AtomicU64 = AtomicU64::new(0);

fn ahead() -> Duration {
    Duration::from_millis(AHEAD_MS.load(Ordering::Relaxed))
}

/// Now, as a date.
pub fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() + ahead()
}

/// Now, as a monotonic instant.
pub fn instant() -> std::time::Instant {
    std::time::Instant::now() + ahead()
}

/// Moves this process's clock on by `by`: what a test does instead of sleeping.
pub fn advance(by: Duration) {
    let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
    AHEAD_MS.fetch_add(ms, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_moves_both_clocks_on_at_once() {
        let (date, instant_before) = (now(), instant());
        advance(Duration::from_secs(90));
        assert!(now() - date >= chrono::Duration::seconds(90));
        assert!(instant() - instant_before >= Duration::from_secs(90));
    }
}
