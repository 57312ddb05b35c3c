//! Latency samples and their percentiles.

use std::time::Duration;

/// Recorded latencies of one run.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    micros: Vec<u64>,
}

impl Samples {
    /// Adds one sample.
    pub fn record(&mut self, latency: Duration) {
        self.micros
            .push(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
    }

    /// Merges another run's samples.
    pub fn merge(&mut self, other: Samples) {
        self.micros.extend(other.micros);
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.micros.len()
    }

    /// The `q` quantile (0..=1) in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.micros.is_empty() {
            return 0.0;
        }
        let mut sorted = self.micros.clone();
        sorted.sort_unstable();
        let rank = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        sorted[rank.min(sorted.len() - 1)] as f64 / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_known_series() {
        let mut samples = Samples::default();
        for ms in 1..=100 {
            samples.record(Duration::from_millis(ms));
        }
        assert_eq!(samples.quantile_ms(0.5), 51.0);
        assert_eq!(samples.quantile_ms(0.99), 99.0);
        assert_eq!(samples.quantile_ms(1.0), 100.0);
    }
}
