//! Forward error correction for large frames on lossy QUIC links, without I/O.
//!
//! QUIC repairs a lost packet by retransmission: the loss is known when the packets after it
//! are acknowledged, a round trip after it was sent, and the copy arrives half a round trip
//! later. A 1 MB point cloud is ~800 packets, so at 1% loss nearly every one waits that round
//! trip, and at 3% often two (docs/operations.md). A link that sees loss therefore sends,
//! beside a large frame's stream bytes, Reed-Solomon recovery shards over them as QUIC
//! datagrams ([`roam_proto::repair`]); the receiver reads the stream out of order and rebuilds
//! what it lost as soon as enough shards are in. QUIC still retransmits, so a frame never
//! depends on its repairs arriving: they only cut the wait.
//!
//! - [`encode`]: the repair datagrams of one frame, and how many to send for a loss rate.
//! - [`GapReader`]: a stream read out of order, cut into frames, holes filled by repairs.
//! - [`LossEstimate`]: the loss rate a link's QUIC statistics show lately.

mod encode;
mod gap_reader;

pub use encode::{encode, recoveries_for, shard_len_for, worth_repairing, FEC_MIN_FRAME};
pub use gap_reader::{GapError, GapReader, Rebuild, Rebuilt};

/// Packets a loss estimate waits for before it takes a new sample: enough that one loss is
/// 0.5%, so a single unlucky packet does not switch repairs on.
const SAMPLE_PACKETS: u64 = 200;

/// The share of a link's packets lost lately, from QUIC's cumulative counters: each sample
/// covers at least [`SAMPLE_PACKETS`] packets, and the estimate is the mean of the last sample
/// and the estimate before it, so it follows a path that turns lossy or clean within a few
/// hundred packets.
#[derive(Debug, Default, Clone)]
pub struct LossEstimate {
    sent: u64,
    lost: u64,
    rate: f64,
    sampled: bool,
}

impl LossEstimate {
    /// Takes the connection's counters (packets sent and declared lost since it opened) and
    /// returns the current estimate.
    pub fn update(&mut self, sent: u64, lost: u64) -> f64 {
        let ds = sent.saturating_sub(self.sent);
        if ds >= SAMPLE_PACKETS {
            let dl = lost.saturating_sub(self.lost).min(ds);
            let sample = dl as f64 / ds as f64;
            self.rate = if self.sampled {
                (self.rate + sample) / 2.0
            } else {
                sample
            };
            self.sampled = true;
            self.sent = sent;
            self.lost = lost;
        }
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_follows_the_path_and_ignores_short_samples() {
        let mut e = LossEstimate::default();
        assert_eq!(e.update(100, 5), 0.0, "too few packets for a sample");
        assert!((e.update(1000, 10) - 0.01).abs() < 1e-9);
        assert!(
            (e.update(2000, 40) - 0.02).abs() < 1e-9,
            "mean of 1% and 3%"
        );
        let mut rate = 0.02;
        for i in 3..12 {
            rate = e.update(i * 1000, 40);
        }
        assert!(rate < 0.0001, "a clean path decays it: {rate}");
        // Counters that go backwards (a new connection) give no sample, not a panic.
        assert_eq!(e.update(0, 0), rate);
    }
}
