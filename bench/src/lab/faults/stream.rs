//! What one subscriber saw of a reliable stream under faults: the figures of bench/FAULTS.md
//! computed from its arrivals, the faults and the publisher's count. Pure (no clock, no I/O):
//! times are milliseconds on the campaign's clock.

use serde::Serialize;

/// One message as `roam sub` printed it: when it arrived, when it was sent (arrival less the
/// latency the line gives) and its sequence number (a publisher numbers from 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    pub at_ms: f64,
    pub sent_ms: f64,
    pub seq: u64,
}

/// One fault of a campaign: what was done to which process, when, and when it was undone
/// (the process restarted or resumed).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fault {
    pub kind: String,
    pub target: String,
    pub at_ms: f64,
    pub back_ms: f64,
}

/// A subscriber's whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Delivery {
    pub subscriber: String,
    /// The first message it got: the publisher's earlier ones went out before it joined.
    pub first_seq: u64,
    /// What the publisher said it sent from `first_seq` on.
    pub sent: u64,
    /// Distinct messages delivered.
    pub delivered: u64,
    /// Sent and never delivered.
    pub lost: u64,
    /// Which: inclusive ranges of sequences.
    pub lost_ranges: Vec<(u64, u64)>,
    /// Delivered more than once.
    pub duplicated: u64,
    /// Delivered after a later one.
    pub reordered: u64,
    /// The longest time without a delivery while the stream ran.
    pub longest_gap_ms: f64,
    /// From the first delivery to the last.
    pub stream_ms: f64,
    /// One entry per fault, in order.
    pub events: Vec<EventDelivery>,
}

/// How one fault looked to one subscriber.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EventDelivery {
    /// The longest time without a delivery from the fault until the next fault (or the end).
    pub gap_ms: f64,
    /// From the fault until delivery was back: the end of that longest gap (0 when delivery
    /// never paused longer than `PAUSE_MS`).
    pub recovery_ms: f64,
    /// From the process's return until delivery was back (0 when it came back earlier).
    pub recovery_after_back_ms: f64,
    /// Messages sent from the fault until the next fault that were never delivered.
    pub lost: u64,
}

/// A pause shorter than this is the stream's own pace and jitter, not an outage (the lab
/// publishes at 200 msg/s: one message each 5 ms).
pub const PAUSE_MS: f64 = 50.0;

/// The figures of `arrivals` (in arrival order) for a publisher that sent `sent` messages
/// (sequences 1..=sent) under `faults` (in time order); `end_ms` is when the campaign ended.
pub fn analyse(
    subscriber: &str,
    arrivals: &[Arrival],
    sent: u64,
    faults: &[Fault],
    end_ms: f64,
) -> Delivery {
    let first_seq = arrivals.iter().map(|a| a.seq).min().unwrap_or(1).max(1);
    // Sequences before the subscriber's first count as seen: they were not meant for it.
    let mut seen: Vec<bool> = (0..=sent).map(|s| s < first_seq).collect();
    let (mut delivered, mut duplicated, mut reordered, mut highest) = (0, 0, 0, 0);
    for a in arrivals {
        match seen.get_mut(a.seq as usize) {
            Some(s) if *s => duplicated += 1,
            Some(s) => {
                *s = true;
                delivered += 1;
                if a.seq < highest {
                    reordered += 1;
                }
            }
            // A sequence the publisher did not count (it should not happen): shown as such.
            None => duplicated += 1,
        }
        highest = highest.max(a.seq);
    }
    let longest_gap_ms = arrivals
        .windows(2)
        .map(|w| w[1].at_ms - w[0].at_ms)
        .fold(0.0, f64::max);
    let sent_times = sent_times(arrivals, sent);
    let events = faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let until = faults.get(i + 1).map_or(end_ms, |n| n.at_ms);
            event(f, until, arrivals, &seen, &sent_times)
        })
        .collect();
    let expected = sent.saturating_sub(first_seq - 1);
    Delivery {
        subscriber: subscriber.into(),
        first_seq,
        sent: expected,
        delivered,
        lost: expected - delivered.min(expected),
        lost_ranges: ranges(&seen),
        duplicated,
        reordered,
        longest_gap_ms,
        stream_ms: match (arrivals.first(), arrivals.last()) {
            (Some(a), Some(b)) => b.at_ms - a.at_ms,
            _ => 0.0,
        },
        events,
    }
}

fn event(
    f: &Fault,
    until: f64,
    arrivals: &[Arrival],
    seen: &[bool],
    sent_times: &[f64],
) -> EventDelivery {
    // The longest pause that ended after the fault and no later than the next one began
    // (a pause belongs to the last fault before it ended: the next fault's own pause begins
    // a few milliseconds before that fault, with the last message before it).
    let mut gap = (0.0, 0.0);
    for w in arrivals.windows(2) {
        let (from, to) = (w[0].at_ms, w[1].at_ms);
        if to > f.at_ms && to <= until && to - from > gap.0 {
            gap = (to - from, to);
        }
    }
    let (gap_ms, resumed) = gap;
    let paused = gap_ms > PAUSE_MS;
    let lost = (1..seen.len())
        .filter(|&s| !seen[s] && (f.at_ms..until).contains(&sent_times[s]))
        .count() as u64;
    EventDelivery {
        gap_ms,
        recovery_ms: if paused { resumed - f.at_ms } else { 0.0 },
        recovery_after_back_ms: if paused {
            (resumed - f.back_ms).max(0.0)
        } else {
            0.0
        },
        lost,
    }
}

/// The sequences not `seen`, as inclusive ranges.
fn ranges(seen: &[bool]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for s in (1..seen.len()).filter(|&s| !seen[s]) {
        match out.last_mut() {
            Some(r) if r.1 + 1 == s as u64 => r.1 = s as u64,
            _ => out.push((s as u64, s as u64)),
        }
    }
    out
}

/// When each sequence 1..=sent was sent: as its arrival said, or for one never delivered,
/// interpolated between the nearest delivered sequences around it (index 0 is unused).
fn sent_times(arrivals: &[Arrival], sent: u64) -> Vec<f64> {
    let mut known: Vec<Option<f64>> = vec![None; sent as usize + 1];
    for a in arrivals {
        if let Some(k) = known.get_mut(a.seq as usize) {
            k.get_or_insert(a.sent_ms);
        }
    }
    let anchors: Vec<(u64, f64)> = (1..known.len())
        .filter_map(|s| known[s].map(|t| (s as u64, t)))
        .collect();
    let pace = match (anchors.first(), anchors.last()) {
        (Some(&(a, ta)), Some(&(b, tb))) if b > a => (tb - ta) / (b - a) as f64,
        _ => 0.0,
    };
    let mut out = vec![f64::NAN; known.len()];
    let mut next = 0;
    for s in 1..known.len() as u64 {
        while next < anchors.len() && anchors[next].0 < s {
            next += 1;
        }
        out[s as usize] = match (next.checked_sub(1).map(|i| anchors[i]), anchors.get(next)) {
            (_, Some(&(n, t))) if n == s => t,
            (Some((a, ta)), Some(&(b, tb))) => ta + (tb - ta) * (s - a) as f64 / (b - a) as f64,
            // Before the first or after the last delivered one: at the stream's mean pace.
            (Some((a, ta)), None) => ta + pace * (s - a) as f64,
            (None, Some(&(b, tb))) => tb - pace * (b - s) as f64,
            (None, None) => f64::NAN,
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream at 200 msg/s (5 ms apart) with 1 ms latency: sequences `seqs` in order.
    fn steady(seqs: impl IntoIterator<Item = u64>) -> Vec<Arrival> {
        seqs.into_iter()
            .map(|s| Arrival {
                at_ms: s as f64 * 5.0 + 1.0,
                sent_ms: s as f64 * 5.0,
                seq: s,
            })
            .collect()
    }

    fn kill(at_ms: f64, back_ms: f64) -> Fault {
        Fault {
            kind: "kill".into(),
            target: "r1".into(),
            at_ms,
            back_ms,
        }
    }

    #[test]
    fn a_whole_stream_has_no_loss_and_no_pause() {
        let d = analyse("s", &steady(1..=100), 100, &[kill(200.0, 300.0)], 600.0);
        assert_eq!(
            (d.delivered, d.lost, d.duplicated, d.reordered),
            (100, 0, 0, 0)
        );
        assert_eq!(d.longest_gap_ms, 5.0);
        assert_eq!(d.events[0].recovery_ms, 0.0);
        assert_eq!(d.events[0].lost, 0);
    }

    #[test]
    fn messages_sent_during_an_outage_are_lost_to_the_fault_they_fell_in() {
        // A subscriber that joined at 11 expects 90.
        let late = analyse("s", &steady(11..=100), 100, &[], 600.0);
        assert_eq!((late.first_seq, late.sent, late.lost), (11, 90, 0));
        // Sequences 41..=60 (sent 205..300 ms) never arrive; the kill came at 200 ms, the
        // router was back at 290 ms and delivery at 306 ms (sequence 61).
        let a = steady((1..=40).chain(61..=100));
        let faults = [kill(200.0, 290.0), kill(400.0, 450.0)];
        let d = analyse("s", &a, 100, &faults, 600.0);
        assert_eq!((d.delivered, d.lost), (80, 20));
        assert_eq!(d.lost_ranges, [(41, 60)]);
        assert_eq!(d.events[0].lost, 20);
        assert_eq!(d.events[1].lost, 0);
        assert_eq!(d.events[0].gap_ms, 105.0);
        assert_eq!(d.events[0].recovery_ms, 106.0);
        assert_eq!(d.events[0].recovery_after_back_ms, 16.0);
        assert_eq!(d.longest_gap_ms, 105.0);
    }

    #[test]
    fn recovered_messages_count_as_delivered_and_reordered_ones_as_such() {
        // After a pause the missing 41..=60 come back in order before 61: nothing lost.
        let mut a = steady(1..=40);
        a.extend((41..=100).map(|s| Arrival {
            at_ms: 400.0 + s as f64 * 0.1,
            sent_ms: s as f64 * 5.0,
            seq: s,
        }));
        let d = analyse("s", &a, 100, &[kill(200.0, 350.0)], 600.0);
        assert_eq!((d.lost, d.duplicated, d.reordered), (0, 0, 0));
        assert!((d.events[0].gap_ms - (404.1 - 201.0)).abs() < 1e-9);
        // A later sequence first, then an earlier one, then the first again.
        let mut b = steady([1, 3, 2]);
        b.push(b[0]);
        let d = analyse("s", &b, 3, &[], 100.0);
        assert_eq!((d.delivered, d.reordered, d.duplicated), (3, 1, 1));
    }

    #[test]
    fn a_pause_belongs_to_the_fault_it_followed_not_the_one_before() {
        // The second kill, at 300 ms, stops delivery from 296 ms (sequence 59) to 406 ms.
        let a = steady((1..=59).chain(81..=100));
        let faults = [kill(100.0, 150.0), kill(300.0, 350.0)];
        let d = analyse("s", &a, 100, &faults, 600.0);
        assert_eq!((d.events[0].gap_ms, d.events[0].recovery_ms), (5.0, 0.0));
        assert_eq!(d.events[1].gap_ms, 110.0);
        assert_eq!(d.events[1].recovery_after_back_ms, 56.0);
        assert_eq!((d.events[0].lost, d.events[1].lost), (0, 21));
    }

    #[test]
    fn a_tail_never_delivered_is_lost_to_the_fault_of_its_time() {
        // 51..=100 would have been sent 255..500 ms: 60..=100, from 300 ms on, fell in it.
        let d = analyse("s", &steady(1..=50), 100, &[kill(300.0, 310.0)], 600.0);
        assert_eq!((d.lost, d.events[0].lost), (50, 41));
    }
}
