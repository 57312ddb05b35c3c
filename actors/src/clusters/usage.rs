//! When a cluster's measured usage is committed. The agent reports what its instances use at
//! every probe, and that moves all the time; replicating every wiggle would write through Raft
//! once a probe per cluster. So the usage committed changes only when it moved by a tenth of
//! the cluster's capacity (in CPU or memory), when it appears or goes, or when the committed
//! one is older than [`REFRESH`].

use std::time::Duration;

use drover_model::cluster::agent_api::Resources;

/// The longest a committed usage stands while the agent reports another.
pub const REFRESH: Duration = Duration::from_secs(60);

/// The usage to commit: `observed` when it is worth a write, else `committed`. `age` is how
/// long ago the committed usage was written (`None` when this leader has not written one).
pub fn to_commit(
    committed: Option<Resources>,
    observed: Option<Resources>,
    capacity: Resources,
    age: Option<Duration>,
) -> Option<Resources> {
    let (Some(before), Some(now)) = (committed, observed) else {
        return observed;
    };
    let moved = |a: u64, b: u64, whole: u64| a.abs_diff(b).saturating_mul(10) >= whole.max(1);
    let worth = moved(before.cpu_millis, now.cpu_millis, capacity.cpu_millis)
        || moved(before.memory_mib, now.memory_mib, capacity.memory_mib)
        || age.is_none_or(|age| age >= REFRESH);
    if worth {
        observed
    } else {
        committed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(cpu_millis: u64, memory_mib: u64) -> Option<Resources> {
        Some(Resources {
            cpu_millis,
            memory_mib,
        })
    }

    #[test]
    fn usage_is_committed_when_it_moves_enough_or_grows_old() {
        let capacity = Resources {
            cpu_millis: 2000,
            memory_mib: 1000,
        };
        let young = Some(Duration::from_secs(5));
        let old = Some(REFRESH);
        let cases = [
            // (committed, observed, age, expected)
            (None, r(10, 10), young, r(10, 10)),
            (r(10, 10), None, young, None),
            (None, None, young, None),
            (r(100, 100), r(250, 150), young, r(100, 100)),
            (r(100, 100), r(300, 100), young, r(300, 100)),
            (r(100, 100), r(100, 200), young, r(100, 200)),
            (r(300, 100), r(100, 100), young, r(100, 100)),
            (r(100, 100), r(101, 101), old, r(101, 101)),
            (r(100, 100), r(101, 101), None, r(101, 101)),
        ];
        for (committed, observed, age, expected) in cases {
            assert_eq!(
                to_commit(committed, observed, capacity, age),
                expected,
                "{committed:?} {observed:?} {age:?}"
            );
        }
    }
}
