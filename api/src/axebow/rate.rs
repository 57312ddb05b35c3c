//! A token bucket per caller: bursts beyond the configured rate get `429`. Each node counts on
//! its own, so a caller spreading requests over three nodes gets up to three times the rate.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Most callers tracked at once; full buckets are forgotten first when the table is full.
const MAX_TRACKED: usize = 10_000;

/// Rate limit settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Requests per second refilled.
    pub per_second: f64,
    /// Most requests in one burst.
    pub burst: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            per_second: 50.0,
            burst: 100,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of one node.
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    /// A limiter with these settings.
    pub fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn refill(&self, bucket: &mut Bucket, now: Instant) {
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.limit.per_second).min(f64::from(self.limit.burst));
        bucket.at = now;
    }

    /// Takes one token for `caller`; `false` when the caller is over its rate.
    pub fn allow(&self, caller: &str) -> bool {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_TRACKED && !buckets.contains_key(caller) {
            let burst = f64::from(self.limit.burst);
            let per_second = self.limit.per_second;
            buckets.retain(|_, b| {
                b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * per_second < burst
            });
        }
        let bucket = buckets.entry(caller.to_string()).or_insert(Bucket {
            tokens: f64::from(self.limit.burst),
            at: now,
        });
        self.refill(bucket, now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_beyond_the_limit_is_refused_per_caller() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 0.001,
            burst: 3,
        });
        assert!((0..3).all(|_| limiter.allow("alice")));
        assert!(!limiter.allow("alice"));
        assert!(limiter.allow("bob"));
    }
}
