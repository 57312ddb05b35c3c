//! Reads a process's resident memory and CPU time from `/proc`.

/// `VmRSS` of process `pid` in KiB, if it runs.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Clock ticks per second of `/proc/<pid>/stat`'s times (`getconf CLK_TCK`; 100 on Linux).
fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse::<f64>().ok())
        .filter(|ticks| *ticks > 0.0)
        .unwrap_or(100.0)
}

/// CPU seconds (user and system) process `pid` has used, if it runs.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after its closing parenthesis are fixed.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((user + system) / clock_ticks())
}

/// The CPU seconds `pids` have used together (those that run).
pub fn total_cpu_seconds(pids: &[u32]) -> f64 {
    pids.iter().filter_map(|pid| cpu_seconds(*pid)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_used_some_cpu() {
        let spin: u64 = (0..2_000_000u64).fold(0, |a, b| a.wrapping_add(b * b));
        assert!(spin > 0);
        let used = cpu_seconds(std::process::id()).expect("own /proc/self/stat");
        assert!(used > 0.0, "{used}");
    }
}
