//! What an `exec` instance uses now: CPU time from its cgroup (every process it ran there,
//! including those that ended), resident memory as the sum of its processes' `VmRSS` (what
//! `ps` and `/proc` show, so the figures can be checked against them), the limits in force,
//! and how many processes it has. An unconfined instance is measured through its leader's
//! `/proc` entry alone.

use drover_model::cluster::agent_api::{InstanceId, Usage};

use super::confine::{read, Cgroups};

/// The usage of instance `id`, whose current run's leader is `pid` (if it runs).
pub fn of(cgroups: Option<&Cgroups>, id: &InstanceId, pid: Option<u32>) -> Option<Usage> {
    match cgroups {
        Some(cgroups) => {
            let pids = cgroups.pids(id);
            let (memory_limit_bytes, cpu_quota_millis) = cgroups.limits_in_force(id);
            Some(Usage {
                cpu_time_ms: cgroups.cpu_nanos(id)? / 1_000_000,
                memory_bytes: pids.iter().filter_map(|p| resident_bytes(*p)).sum(),
                memory_limit_bytes,
                cpu_quota_millis,
                processes: u32::try_from(pids.len()).unwrap_or(u32::MAX),
            })
        }
        None => {
            let pid = pid?;
            Some(Usage {
                cpu_time_ms: cpu_ms(pid)?,
                memory_bytes: resident_bytes(pid).unwrap_or(0),
                memory_limit_bytes: None,
                cpu_quota_millis: None,
                processes: 1,
            })
        }
    }
}

/// `VmRSS` of `pid`, in bytes.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages = read::statm_resident_pages(&text)?;
    Some(pages.saturating_mul(rustix::param::page_size() as u64))
}

/// User and system CPU time of `pid` itself, in milliseconds.
pub fn cpu_ms(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = read::stat_cpu_ticks(&text)?;
    let per_second = rustix::param::clock_ticks_per_second().max(1);
    Some(ticks.saturating_mul(1000) / per_second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unconfined_process_is_measured_through_proc() {
        let me = std::process::id();
        // Some CPU and memory of our own to see.
        let block = vec![1u8; 8 << 20];
        let mut sum = 0u64;
        for round in 0..2_000_000u64 {
            sum = sum.wrapping_add(round ^ u64::from(block[(round as usize) % block.len()]));
        }
        assert!(sum > 0);
        let id = InstanceId::parse("x.y.z.0").unwrap();
        let usage = of(None, &id, Some(me)).unwrap();
        assert!(usage.memory_bytes >= 8 << 20, "{usage:?}");
        assert_eq!(usage.processes, 1);
        assert_eq!(usage.memory_limit_bytes, None);
        assert!(of(None, &id, None).is_none());
        drop(block);
    }
}
