//! Progress of long waits, on stderr only so stdout stays the same with and without a
//! terminal: an `indicatif` spinner when stderr is a terminal, otherwise a timestamped line
//! whenever the message changes (and at least every 30 s), as Nomad's monitor prints.

use std::io::IsTerminal;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressStyle};

/// How often a line repeats an unchanged message when stderr is not a terminal.
const REPEAT: Duration = Duration::from_secs(30);

/// One long wait's progress.
pub struct Progress {
    spinner: Option<ProgressBar>,
    last: Option<(String, Instant)>,
}

impl Progress {
    /// A spinner on a terminal, timestamped lines otherwise.
    pub fn start() -> Self {
        let spinner = std::io::stderr().is_terminal().then(|| {
            let spinner = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
                spinner.set_style(style);
            }
            spinner.enable_steady_tick(Duration::from_millis(120));
            spinner
        });
        Self { spinner, last: None }
    }

    /// Shows `message` as the wait's state.
    pub fn say(&mut self, message: &str) {
        match &self.spinner {
            Some(spinner) => spinner.set_message(message.to_string()),
            None => {
                let repeat = match &self.last {
                    Some((last, at)) => last != message || at.elapsed() >= REPEAT,
                    None => true,
                };
                if repeat {
                    eprintln!("{} {message}", now());
                    self.last = Some((message.to_string(), Instant::now()));
                }
            }
        }
    }

    /// Ends the wait with a last line.
    pub fn finish(self, message: &str) {
        match self.spinner {
            Some(spinner) => spinner.finish_with_message(message.to_string()),
            None => eprintln!("{} {message}", now()),
        }
    }
}

fn now() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    drover_model::time::rfc3339_ms(ms)
}

/// `1st`, `2nd`, `3rd`, `4th`, `11th` … for queue positions.
pub fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_read_as_english() {
        let said: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111].map(ordinal).to_vec();
        assert_eq!(
            said,
            ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]
        );
    }
}
