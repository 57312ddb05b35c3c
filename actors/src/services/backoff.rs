//! Retry delays of a service actor after a failed driver call: doubling from `base` up to `max`,
//! each drawn between half and all of that from the service's uid and the attempt, so that
//! services failing together (a cluster that went away) do not retry in one burst, and a replay
//! draws the same delays.

use std::time::Duration;

/// The delay before retry number `attempt` (1 for the first) of the service `uid`.
pub fn retry_delay(uid: &str, attempt: u32, base: Duration, max: Duration) -> Duration {
    let exponent = attempt.saturating_sub(1).min(16);
    let ceiling = base.saturating_mul(1u32 << exponent).min(max);
    // FNV-1a of the uid and the attempt: a fraction in [0.5, 1).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in uid.bytes().chain(attempt.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let fraction = 0.5 + (hash % 1000) as f64 / 2000.0;
    ceiling.mul_f64(fraction)
}

/// Where in `interval` a service's periodic pass falls, from its uid, so that thousands of
/// service actors started together do not all read and send at once.
pub fn phase(uid: &str, interval: Duration) -> Duration {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in uid.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    interval.mul_f64((hash % 1000) as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_within_their_jitter() {
        let base = Duration::from_millis(500);
        let max = Duration::from_secs(30);
        for (attempt, ceiling) in [(1, 500), (2, 1000), (3, 2000), (7, 30_000), (40, 30_000)] {
            let delay = retry_delay("svc-a", attempt, base, max);
            let ceiling = Duration::from_millis(ceiling);
            assert!(
                delay >= ceiling / 2 && delay < ceiling,
                "attempt {attempt}: {delay:?}"
            );
        }
        // Deterministic per service, different between services.
        assert_eq!(
            retry_delay("svc-a", 3, base, max),
            retry_delay("svc-a", 3, base, max)
        );
        let spread: std::collections::BTreeSet<Duration> = (0..50)
            .map(|i| retry_delay(&format!("svc-{i}"), 3, base, max))
            .collect();
        assert!(spread.len() > 25, "{spread:?}");
        let interval = Duration::from_secs(1);
        assert!((0..50).all(|i| phase(&format!("svc-{i}"), interval) < interval));
    }
}
