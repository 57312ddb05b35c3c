//! The simulation's log (`DROVER_SIM_LOG`), the same line for line when a seed is replayed: each
//! line carries simulated time, and the readings of the real clock that openraft prints (a
//! tokio `Instant`'s `Debug`, whose base is the real clock when the host's runtime was made,
//! and its `DisplayInstant`, a time of day on the real clock) are replaced by placeholders —
//! they say nothing about the run that the line's simulated time does not.

use std::io::Write;
use std::sync::LazyLock;

use regex::Regex;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::MakeWriter;

/// The time of a log line: simulated seconds since the run began; `-` outside a simulated host.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimTime;

impl FormatTime for SimTime {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        match turmoil::sim_elapsed() {
            Some(t) => write!(w, "{:>3}.{:06}", t.as_secs(), t.subsec_micros()),
            None => write!(w, "{:>10}", "-"),
        }
    }
}

/// `Instant { tv_sec: 1583, tv_nsec: 748470779 }`.
static REAL_INSTANT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"Instant \{ tv_sec: \d+, tv_nsec: \d+ \}").ok());

/// `17:02:03.712042`, not inside an RFC 3339 time (`…T00:00:01.000000Z`, simulated).
static REAL_TIME_OF_DAY: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(^|[^T\d:])\d{2}:\d{2}:\d{2}\.\d{6}\b").ok());

/// `line` with the real clock's readings replaced.
pub fn scrub(line: &str) -> String {
    let mut text = line.to_string();
    if let Some(pattern) = REAL_INSTANT.as_ref() {
        text = pattern.replace_all(&text, "Instant { real clock }").into_owned();
    }
    if let Some(pattern) = REAL_TIME_OF_DAY.as_ref() {
        text = pattern.replace_all(&text, "${1}hh:mm:ss.ffffff").into_owned();
    }
    text
}

/// Writes each log line to stderr, [`scrub`]bed.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScrubbedStderr;

impl<'a> MakeWriter<'a> for ScrubbedStderr {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line(Vec::new())
    }
}

/// One log line, written when dropped.
#[derive(Debug)]
pub struct Line(Vec<u8>);

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let line = scrub(&String::from_utf8_lossy(&self.0));
        // Nowhere to report a failed write of a log line.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

/// Logs what `filter` selects (an `EnvFilter` directive, as `DROVER_SIM_LOG` holds) to stderr,
/// in simulated time, without colours; fails if a subscriber was set already.
pub fn init(filter: &str) -> Result<(), String> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_timer(SimTime)
        .with_ansi(false)
        .with_writer(ScrubbedStderr)
        .try_init()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_clock_readings_are_replaced_and_simulated_ones_kept() {
        let line = "vote T1-N1:uncommitted@17:02:03.712042 now=Instant { tv_sec: 1583, tv_nsec: \
                    748470779 } started 2026-11-22T00:00:01.250000Z";
        assert_eq!(
            scrub(line),
            "vote T1-N1:uncommitted@hh:mm:ss.ffffff now=Instant { real clock } started \
             2026-11-22T00:00:01.250000Z"
        );
        assert_eq!(scrub("at: 09:10:11.000001\n"), "at: hh:mm:ss.ffffff\n");
    }
}
