//! What a client's receipts say: latency percentiles, messages lost, and whether latency grew
//! over the run (a backlog). Pure.

use serde::Serialize;

/// Nearest-rank percentile `p` (0..=100) of sorted values; None when there are none.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    percentile(&v, 50.0)
}

/// Latency growth between the start and the end of a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Backlog {
    /// Median latency of the first fifth of the messages received (in send order), ms.
    pub first_fifth_ms: f64,
    /// Median latency of the last fifth, ms.
    pub last_fifth_ms: f64,
    pub backlog: bool,
}

/// The backlog rule, stated in GATEWAY.md: latency grew (the last fifth's median exceeds the
/// first fifth's by more than 5 ms and by more than a quarter), or, for a periodic topic,
/// messages stand in a queue (the last fifth's median is over two periods: at least one
/// whole message waited behind another). `latencies_ms` in send order; None under 10.
pub fn backlog(latencies_ms: &[f64], period_ms: Option<f64>) -> Option<Backlog> {
    let n = latencies_ms.len();
    if n < 10 {
        return None;
    }
    let fifth = n / 5;
    let first = median(&latencies_ms[..fifth])?;
    let last = median(&latencies_ms[n - fifth..])?;
    let grew = last - first > 5.0_f64.max(first * 0.25);
    let standing = period_ms.is_some_and(|p| last > 2.0 * p);
    Some(Backlog {
        first_fifth_ms: first,
        last_fifth_ms: last,
        backlog: grew || standing,
    })
}

/// One client's figures over the measured messages.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ClientFigures {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub backlog: Option<Backlog>,
}

/// Figures from receipts `(seq, latency ms)` for the messages `from..=to` (others, the warm-up
/// and any straggler, are left out; a duplicate counts once).
pub fn figures(
    receipts: &[(u64, f64)],
    from: u64,
    to: u64,
    period_ms: Option<f64>,
) -> ClientFigures {
    let mut r: Vec<(u64, f64)> = receipts
        .iter()
        .copied()
        .filter(|(s, _)| (from..=to).contains(s))
        .collect();
    r.sort_by_key(|(s, _)| *s);
    r.dedup_by_key(|(s, _)| *s);
    let in_order: Vec<f64> = r.iter().map(|(_, l)| *l).collect();
    let mut sorted = in_order.clone();
    sorted.sort_by(f64::total_cmp);
    let sent = (to + 1).saturating_sub(from);
    let received = r.len() as u64;
    ClientFigures {
        sent,
        received,
        lost: sent.saturating_sub(received),
        p50_ms: percentile(&sorted, 50.0),
        p99_ms: percentile(&sorted, 99.0),
        max_ms: sorted.last().copied(),
        backlog: backlog(&in_order, period_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn steady_latency_is_no_backlog_and_growing_latency_is() {
        let steady: Vec<f64> = (0..100).map(|i| 10.0 + (i % 3) as f64).collect();
        let b = backlog(&steady, Some(33.3)).unwrap();
        assert!(!b.backlog, "{b:?}");
        // A queue that grows by 2 ms a message.
        let growing: Vec<f64> = (0..100).map(|i| 10.0 + 2.0 * i as f64).collect();
        assert!(backlog(&growing, Some(33.3)).unwrap().backlog);
        // A few ms more at the end of a low-latency run is jitter, not a backlog.
        let mut jitter = vec![1.0; 50];
        jitter.extend(vec![4.0; 50]);
        assert!(!backlog(&jitter, None).unwrap().backlog);
        // A full queue: flat, but every message waits several periods.
        let standing = vec![3000.0; 100];
        assert!(backlog(&standing, Some(33.3)).unwrap().backlog);
        assert!(!backlog(&standing, None).unwrap().backlog);
        assert_eq!(backlog(&[1.0; 9], None), None);
    }

    #[test]
    fn figures_count_the_measured_window_once() {
        let receipts = [(1, 5.0), (2, 6.0), (2, 6.0), (3, 7.0), (9, 100.0)];
        let f = figures(&receipts, 2, 5, None);
        assert_eq!((f.sent, f.received, f.lost), (4, 2, 2));
        assert_eq!((f.p50_ms, f.max_ms), (Some(6.0), Some(7.0)));
    }
}
