//! What a throughput goal leaves for the processes between the ends, on this machine.
//!
//! E2 and E10 send as fast as the ends can, and on a machine with few cores the ends and every
//! process between them share those cores. A rate of R messages/s then gives each message
//! cores / R seconds of CPU in all. At the goal's share of native's rate, each row's ends (the
//! source and sink, or ddsperf's pub and sub) take what they spend per message first; what is
//! left is what all the processes in between may spend together, whichever bridge they are.
//! Set against what they do spend, it says whether the goal can be reached on this machine by
//! making the bridge cheaper, and by how much it would have to be.

/// Issue 18's throughput goal: 90% of native DDS's rate.
pub const GOAL_SHARE: f64 = 0.9;

/// What one row's processes spent per message received, in microseconds of CPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuPerMessage {
    /// The source and sink (ddsperf's pub and sub).
    pub ends_us: f64,
    /// Every process between them (roam's proxies and routers, the Zenoh bridges).
    pub between_us: f64,
}

impl CpuPerMessage {
    /// The share of the machine's cores the row kept busy at `rate` messages/s.
    pub fn busy(&self, cores: usize, rate: f64) -> f64 {
        (self.ends_us + self.between_us) * rate / (cores as f64 * 1e6)
    }

    /// What the processes in between may spend per message at [`GOAL_SHARE`] of
    /// `native_rate`, once this row's ends have spent theirs: negative when the ends alone
    /// need more than the machine has at that rate.
    pub fn between_allowed_us(&self, cores: usize, native_rate: f64) -> f64 {
        machine_us(cores, native_rate) - self.ends_us
    }

    /// How many times less the processes in between would have to spend for the goal; `None`
    /// when nothing is left for them (no bridge, however cheap, reaches it here).
    pub fn cut_needed(&self, cores: usize, native_rate: f64) -> Option<f64> {
        let allowed = self.between_allowed_us(cores, native_rate);
        (allowed > 0.0).then(|| self.between_us / allowed)
    }
}

/// A report cell for [`CpuPerMessage::cut_needed`].
fn cut_cell(cut: Option<f64>) -> String {
    match cut {
        Some(x) if x <= 1.0 => "within it".into(),
        Some(x) => format!("{x:.1}x less"),
        None => "nothing is left".into(),
    }
}

/// The two cells of a row that E2's and E10's tables share: what the processes in between
/// spent per message (with `decimals`), and the cut the goal needs of them; both "—" for
/// native, which has nothing in between.
pub fn between_cells(
    cpu: &CpuPerMessage,
    native: bool,
    cores: usize,
    native_rate: f64,
    decimals: usize,
) -> (String, String) {
    if native {
        return ("—".into(), "—".into());
    }
    (
        format!("{:.*} µs", decimals, cpu.between_us),
        cut_cell(cpu.cut_needed(cores, native_rate)),
    )
}

/// The machine's CPU per message, all cores, at [`GOAL_SHARE`] of `native_rate`.
pub fn machine_us(cores: usize, native_rate: f64) -> f64 {
    cores as f64 * 1e6 / (GOAL_SHARE * native_rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_goal_leaves_between_the_ends() {
        // Two cores, native at 100,000/s: 90,000/s gives each message 22.2 us of CPU.
        assert!((machine_us(2, 100_000.0) - 22.222).abs() < 0.001);
        let row = CpuPerMessage {
            ends_us: 12.222,
            between_us: 20.0,
        };
        assert!((row.between_allowed_us(2, 100_000.0) - 10.0).abs() < 0.001);
        assert!((row.cut_needed(2, 100_000.0).unwrap() - 2.0).abs() < 0.001);
        // 32.2 us per message at 60,000/s keeps 96.7% of two cores busy.
        assert!((row.busy(2, 60_000.0) - 0.96666).abs() < 0.001);
        // Ends that need more than the machine has at the goal's rate leave nothing.
        let greedy = CpuPerMessage {
            ends_us: 30.0,
            between_us: 1.0,
        };
        assert!(greedy.between_allowed_us(2, 100_000.0) < 0.0);
        assert_eq!(greedy.cut_needed(2, 100_000.0), None);
        assert_eq!(cut_cell(row.cut_needed(2, 100_000.0)), "2.0x less");
        assert_eq!(cut_cell(Some(0.8)), "within it");
        assert_eq!(cut_cell(None), "nothing is left");
        assert_eq!(
            between_cells(&row, false, 2, 100_000.0, 1),
            ("20.0 µs".to_string(), "2.0x less".to_string())
        );
        assert_eq!(
            between_cells(&row, true, 2, 100_000.0, 1),
            ("—".to_string(), "—".to_string())
        );
    }
}
