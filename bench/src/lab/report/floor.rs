//! E1's floor table: the bare-UDP echo through 0, 2 and 3 processes that only pass it on
//! (`crate::floor`), run next to each of E1's rounds, against what roam adds over native DDS
//! in the same rounds. What the floor adds is the machine's price for the extra processes;
//! what roam adds beyond it is its own work.

use std::fmt::Write as _;

use super::rounds::{self, Rounds};
use super::table::{of, size};
use super::Report;
use crate::floor::FloorRun;
use crate::systems::System;

/// The shapes the floor runs: native's, proxy to proxy's, one router's.
pub const SHAPES: [usize; 3] = [0, 2, 3];

/// A shape's median round trips at one size, indexed by round (round 1 first).
fn by_round(runs: &[FloorRun], sz: usize, forwarders: usize, n: usize) -> Vec<Option<f64>> {
    let mut v = vec![None; n];
    for r in of_shape(runs, sz, forwarders) {
        if let Some(slot) = r.round.checked_sub(1).and_then(|i| v.get_mut(i)) {
            *slot = r.median_us;
        }
    }
    v
}

fn of_shape(runs: &[FloorRun], sz: usize, forwarders: usize) -> impl Iterator<Item = &FloorRun> {
    runs.iter()
        .filter(move |r| r.size == sz && r.forwarders == forwarders && r.error.is_none())
}

/// `a - b` round by round over `n` rounds: None where either did not run (or ran short).
fn minus(a: &[Option<f64>], b: &[Option<f64>], n: usize) -> Vec<Option<f64>> {
    let at = |v: &[Option<f64>], k: usize| v.get(k).copied().flatten();
    (0..n).map(|k| Some(at(a, k)? - at(b, k)?)).collect()
}

/// The rounds that have a value.
fn flat(v: &[Option<f64>]) -> Vec<f64> {
    v.iter().flatten().copied().collect()
}

fn two(a: &[f64], b: &[f64]) -> String {
    format!("{} / {}", rounds::times(a), rounds::times(b))
}

pub(super) fn e1(r: &Report, s: &mut String) {
    if r.floor.is_empty() {
        return;
    }
    let e1_runs = of(r, "e1")
        .into_iter()
        .chain(of(r, rounds::EXPERIMENT))
        .map(|m| (m.load.size, m.system, m.rtt("median_us")));
    let e1 = Rounds::collect(e1_runs);
    let n = r
        .floor
        .iter()
        .map(|f| f.round)
        .max()
        .unwrap_or(0)
        .max(e1.count());
    let lost: u64 = r.floor.iter().map(|f| f.lost).sum();
    let failed = r.floor.iter().filter(|f| f.error.is_some()).count();
    let _ = writeln!(
        s,
        "The machine's floor, next to each of E1's {n} rounds: a message of each size (in datagrams \
         of at most 60,000 bytes) echoed over UDP on loopback between two processes, through 0, 2 or \
         3 processes in between that only receive it and send it on (`roam-lab --floor-forwarder`): \
         the number of processes on native DDS's path, on proxy to proxy's (and the Zenoh bridge's) \
         and on one router's, doing nothing else. What 2 and 3 add over 0 is what this machine charges \
         for the processes a bridge puts on the path; what roam adds over native beyond that is its \
         own work (DDS on both sides of each proxy, sealing, QUIC). Medians over the rounds \
         (lowest-highest); the differences are taken round by round.{}\n",
        if lost + failed as u64 > 0 {
            format!(" {lost} floor echoes lost, {failed} floor runs failed.")
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "| data size | 0 in between | 2 in between | 3 in between | the floor adds (2 / 3) | roam adds over native (proxy to proxy / 1 router) | roam's own work (proxy to proxy / 1 router) | CPU of one process in between per round trip (2 / 3) |\n|---|---|---|---|---|---|---|---|"
    );
    let mut sizes: Vec<usize> = r.floor.iter().map(|f| f.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for sz in sizes {
        let [f0, f2, f3] = SHAPES.map(|k| by_round(&r.floor, sz, k, n));
        let native = e1.of(sz, System::Native);
        let floor2 = minus(&f2, &f0, n);
        let floor3 = minus(&f3, &f0, n);
        let p2p = minus(e1.of(sz, System::ROAM_P2P), native, n);
        let routed = minus(e1.of(sz, System::ROAM), native, n);
        let cpu = |k: usize| -> Vec<f64> {
            of_shape(&r.floor, sz, k)
                .filter_map(|r| r.forwarder_cpu_us)
                .collect()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            size(sz),
            rounds::times(&flat(&f0)),
            rounds::times(&flat(&f2)),
            rounds::times(&flat(&f3)),
            two(&flat(&floor2), &flat(&floor3)),
            two(&flat(&p2p), &flat(&routed)),
            two(
                &flat(&minus(&p2p, &floor2, n)),
                &flat(&minus(&routed, &floor3, n))
            ),
            two(&cpu(2), &cpu(3)),
        );
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(round: usize, forwarders: usize, median: f64) -> FloorRun {
        FloorRun {
            round,
            size: 8,
            forwarders,
            count: 10,
            median_us: Some(median),
            p99_us: None,
            lost: 0,
            forwarder_cpu_us: None,
            error: None,
        }
    }

    #[test]
    fn a_shape_is_read_round_by_round_with_gaps_left_empty() {
        let runs = [run(1, 2, 70.0), run(3, 2, 90.0), run(2, 0, 50.0)];
        assert_eq!(by_round(&runs, 8, 2, 3), [Some(70.0), None, Some(90.0)]);
        assert_eq!(by_round(&runs, 8, 0, 3), [None, Some(50.0), None]);
        // A round past the table's count is not read.
        assert_eq!(by_round(&runs, 8, 2, 2), [Some(70.0), None]);
    }

    #[test]
    fn roams_own_work_is_what_it_adds_minus_the_floor_in_the_same_round() {
        let added = [Some(200.0), Some(180.0), None];
        let floor = [Some(60.0), None, Some(50.0)];
        assert_eq!(flat(&minus(&added, &floor, 3)), [140.0]);
    }
}
