//! What `/proc` says about processes and memory: a process's state, group and start time
//! (which tells it from a later process that reuses its pid), the processes working under a
//! directory, and `MemTotal`/`MemAvailable`.

use std::path::{Path, PathBuf};

/// The fields of `/proc/<pid>/stat` the agent uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// One-letter state (`R`, `S`, `Z` for a zombie, ...).
    pub state: char,
    /// Process group id.
    pub pgid: u32,
    /// Start time in clock ticks after boot (field 22).
    pub start_ticks: u64,
}

impl Stat {
    /// Whether the process has ended (a zombie is waiting to be reaped).
    pub fn ended(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses the text of `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may
/// hold anything, so fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `fields[0]` is field 3 (state), so field N is `fields[N - 3]`.
    Some(Stat {
        state: fields.first()?.chars().next()?,
        pgid: fields.get(2)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// `/proc/<pid>/stat`, or `None` when the process is gone.
pub fn stat(pid: u32) -> Option<Stat> {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|text| parse_stat(&text))
}

/// Whether `pid` is still the process that started at `start_ticks` and has not ended.
pub fn alive(pid: u32, start_ticks: u64) -> bool {
    stat(pid).is_some_and(|s| s.start_ticks == start_ticks && !s.ended())
}

/// A live process whose working directory is under some directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its pid.
    pub pid: u32,
    /// Its `/proc` stat.
    pub stat: Stat,
    /// Its working directory.
    pub cwd: PathBuf,
}

/// Every live process (of this user: others' `cwd` cannot be read) working under `dir`.
pub fn processes_under(dir: &Path) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
            if !cwd.starts_with(dir) {
                return None;
            }
            let stat = stat(pid).filter(|s| !s.ended())?;
            Some(Found { pid, stat, cwd })
        })
        .collect()
}

/// `MemTotal` and `MemAvailable` in KiB.
pub fn meminfo() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text)
}

fn parse_meminfo(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
    };
    Some((field("MemTotal")?, field("MemAvailable")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let text =
            "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(
            parse_stat(text),
            Some(Stat {
                state: 'S',
                pgid: 4242,
                start_ticks: 987654
            })
        );
        assert_eq!(parse_stat("12 (x) S 1"), None);
        let own = stat(std::process::id()).unwrap();
        assert!(alive(std::process::id(), own.start_ticks));
        assert!(!alive(std::process::id(), own.start_ticks + 1));
    }

    #[test]
    fn meminfo_parses() {
        let text = "MemTotal:       16000000 kB\nMemFree:  1 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(parse_meminfo(text), Some((16_000_000, 8_000_000)));
        assert!(meminfo().is_some());
    }
}
