//! Per-source rate limits (`rate_limit_per_sec`): a token bucket per source in this process.
//! Several processes each allow the configured rate; size it per process.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
        let now = Instant::now();
        let mut buckets = match self.buckets.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
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
}
