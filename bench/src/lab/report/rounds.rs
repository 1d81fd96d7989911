//! E1 over several rounds. One run's ratio at one size is one median against another, and on
//! a 2-vCPU machine it swings by up to 0.5 from run to run (8 B proxy to proxy against the
//! Zenoh bridge over TCP: 0.78x-1.27x in six runs, bench/results/lab-e1-six-rounds-c2a26d7.md).
//! The lab runs the rows the goals read (native, roam proxy to proxy and through a router,
//! Zenoh over TCP and mutual TLS) again after E1, round after round; the goals are read from
//! the median of the rounds' ratios. Round k of a row is its k-th run: E1's own first, then
//! the `e1-rounds` runs in order.

use std::fmt::Write as _;

use super::table::{of, size, us, ZENOH_TCP};
use super::Report;
use crate::systems::{System, ZenohLink};

/// The experiment name of the runs after E1's own.
pub const EXPERIMENT: &str = "e1-rounds";

const ZENOH_MTLS: System = System::Zenoh {
    link: ZenohLink::TlsMutual,
};

/// The rows the table shows, in its column order.
const COLUMNS: [System; 5] = [
    System::Native,
    System::ROAM_P2P,
    System::ROAM,
    ZENOH_TCP,
    ZENOH_MTLS,
];

/// One system's median round trips at one size, round by round (None: that run failed).
type Row = (System, Vec<Option<f64>>);

/// Each size's rows, in the order the runs ran.
#[derive(Debug, Default)]
pub(super) struct Rounds {
    sizes: Vec<(usize, Vec<Row>)>,
}

impl Rounds {
    /// From (size, system, median round trip) in the order the runs ran.
    pub(super) fn collect(runs: impl IntoIterator<Item = (usize, System, Option<f64>)>) -> Rounds {
        let mut r = Rounds::default();
        for (sz, sys, rtt) in runs {
            let at = match r.sizes.iter().position(|(s, _)| *s == sz) {
                Some(i) => i,
                None => {
                    r.sizes.push((sz, Vec::new()));
                    r.sizes.len() - 1
                }
            };
            let rows = &mut r.sizes[at].1;
            match rows.iter_mut().find(|(s, _)| *s == sys) {
                Some((_, v)) => v.push(rtt),
                None => rows.push((sys, vec![rtt])),
            }
        }
        r
    }

    /// The most rounds any row has.
    pub(super) fn count(&self) -> usize {
        self.sizes
            .iter()
            .flat_map(|(_, rows)| rows.iter().map(|(_, v)| v.len()))
            .max()
            .unwrap_or(0)
    }

    pub(super) fn of(&self, sz: usize, sys: System) -> &[Option<f64>] {
        self.sizes
            .iter()
            .find(|(s, _)| *s == sz)
            .and_then(|(_, rows)| rows.iter().find(|(s, _)| *s == sys))
            .map_or(&[], |(_, v)| v.as_slice())
    }
}

/// `f(a_k, b_k)` for every round k where both rows ran.
pub(super) fn paired(
    a: &[Option<f64>],
    b: &[Option<f64>],
    f: impl Fn(f64, f64) -> f64,
) -> Vec<f64> {
    a.iter()
        .zip(b)
        .filter_map(|(a, b)| Some(f((*a)?, (*b)?)))
        .collect()
}

/// Median, lowest and highest of `v` (the median of an even count is the mean of the middle
/// two).
pub(super) fn spread(v: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((median, v[0], v[n - 1]))
}

pub(super) fn times(v: &[f64]) -> String {
    match spread(v) {
        Some((m, lo, hi)) => format!("{} ({}-{})", us(Some(m)), us(Some(lo)), us(Some(hi))),
        None => "—".into(),
    }
}

fn ratios(v: &[f64]) -> String {
    match spread(v) {
        Some((m, lo, hi)) => format!("{m:.2}x ({lo:.2}x-{hi:.2}x)"),
        None => "—".into(),
    }
}

/// The table of E1's rounds, when the lab ran more than one.
pub(super) fn e1(r: &Report, s: &mut String) {
    let runs = of(r, "e1")
        .into_iter()
        .chain(of(r, EXPERIMENT))
        .filter(|m| COLUMNS.contains(&m.system))
        .map(|m| (m.load.size, m.system, m.rtt("median_us")));
    let rounds = Rounds::collect(runs);
    if rounds.count() < 2 {
        return;
    }
    markdown(&rounds, s);
}

pub(super) fn markdown(rounds: &Rounds, s: &mut String) {
    let n = rounds.count();
    let _ = writeln!(
        s,
        "E1 in {n} rounds: the first is the table above; after all of E1 the lab ran these rows \
         again, every size in turn, {} more times. Median of the rounds' median round trips \
         (lowest-highest); the ratios are each round's, their median (lowest-highest). Read \
         the goals from these.\n",
        n - 1
    );
    let mut head = "| data size |".to_string();
    for x in COLUMNS {
        let _ = write!(head, " {} |", x.label());
    }
    head += " proxy to proxy / zenoh (TCP) | 1 router / zenoh (TCP) | proxy to proxy added over native |";
    let _ = writeln!(s, "{head}\n|{}", "---|".repeat(COLUMNS.len() + 4));
    for (sz, _) in &rounds.sizes {
        let sz = *sz;
        let mut row = format!("| {} |", size(sz));
        for x in COLUMNS {
            let v: Vec<f64> = rounds.of(sz, x).iter().flatten().copied().collect();
            let _ = write!(row, " {} |", times(&v));
        }
        let zenoh = rounds.of(sz, ZENOH_TCP);
        let p2p = paired(rounds.of(sz, System::ROAM_P2P), zenoh, |a, b| a / b);
        let routed = paired(rounds.of(sz, System::ROAM), zenoh, |a, b| a / b);
        let added = paired(
            rounds.of(sz, System::ROAM_P2P),
            rounds.of(sz, System::Native),
            |a, b| a - b,
        );
        let below = p2p.iter().filter(|x| **x <= 1.0).count();
        let p2p_cell = match p2p.len() {
            0 => "—".to_string(),
            k => format!("{}, at or below in {below} of {k}", ratios(&p2p)),
        };
        let _ = writeln!(
            row,
            " {p2p_cell} | {} | {} |",
            ratios(&routed),
            times(&added)
        );
        s.push_str(&row);
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    const P2P: System = System::ROAM_P2P;

    #[test]
    fn rounds_are_the_runs_of_a_row_in_order() {
        let r = Rounds::collect([
            (8, System::Native, Some(30.0)),
            (8, P2P, Some(150.0)),
            (1024, P2P, Some(160.0)),
            (8, P2P, None),
            (8, P2P, Some(120.0)),
        ]);
        assert_eq!(r.of(8, P2P), &[Some(150.0), None, Some(120.0)]);
        assert_eq!(r.of(1024, P2P), &[Some(160.0)]);
        assert_eq!(r.of(8, ZENOH_TCP), &[] as &[Option<f64>]);
        assert_eq!(r.count(), 3);
    }

    #[test]
    fn a_ratio_pairs_one_round_with_the_same_round_only() {
        let a = [Some(150.0), None, Some(120.0), Some(100.0)];
        let b = [Some(100.0), Some(90.0), None, Some(200.0)];
        assert_eq!(paired(&a, &b, |a, b| a / b), vec![1.5, 0.5]);
    }

    #[test]
    fn spread_gives_the_median_and_the_range() {
        assert_eq!(spread(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(spread(&[4.0, 1.0, 3.0, 2.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(spread(&[f64::NAN, 1.0]), Some((1.0, 1.0, 1.0)));
        assert_eq!(spread(&[]), None);
    }

    #[test]
    fn the_table_reads_each_rounds_ratio_and_counts_those_at_or_below() {
        let mut runs = Vec::new();
        // Three rounds at 8 B: roam at 0.8x, 1.0x and 1.5x Zenoh's; native 30 us.
        for (p2p, zenoh) in [(80.0, 100.0), (100.0, 100.0), (150.0, 100.0)] {
            runs.push((8, System::Native, Some(30.0)));
            runs.push((8, P2P, Some(p2p)));
            runs.push((8, System::ROAM, Some(2.0 * zenoh)));
            runs.push((8, ZENOH_TCP, Some(zenoh)));
        }
        let mut s = String::new();
        markdown(&Rounds::collect(runs), &mut s);
        assert!(s.starts_with("E1 in 3 rounds"), "{s}");
        let row = s
            .lines()
            .find(|l| l.starts_with("| 8 B |"))
            .expect("a row for 8 B");
        assert!(
            row.contains("| 1.00x (0.80x-1.50x), at or below in 2 of 3 |"),
            "{row}"
        );
        assert!(row.contains("| 2.00x (2.00x-2.00x) |"), "{row}");
        assert!(row.contains("| 70 µs (50 µs-120 µs) |"), "{row}");
        // Zenoh over mutual TLS did not run: its column says so.
        assert_eq!(row.matches("| — |").count(), 1, "{row}");
    }
}
