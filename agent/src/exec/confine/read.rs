//! What the agent reads back from cgroup files, as pure parsers: the OOM-kill counter, CPU time
//! and the limits in force, in the shapes cgroup v1 and v2 write them.

/// The `oom_kill` counter of `memory.oom_control` (v1) or `memory.events` (v2): both are
/// `key value` lines.
pub fn oom_kills(text: &str) -> Option<u64> {
    keyed(text, "oom_kill")
}

/// The value of `key` in `key value` lines (`cpu.stat`, `memory.events`, `memory.oom_control`).
pub fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some(key))
            .then(|| words.next()?.parse().ok())
            .flatten()
    })
}

/// A number alone in a file (`cpuacct.usage`, `memory.limit_in_bytes`, `cpu.cfs_quota_us`).
pub fn number(text: &str) -> Option<i64> {
    text.trim().parse().ok()
}

/// v1 reports "no limit" as the largest page-aligned value; anything this large is none.
const V1_UNLIMITED: u64 = 1 << 62;

/// v1's `memory.limit_in_bytes`: the limit, or `None` when unlimited.
pub fn v1_memory_limit(text: &str) -> Option<u64> {
    let limit = u64::try_from(number(text)?).ok()?;
    (limit < V1_UNLIMITED).then_some(limit)
}

/// v2's `memory.max`: the limit, or `None` for `max`.
pub fn v2_memory_limit(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// A CPU quota in thousandths of a CPU from a quota and a period in microseconds (v1's
/// `cpu.cfs_quota_us` is -1 when unlimited).
pub fn quota_millis(quota_us: i64, period_us: i64) -> Option<u64> {
    let quota = u64::try_from(quota_us).ok()?;
    let period = u64::try_from(period_us).ok().filter(|p| *p > 0)?;
    Some(quota.saturating_mul(1000) / period)
}

/// v2's `cpu.max` (`"max 100000"` or `"20000 100000"`): the quota in thousandths of a CPU.
pub fn v2_cpu_quota(text: &str) -> Option<u64> {
    let mut words = text.split_whitespace();
    let quota = words.next()?.parse::<i64>().ok()?;
    let period = words.next()?.parse::<i64>().ok()?;
    quota_millis(quota, period)
}

/// The pids listed in a `cgroup.procs` file.
pub fn pids(text: &str) -> Vec<u32> {
    text.lines().filter_map(|line| line.trim().parse().ok()).collect()
}

/// Resident pages, the second field of `/proc/<pid>/statm`.
pub fn statm_resident_pages(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

/// User and system CPU ticks (fields 14 and 15) of `/proc/<pid>/stat`, counted from the last
/// `)` since the command name may hold anything.
pub fn stat_cpu_ticks(text: &str) -> Option<u64> {
    let after = &text[text.rfind(')')? + 1..];
    let mut fields = after.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user.saturating_add(system))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_limits_parse_in_both_versions() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        let v2 = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n";
        assert_eq!(oom_kills(v1), Some(3));
        assert_eq!(oom_kills(v2), Some(2));
        assert_eq!(oom_kills("oom 1\n"), None);
        assert_eq!(
            keyed("usage_usec 1500\nuser_usec 1000\n", "usage_usec"),
            Some(1500)
        );
        assert_eq!(v1_memory_limit("33554432\n"), Some(32 << 20));
        assert_eq!(v1_memory_limit("9223372036854771712\n"), None);
        assert_eq!(v2_memory_limit("33554432\n"), Some(32 << 20));
        assert_eq!(v2_memory_limit("max\n"), None);
        assert_eq!(quota_millis(20_000, 100_000), Some(200));
        assert_eq!(quota_millis(-1, 100_000), None);
        assert_eq!(v2_cpu_quota("20000 100000\n"), Some(200));
        assert_eq!(v2_cpu_quota("max 100000\n"), None);
        assert_eq!(pids("12\n345\n\n"), vec![12, 345]);
    }

    #[test]
    fn proc_fields_parse() {
        assert_eq!(statm_resident_pages("1000 250 30 1 0 200 0\n"), Some(250));
        let stat = "4242 (odd ) name) R 1 4242 4242 0 -1 4194560 100 0 0 0 170 30 0 0 20 0 1 0 987654";
        assert_eq!(stat_cpu_ticks(stat), Some(200));
        assert_eq!(stat_cpu_ticks("1 (x) R 1"), None);
    }
}
