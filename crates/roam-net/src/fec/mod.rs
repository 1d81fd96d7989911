//! Forward error correction on lossy QUIC links, without I/O.
//!
//! QUIC repairs a lost packet by retransmission: the loss is known when the packets after it
//! are acknowledged, a round trip after it was sent, and the copy arrives half a round trip
//! later. A 1 MB point cloud is ~800 packets, so at 1% loss nearly every one waits that round
//! trip, and at 3% often two (docs/operations.md). A small message alone on the path fares
//! worse: nothing follows its lost packet, so QUIC waits for its probe timeout. A link that
//! sees loss therefore sends, beside a large frame's stream bytes (or a stream write of small
//! frames), Reed-Solomon recovery shards over them as QUIC datagrams ([`roam_proto::repair`]);
//! the receiver reads the stream out of order and rebuilds what it lost as soon as enough
//! shards are in. QUIC still retransmits, so a frame never depends on its repairs arriving:
//! they only cut the wait.
//!
//! - [`encode`]: the repair datagrams of one frame, and how many to send for a loss rate.
//! - [`GapReader`]: a stream read out of order, cut into frames, holes filled by repairs.
//! - [`LossEstimate`]: the loss rate a link's QUIC statistics show lately.

mod encode;
mod gap_reader;

pub use encode::{
    copies, encode, recoveries_for, shard_len_for, worth_repairing, ALONE_MIN, BATCH_MAX,
};
pub use gap_reader::{GapError, GapReader, Rebuild, Rebuilt};

/// The share of what its congestion window lets a link send (a window per round trip) past
/// which it sends no copies of small messages: copies double what it sends, and past the
/// window they would hold back the very messages they protect (QUIC sends datagrams before
/// stream data).
const COPY_MAX_LOAD: f64 = 0.4;

/// Whether a link sending `bytes_per_s` (copies included) with a congestion window of `cwnd`
/// bytes over a round trip of `rtt_s` seconds has room to send small messages twice.
pub fn room_for_copies(bytes_per_s: f64, cwnd: u64, rtt_s: f64) -> bool {
    // NaN compares false: no room.
    rtt_s > 0.0 && bytes_per_s <= COPY_MAX_LOAD * cwnd as f64 / rtt_s
}

/// Packets a loss estimate waits for before it takes a new sample: enough that one loss is
/// 0.5%, so a single unlucky packet does not switch repairs on.
const SAMPLE_PACKETS: u64 = 200;
/// A link that sends fewer packets (a teleoperation stream at 20 Hz sends about 40 a second)
/// takes a sample once this long has passed since the last one, if it covers at least
/// [`SLOW_SAMPLE_PACKETS`]: otherwise it would see its path's loss only after tens of seconds.
const SLOW_SAMPLE_MS: u64 = 2_000;
const SLOW_SAMPLE_PACKETS: u64 = 30;

/// The share of a link's packets lost lately, from QUIC's cumulative counters: each sample
/// covers at least [`SAMPLE_PACKETS`] packets (or two seconds), and the estimate is the mean of
/// the last sample and the estimate before it, so it follows a path that turns lossy or clean
/// within a few hundred packets.
#[derive(Debug, Default, Clone)]
pub struct LossEstimate {
    sent: u64,
    lost: u64,
    /// When the last sample was taken, in the caller's milliseconds.
    sampled_at_ms: u64,
    rate: f64,
    sampled: bool,
}

impl LossEstimate {
    /// Takes the connection's counters (packets sent and declared lost since it opened) at
    /// `now_ms` (any monotonic milliseconds) and returns the current estimate.
    pub fn update(&mut self, sent: u64, lost: u64, now_ms: u64) -> f64 {
        let ds = sent.saturating_sub(self.sent);
        let slow = ds >= SLOW_SAMPLE_PACKETS
            && now_ms.saturating_sub(self.sampled_at_ms) >= SLOW_SAMPLE_MS;
        if ds >= SAMPLE_PACKETS || slow {
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
            self.sampled_at_ms = now_ms;
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
        assert_eq!(e.update(100, 5, 10), 0.0, "too few packets for a sample");
        assert!((e.update(1000, 10, 20) - 0.01).abs() < 1e-9);
        assert!(
            (e.update(2000, 40, 30) - 0.02).abs() < 1e-9,
            "mean of 1% and 3%"
        );
        let mut rate = 0.02;
        for i in 3..12 {
            rate = e.update(i * 1000, 40, 30 + i);
        }
        assert!(rate < 0.0001, "a clean path decays it: {rate}");
        // Counters that go backwards (a new connection) give no sample, not a panic.
        assert_eq!(e.update(0, 0, 100), rate);
    }

    #[test]
    fn copies_go_only_where_the_window_has_room_for_them() {
        // A 64 KB window over 70 ms allows ~936 KB/s.
        assert!(room_for_copies(0.0, 65_536, 0.07));
        assert!(room_for_copies(300_000.0, 65_536, 0.07));
        assert!(!room_for_copies(500_000.0, 65_536, 0.07));
        assert!(
            !room_for_copies(1.0, 65_536, 0.0),
            "no round trip measured yet"
        );
        assert!(!room_for_copies(f64::NAN, 65_536, 0.07));
    }

    #[test]
    fn a_link_that_sends_little_is_sampled_every_two_seconds() {
        let mut e = LossEstimate::default();
        // 40 packets a second, one lost in 50.
        assert_eq!(e.update(40, 1, 1_000), 0.0, "a second is not enough");
        assert!((e.update(80, 2, 2_000) - 0.025).abs() < 1e-9);
        assert_eq!(e.update(100, 2, 3_000), 0.025, "20 packets: no sample yet");
        assert_eq!(
            e.update(105, 2, 4_500),
            0.025,
            "too few packets, however long"
        );
        assert!(
            (e.update(120, 2, 4_600) - 0.0125).abs() < 1e-9,
            "40 clean packets after 2.6 s halve it"
        );
    }
}
