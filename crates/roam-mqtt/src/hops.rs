//! How long messages spend inside the bridge, per entry: from a DDS sample's arrival in the
//! process to its hand-off to the MQTT client (ros2mqtt), and from an MQTT message's arrival
//! to the end of its DDS write (mqtt2ros). Seed 003 calls this the interface cost; roam's MQTT
//! benchmark reports it per hop.

use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Durations kept per entry; beyond, every second sample replaces an old one (the figures
/// stay representative with bounded memory).
const KEEP: usize = 100_000;

#[derive(Debug, Default)]
pub struct HopStats {
    micros: Mutex<(Vec<f64>, u64)>,
}

/// Figures in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HopSummary {
    pub n: u64,
    pub mean_us: f64,
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub std_us: f64,
}

impl HopStats {
    pub fn record(&self, d: Duration) {
        let us = d.as_secs_f64() * 1e6;
        let mut g = self.micros.lock().unwrap_or_else(|p| p.into_inner());
        let (v, seen) = &mut *g;
        *seen += 1;
        if v.len() < KEEP {
            v.push(us);
        } else if *seen % 2 == 0 {
            let i = (*seen as usize / 2) % KEEP;
            v[i] = us;
        }
    }

    pub fn summary(&self) -> HopSummary {
        let g = self.micros.lock().unwrap_or_else(|p| p.into_inner());
        summarize(&g.0, g.1)
    }
}

/// Mean, median, extremes and standard deviation of `v` (`n`: how many there were).
pub fn summarize(v: &[f64], n: u64) -> HopSummary {
    if v.is_empty() {
        return HopSummary::default();
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    let var = s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / s.len() as f64;
    let mid = s.len() / 2;
    let median = if s.len().is_multiple_of(2) {
        (s[mid - 1] + s[mid]) / 2.0
    } else {
        s[mid]
    };
    HopSummary {
        n,
        mean_us: mean,
        median_us: median,
        min_us: s[0],
        max_us: s[s.len() - 1],
        std_us: var.sqrt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_of_a_few_durations() {
        let h = HopStats::default();
        for us in [10, 20, 30, 40] {
            h.record(Duration::from_micros(us));
        }
        let s = h.summary();
        assert_eq!(
            (s.n, s.median_us, s.min_us, s.max_us),
            (4, 25.0, 10.0, 40.0)
        );
        assert!((s.mean_us - 25.0).abs() < 1e-9);
        assert!((s.std_us - 11.180339887).abs() < 1e-6);
        assert_eq!(HopStats::default().summary().n, 0);
    }
}
