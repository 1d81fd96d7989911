//! The experiments of the seeds, each a list of (system, path, load) runs.

use roam_bench::ros_msgs::Kind;

use super::measure::{measure, Load, Measurement};
use super::systems::{Lab, Links, System, Vendor, Wan, ZenohLink};

/// How big a suite: `smoke` proves the harness works (CI), `quick` gives every headline figure
/// in minutes, `full` runs every point of every experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Suite {
    Smoke,
    Quick,
    Full,
}

const KIB: usize = 1024;
/// E1's rounds in the quick and full suites (the first is E1's own): four more of five rows
/// take two to three minutes on 2 cores and put each goal's ratio at the median of five.
const E1_ROUNDS: usize = 5;

/// roam with TCP+TLS links instead of QUIC (E1, E2, E6): what the link transport costs.
const ROAM_TCP: System = System::Roam {
    routers: 1,
    encrypt: true,
    links: Links::Tcp,
};

pub struct Plan<'a> {
    pub lab: &'a Lab,
    pub suite: Suite,
    /// Which experiments to run (empty: all).
    pub only: Vec<String>,
    pub out: Vec<Measurement>,
    /// E10's runs (ddsperf's figures are not the load generator's).
    pub ddsperf: Vec<super::ddsperf::DdsperfRun>,
    /// E11's runs (pairs of flows through one bottleneck).
    pub fairness: Vec<super::fairness::FairnessRun>,
    /// E12's runs (small topics next to an image stream).
    pub hol: Vec<super::hol::HolRun>,
    /// E13's runs (many topics at once).
    pub many_topics: Vec<super::many_topics::ManyTopicsRun>,
    /// E1's floor, next to each round.
    pub floor: Vec<super::floor::FloorRun>,
}

impl Plan<'_> {
    fn wants(&self, e: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == e)
    }

    fn pick<T: Copy>(&self, smoke: T, quick: T, full: T) -> T {
        match self.suite {
            Suite::Smoke => smoke,
            Suite::Quick => quick,
            Suite::Full => full,
        }
    }

    /// The systems compared everywhere: native, roam proxy to proxy (the Zenoh bridge's
    /// process count) and through a router, and the Zenoh bridge when it is built.
    fn systems(&self, zenoh_quic_too: bool) -> Vec<System> {
        let mut v = vec![System::Native, System::ROAM_P2P, System::ROAM];
        if self.lab.zenoh.is_some() && self.suite != Suite::Smoke {
            v.push(System::Zenoh {
                link: ZenohLink::Tcp,
            });
            v.push(System::Zenoh {
                link: ZenohLink::TlsMutual,
            });
            if zenoh_quic_too {
                v.push(System::Zenoh {
                    link: ZenohLink::Quic,
                });
            }
        }
        v
    }

    /// The systems with Fast DDS nodes (E1, E2), when the Fast DDS load generator is built:
    /// native Fast DDS in one domain, and roam proxy to proxy and through a router with Fast
    /// DDS nodes on both sides.
    fn fastdds_systems(&self) -> Vec<System> {
        if self.lab.fastdds.is_err() {
            return Vec::new();
        }
        match self.suite {
            // One small row: proves a Fast DDS node reaches a Fast DDS node through roam.
            Suite::Smoke => vec![System::ROAM_P2P],
            _ => vec![System::Native, System::ROAM_P2P, System::ROAM],
        }
    }

    fn run(&mut self, e: &'static str, system: System, wan: Option<Wan>, load: Load) {
        self.run_nodes(e, system, Vendor::CycloneDds, wan, load);
    }

    fn run_nodes(
        &mut self,
        e: &'static str,
        system: System,
        nodes: Vendor,
        wan: Option<Wan>,
        load: Load,
    ) {
        eprintln!(
            "  {e} {:<28} {} {} x{}{}{}",
            nodes.label(system),
            load.kind,
            load.size,
            load.count,
            if load.rate > 0.0 {
                format!(" @{} Hz", load.rate)
            } else {
                String::new()
            },
            wan.map(|w| format!(" [{}]", w.label)).unwrap_or_default()
        );
        let m = measure(self.lab, e, system, nodes, wan, load);
        self.out.push(m);
    }

    pub fn run_all(&mut self) {
        if self.wants("e1") {
            self.e1_rtt_vs_size();
        }
        if self.wants("e2") {
            self.e2_throughput();
        }
        if self.suite == Suite::Smoke {
            return;
        }
        if self.wants("e3") {
            self.e3_encryption();
        }
        if self.wants("e4") {
            self.e4_rate();
        }
        if self.wants("e5") {
            self.e5_large();
        }
        if self.wants("e6") {
            self.e6_wan();
        }
        if self.wants("e10") {
            self.e10_ddsperf();
        }
        if self.wants("e11") {
            // Warm-up and window in seconds, after both flows deliver.
            let (warmup, window) = self.pick((0, 0), (10, 20), (15, 60));
            self.fairness = super::fairness::run_all(self.lab, warmup, window);
        }
        if self.wants("e12") {
            self.hol = super::hol::run_all(self.lab, self.suite);
        }
        if self.wants("e13") {
            self.many_topics = super::many_topics::run_all(self.lab, self.suite);
        }
    }

    /// E10 (issue 18): ddsperf at an unlimited rate, 1 KB and 64 KB, native and through roam.
    fn e10_ddsperf(&mut self) {
        if !super::ddsperf::available() {
            eprintln!("  e10 left out: ddsperf is not installed (Debian's cyclonedds-tools)");
            return;
        }
        let seconds = self.pick(0, 10, 30);
        for size in [1000, 64 * 1000] {
            for sys in [System::Native, System::ROAM_P2P, System::ROAM] {
                eprintln!("  e10 {:<28} ddsperf {size} B for {seconds} s", sys.label());
                let r = super::ddsperf::run(self.lab, sys, size, seconds);
                if let Some(e) = &r.error {
                    eprintln!("    failed: {}", e.lines().next().unwrap_or(""));
                }
                self.ddsperf.push(r);
            }
        }
    }

    /// E1 (seed 000 Fig. 7; issue 3): echo round trip vs message size.
    fn e1_rtt_vs_size(&mut self) {
        let sizes: &[usize] = self.pick(
            &[8, 8 * KIB],
            &[8, KIB, 8 * KIB, 64 * KIB, 1 << 20],
            &[8, KIB, 8 * KIB, 64 * KIB, 1 << 20],
        );
        let mut systems = self.systems(true);
        systems.insert(3, ROAM_TCP);
        systems.insert(
            4,
            System::Roam {
                routers: 2,
                encrypt: true,
                links: Links::Quic,
            },
        );
        for &size in sizes {
            let count = self.e1_count(size);
            for &sys in &systems {
                self.run(
                    "e1",
                    sys,
                    None,
                    Load::rtt(Kind::CompressedImage, size, count),
                );
            }
            if self.suite == Suite::Smoke {
                continue;
            }
            for sys in self.fastdds_systems() {
                self.run_nodes(
                    "e1",
                    sys,
                    Vendor::FastDds,
                    None,
                    Load::rtt(Kind::CompressedImage, size, count),
                );
            }
        }
        self.e1_floor(1, sizes);
        self.e1_rounds(sizes);
    }

    /// The machine's floor under E1 (`floor.rs`), in round `round`, every size.
    fn e1_floor(&mut self, round: usize, sizes: &[usize]) {
        let exe = match std::env::current_exe() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("  e1 floor left out: {e}");
                return;
            }
        };
        for &size in sizes {
            let count = self.e1_count(size);
            for forwarders in crate::report::FLOOR_SHAPES {
                eprintln!("  e1 floor, {forwarders} in between, {size} B x{count}");
                let r = super::floor::run(&exe, round, size, forwarders, count);
                if let Some(e) = &r.error {
                    eprintln!("    failed: {}", e.lines().next().unwrap_or(""));
                }
                self.floor.push(r);
            }
        }
    }

    /// Round trips per E1 run of `size`-byte messages.
    fn e1_count(&self, size: usize) -> u64 {
        match (self.suite, size) {
            (Suite::Smoke, _) => 50,
            (_, s) if s >= 1 << 20 => self.pick(0, 100, 300),
            (_, s) if s >= 64 * KIB => self.pick(0, 300, 1000),
            _ => self.pick(0, 1000, 5000),
        }
    }

    /// E1's rows the goals read, again, round after round (every size in turn each round), so
    /// that a ratio is read from several rounds' (`report::rounds`).
    fn e1_rounds(&mut self, sizes: &[usize]) {
        let rounds = self.pick(1, E1_ROUNDS, E1_ROUNDS);
        let systems = self.systems(false);
        for round in 2..=rounds {
            self.e1_floor(round, sizes);
            for &size in sizes {
                let count = self.e1_count(size);
                for &sys in &systems {
                    self.run(
                        crate::report::rounds::EXPERIMENT,
                        sys,
                        None,
                        Load::rtt(Kind::CompressedImage, size, count),
                    );
                }
            }
        }
    }

    /// E2 (seed 000 Table I; issue 3): 1000-byte messages per second, unpaced, reliable.
    fn e2_throughput(&mut self) {
        let count = self.pick(2_000, 50_000, 200_000);
        let mut systems = self.systems(true);
        systems.insert(
            3,
            System::Roam {
                routers: 1,
                encrypt: false,
                links: Links::Quic,
            },
        );
        systems.insert(
            4,
            System::Roam {
                routers: 2,
                encrypt: true,
                links: Links::Quic,
            },
        );
        systems.insert(5, ROAM_TCP);
        for sys in systems {
            self.run(
                "e2",
                sys,
                None,
                Load::stream(Kind::String, 1000, count, 0.0),
            );
        }
        for sys in self.fastdds_systems() {
            self.run_nodes(
                "e2",
                sys,
                Vendor::FastDds,
                None,
                Load::stream(Kind::String, 1000, count, 0.0),
            );
        }
    }

    /// E3 (seed 002): latency vs size, sealed vs clear text, LaserScan of 10^0..10^6 ranges.
    fn e3_encryption(&mut self) {
        let exps: &[u32] = self.pick(&[], &[0, 2, 4, 5], &[0, 1, 2, 3, 4, 5, 6]);
        for &x in exps {
            let ranges = 10usize.pow(x);
            let count = if x >= 6 {
                self.pick(0, 50, 100)
            } else if x >= 5 {
                self.pick(0, 200, 500)
            } else {
                self.pick(0, 500, 2000)
            };
            for sys in [
                System::Native,
                System::ROAM,
                System::Roam {
                    routers: 1,
                    encrypt: false,
                    links: Links::Quic,
                },
            ] {
                self.run("e3", sys, None, Load::rtt(Kind::LaserScan, ranges, count));
            }
        }
    }

    /// E4 (seed 004): one-way latency vs publish rate, to find each system's knee.
    fn e4_rate(&mut self) {
        let small: &[f64] = self.pick(
            &[],
            &[200.0, 2000.0, 10_000.0],
            &[200.0, 500.0, 1000.0, 2000.0, 5000.0, 10_000.0],
        );
        let big: &[f64] = self.pick(&[], &[5.0, 30.0], &[5.0, 15.0, 30.0, 45.0, 60.0]);
        let secs = self.pick(0.0, 3.0, 10.0);
        for sys in self.systems(false) {
            for &hz in small {
                self.run(
                    "e4",
                    sys,
                    None,
                    Load::stream(Kind::CompressedImage, 4 * KIB, (hz * secs) as u64, hz),
                );
            }
            for &hz in big {
                self.run(
                    "e4",
                    sys,
                    None,
                    Load::stream(Kind::Image, 307_200, (hz * secs).max(10.0) as u64, hz),
                );
            }
        }
    }

    /// E5 (seed 000's failure case): 13 MB messages at 1-10 Hz, reliable: loss and latency.
    fn e5_large(&mut self) {
        let rates: &[f64] = self.pick(&[], &[2.0], &[1.0, 5.0, 10.0]);
        let count = self.pick(0, 10, 30);
        for sys in self.systems(false) {
            for &hz in rates {
                self.run(
                    "e5",
                    sys,
                    None,
                    Load::stream(Kind::Image, 13_000_000, count, hz),
                );
            }
        }
    }

    /// E6 (seed 003): wide-area paths through the lab's delay/jitter/loss relay.
    fn e6_wan(&mut self) {
        let wans = [
            Wan::PATH_35MS,
            Wan::PATH_35MS_1PCT_LOSS,
            Wan {
                label: "35 ms, 3% loss",
                delay_ms: 35.0,
                jitter_ms: 0.0,
                loss: 0.03,
                keep_order: false,
            },
            Wan {
                label: "5G-like 19 ms ± 6 ms",
                delay_ms: 19.0,
                jitter_ms: 6.0,
                loss: 0.0,
                keep_order: true,
            },
        ];
        // 1 KiB images, and seed 003's ~1.08 MB point clouds (robot to cloud over 5G). On a
        // lossy path 1% of 100 echoes is one: the 1 KiB rows' p99 needs more there.
        let (few, more) = (self.pick(0, 100, 500), self.pick(0, 300, 500));
        let small = |w: &Wan| {
            let n = if w.loss > 0.0 { more } else { few };
            Load::rtt(Kind::CompressedImage, KIB, n)
        };
        let large = Load::rtt(Kind::PointCloud2, 1_080_000, self.pick(0, 20, 100));
        // roam's link kinds, its default controller against plain Cubic (the default before)
        // and BBR: a lossy path is where the congestion controller shows.
        let roam = |links| System::Roam {
            routers: 1,
            encrypt: true,
            links,
        };
        let mut systems = vec![
            System::ROAM_P2P,
            System::Roam {
                routers: 0,
                encrypt: true,
                links: Links::QuicNoFec,
            },
            System::ROAM,
            roam(Links::QuicCubic),
            roam(Links::QuicBbr),
            ROAM_TCP,
        ];
        if self.lab.zenoh.is_some() {
            for link in [ZenohLink::Tcp, ZenohLink::TlsMutual, ZenohLink::Quic] {
                systems.push(System::Zenoh { link });
            }
        }
        for w in wans {
            for load in [small(&w), large] {
                for &sys in &systems {
                    // Plain Cubic over 3% loss takes minutes a point cloud: 1% shows it.
                    if w.loss > 0.02 && sys == roam(Links::QuicCubic) {
                        continue;
                    }
                    // Without loss a link sends no repairs: the row would repeat the default.
                    if w.loss == 0.0
                        && matches!(
                            sys,
                            System::Roam {
                                links: Links::QuicNoFec,
                                ..
                            }
                        )
                    {
                        continue;
                    }
                    self.run("e6", sys, Some(w), load);
                }
            }
        }
    }
}
