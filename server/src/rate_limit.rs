//! Rate limits: token buckets in this process. Several processes each allow the configured rate;
//! size it per process. Each kind of key has buckets of its own ([`Limits`]), so keys of one
//! kind (a flood of API clients' addresses) never crowd out another's (a source's own rate):
//! at most [`MAX_BUCKETS`] are kept per kind; idle ones (full again) are dropped first, and past
//! the bound a new key of that kind waits for room.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most buckets kept at once.
pub const MAX_BUCKETS: usize = 10_000;

/// The buckets of each kind of key.
#[derive(Default)]
pub struct Limits {
    /// Deliveries per source (`rate_limit_per_sec`): keys from the config alone.
    pub sources: RateLimiter,
    /// Unsigned handshakes per source.
    pub handshakes: RateLimiter,
    /// API requests per token (by its name).
    pub tokens: RateLimiter,
    /// API requests per client address, before a token is looked up.
    pub clients: RateLimiter,
    /// Pages of the pull feed per token (by its name): a budget of their own (`api::Budget`).
    pub feed_pages: RateLimiter,
    /// Pages of the pull feed per client address, before a token is looked up.
    pub feed_clients: RateLimiter,
    /// The tokens whose last page of the feed was full: catching up, they read from
    /// `feed_pages`; a reader keeping up (small pages) takes from `tokens` like any request.
    pub catching_up: Marks,
}

#[derive(Default)]
pub struct RateLimiter {
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    refilled_at: Instant,
}

impl RateLimiter {
    /// Takes one token of `source`'s bucket, or says how long until one is free.
    pub fn take(&self, source: &str, per_sec: u32) -> Result<(), Duration> {
        let rate = f64::from(per_sec.max(1));
        let now = app::clock::instant();
        let mut buckets = match self.buckets.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if !buckets.contains_key(source) && buckets.len() >= MAX_BUCKETS {
            // A bucket idle for a second is full again: forgetting it changes nothing.
            buckets.retain(|_, b| now.duration_since(b.refilled_at) < Duration::from_secs(1));
            if buckets.len() >= MAX_BUCKETS {
                return Err(Duration::from_secs(1));
            }
        }
        let bucket = buckets.entry(source.to_string()).or_insert(Bucket {
            tokens: rate,
            refilled_at: now,
        });
        let elapsed = now.duration_since(bucket.refilled_at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(rate);
        bucket.refilled_at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / rate))
        }
    }
}

/// Keys marked for a while ([`Marks::LASTS`]): at most [`MAX_BUCKETS`], expired ones dropped
/// first; past the bound a key is not marked (and reads as unmarked).
#[derive(Default)]
pub struct Marks {
    marks: Mutex<HashMap<String, Instant>>,
}

impl Marks {
    /// How long a mark holds after it was set.
    pub const LASTS: Duration = Duration::from_secs(2);

    /// Marks `key` now when `on`, unmarks it otherwise.
    pub fn set(&self, key: &str, on: bool) {
        let now = app::clock::instant();
        let mut marks = match self.marks.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if !on {
            marks.remove(key);
            return;
        }
        if !marks.contains_key(key) && marks.len() >= MAX_BUCKETS {
            marks.retain(|_, at| now.duration_since(*at) < Self::LASTS);
            if marks.len() >= MAX_BUCKETS {
                return;
            }
        }
        marks.insert(key.to_string(), now);
    }

    /// Whether `key` was marked within [`Marks::LASTS`].
    pub fn holds(&self, key: &str) -> bool {
        let now = app::clock::instant();
        let marks = match self.marks.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        marks
            .get(key)
            .is_some_and(|at| now.duration_since(*at) < Self::LASTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_the_rate_passes_and_the_next_waits() {
        let limiter = RateLimiter::default();
        for _ in 0..3 {
            assert!(limiter.take("shop", 3).is_ok());
        }
        let wait = limiter.take("shop", 3).expect_err("over the rate");
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_millis(334),
            "{wait:?}"
        );
        assert!(limiter.take("other", 3).is_ok(), "buckets are per source");
    }

    #[test]
    fn the_buckets_kept_are_bounded_and_idle_ones_go_first() {
        let limiter = RateLimiter::default();
        for i in 0..MAX_BUCKETS {
            assert!(limiter.take(&format!("client {i}"), 50).is_ok());
        }
        // All busy within the second: a new key waits, an old one is served.
        assert!(limiter.take("one more", 50).is_err());
        assert!(limiter.take("client 7", 50).is_ok());
        let len = limiter.buckets.lock().map(|b| b.len()).unwrap_or(0);
        assert_eq!(len, MAX_BUCKETS);
    }

    #[test]
    fn a_flood_of_one_kind_of_key_leaves_the_other_kinds_their_buckets() {
        let limits = Limits::default();
        for i in 0..MAX_BUCKETS {
            assert!(limits.clients.take(&format!("198.51.100.{i}"), 50).is_ok());
        }
        assert!(
            limits.clients.take("203.0.113.9", 50).is_err(),
            "clients are full"
        );
        // A source's own rate, a token's and a handshake's are kept apart.
        assert!(limits.sources.take("shop", 5).is_ok());
        assert!(limits.tokens.take("deploy-bot", 20).is_ok());
        assert!(limits.handshakes.take("asana", 2).is_ok());
    }

    #[test]
    fn a_mark_holds_for_its_while_and_the_marks_kept_are_bounded() {
        let marks = Marks::default();
        marks.set("reader", true);
        assert!(marks.holds("reader"));
        marks.set("reader", false);
        assert!(!marks.holds("reader"));
        for i in 0..MAX_BUCKETS {
            marks.set(&format!("token {i}"), true);
        }
        marks.set("one more", true);
        assert!(
            !marks.holds("one more"),
            "past the bound a key is not marked"
        );
        assert!(marks.holds("token 7"));
    }
}
