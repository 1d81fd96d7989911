//! `roam-lab faults`: fault campaigns against real routers on loopback (issue "under fire").
//! Each campaign runs a mesh of `roam router` processes, a `roam pub --keep-all` at 200 Hz and
//! `roam sub`s, does its faults on a seeded schedule (kill -9 with a restart 3-5 s later,
//! graceful restarts, partitions, a soak), and reports per subscriber what was sent,
//! delivered, lost, duplicated and reordered and how long each fault stopped delivery:
//! bench/FAULTS.md and bench/results/faults.json.

mod campaign;
mod flood;
mod goals;
mod mesh;
mod report;
mod stream;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde::Serialize;

use campaign::{Action, Campaign, Outcome, Step};

const USAGE: &str = "\
usage: roam-lab faults [--smoke|--quick|--full] [--only LIST] [--seed N]
                       [--out FILE.json] [--markdown FILE.md]

  --smoke        about two minutes: few faults of each kind, no soak (the test runs it)
  --quick        a few faults of each kind and a 3-minute soak, about 9 minutes (default)
  --full         the issue's campaigns: kill -9 every 15 s for 10 minutes, 19 graceful
                 restarts, a 30 s partition, a 30-minute soak
  --only LIST    run only these campaigns: ring-kill, ring-restart, chain-kill,
                 partition, soak, flood
  --seed N       the schedule's seed (which router, how long it stays down) [1]
  --out FILE     results JSON [bench/results/faults.json; --smoke: none]
  --markdown F   report [bench/FAULTS.md; --smoke: none]";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Size {
    Smoke,
    Quick,
    Full,
}

/// The whole run, as written to the results JSON.
#[derive(Serialize)]
pub struct Report {
    pub suite: Size,
    pub seed: u64,
    pub machine: roam_bench::machine::Machine,
    pub commit: String,
    pub date: String,
    pub seconds: f64,
    pub campaigns: Vec<Outcome>,
    /// A member flooding a topic next to another's (run with the campaigns, reported apart:
    /// it measures latency, not loss).
    pub flood: Option<flood::FloodOutcome>,
    pub goals: Vec<goals::Goal>,
}

pub fn main(args: impl Iterator<Item = String>) -> Result<(), String> {
    let bench = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (mut size, mut only, mut seed, mut out, mut markdown) =
        (Size::Quick, Vec::<String>::new(), 1u64, None, None);
    let mut it = args;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--smoke" => size = Size::Smoke,
            "--quick" => size = Size::Quick,
            "--full" => size = Size::Full,
            "--only" => {
                only = it
                    .next()
                    .ok_or("--only needs a list")?
                    .split(',')
                    .map(str::to_string)
                    .collect()
            }
            "--seed" => {
                seed = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or("--seed needs a number")?
            }
            "--out" => out = Some(PathBuf::from(it.next().ok_or("--out needs a file")?)),
            "--markdown" => {
                markdown = Some(PathBuf::from(it.next().ok_or("--markdown needs a file")?))
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if size != Size::Smoke {
        out.get_or_insert(bench.join("results/faults.json"));
        markdown.get_or_insert(bench.join("FAULTS.md"));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let roam = exe.parent().ok_or("no program directory")?.join("roam");
    if !roam.is_file() {
        return Err(format!(
            "{} not found: build it first (cargo build --release -p roam -p roam-bench)",
            roam.display()
        ));
    }
    let campaigns = plan(size, seed);
    for o in &only {
        if o != "flood" && !campaigns.iter().any(|c| c.name == o) {
            return Err(format!("--only: no campaign {o:?}\n{USAGE}"));
        }
    }
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for c in campaigns
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| o == c.name))
    {
        eprintln!("faults: {} ({} faults): {}", c.name, c.steps.len(), c.what);
        let o = campaign::run(&roam, c);
        eprintln!("{}", report::summary_line(&o));
        outcomes.push(o);
    }
    let flood = (only.is_empty() || only.iter().any(|o| o == "flood")).then(|| {
        let window = Duration::from_secs(match size {
            Size::Smoke => 5,
            Size::Quick => 15,
            Size::Full => 60,
        });
        let f = flood::run(&roam, window, size == Size::Smoke);
        eprintln!("{}", report::flood_line(&f));
        f
    });
    let mut goals = goals::judge(&outcomes);
    goals.extend(flood.as_ref().and_then(goals::flood));
    let report = Report {
        suite: size,
        seed,
        machine: roam_bench::machine::machine(),
        commit: roam_bench::machine::commit(),
        date: roam_bench::machine::date(),
        seconds: started.elapsed().as_secs_f64(),
        goals,
        campaigns: outcomes,
        flood,
    };
    if let Some(out) = &out {
        if let Some(d) = out.parent() {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(out, json + "\n").map_err(|e| format!("{}: {e}", out.display()))?;
        eprintln!("wrote {}", out.display());
    }
    if let Some(md) = &markdown {
        std::fs::write(md, report::markdown(&report))
            .map_err(|e| format!("{}: {e}", md.display()))?;
        eprintln!("wrote {}", md.display());
    }
    for g in &report.goals {
        eprintln!(
            "goal {}: {} ({})",
            g.name,
            if g.met { "met" } else { "NOT met" },
            g.figure
        );
    }
    let failed: Vec<_> = report
        .campaigns
        .iter()
        .filter_map(|c| c.error.as_ref().map(|e| format!("{}: {e}", c.name)))
        .chain(
            report
                .flood
                .iter()
                .filter_map(|f| f.error.as_ref().map(|e| format!("flood: {e}"))),
        )
        .collect();
    if !failed.is_empty() {
        return Err(failed.join("\n"));
    }
    Ok(())
}

/// Six routers in a ring with two chords: r0-r1-r2-r3-r4-r5-r0, r0-r3, r2-r5. The publisher
/// is on r0, subscribers on r2 and r4: every router but theirs has a way around it.
fn ring() -> Vec<(usize, usize)> {
    vec![
        (1, 0),
        (2, 1),
        (3, 2),
        (4, 3),
        (5, 4),
        (0, 5),
        (3, 0),
        (5, 2),
    ]
}

/// r0 - r1 - r2: no way around r1.
fn chain() -> Vec<(usize, usize)> {
    vec![(1, 0), (2, 1)]
}

/// The campaigns of a suite, their schedules drawn from `seed`.
fn plan(size: Size, seed: u64) -> Vec<Campaign> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let pick = |n: usize, of: usize| match size {
        Size::Smoke => n,
        Size::Quick => of,
        Size::Full => usize::MAX,
    };
    let s = Duration::from_secs;
    // Longer than the 10 s resend window: what can be asked for again has been.
    let settle = s(12);
    let mut out = Vec::new();
    // kill -9 a random router but the publisher's every 15 s (full: 10 minutes), back after
    // 3-5 s.
    let kills = pick(2, 8).min(40);
    out.push(Campaign {
        name: "ring-kill",
        what: format!("ring of 6 with 2 chords, kill -9 of a random router every 15 s, restarted 3-5 s later ({kills} times)"),
        routers: 6,
        links: ring(),
        publisher_router: 0,
        subscribers: vec![("cloud-a", 2), ("cloud-b", 4)],
        steps: (0..kills)
            .map(|k| Step {
                at: s(5 + 15 * k as u64),
                router: rng.gen_range(1..6),
                action: Action::Kill,
                down: Duration::from_millis(rng.gen_range(3000..=5000)),
            })
            .collect(),
        settle,
        sample: Vec::new(),
    });
    let restarts = pick(2, 8).min(19);
    out.push(Campaign {
        name: "ring-restart",
        what: format!("the same ring, a random router stopped (SIGTERM) and started 1 s later, every 8 s ({restarts} times)"),
        routers: 6,
        links: ring(),
        publisher_router: 0,
        subscribers: vec![("cloud-a", 2), ("cloud-b", 4)],
        steps: (0..restarts)
            .map(|k| Step {
                at: s(5 + 8 * k as u64),
                router: rng.gen_range(1..6),
                action: Action::Restart,
                down: s(1),
            })
            .collect(),
        settle,
        sample: Vec::new(),
    });
    let chain_kills = pick(1, 3).min(5);
    out.push(Campaign {
        name: "chain-kill",
        what: format!("r0 - r1 - r2, the middle killed (kill -9) and restarted 1 s later, every 10 s ({chain_kills} times)"),
        routers: 3,
        links: chain(),
        publisher_router: 0,
        subscribers: vec![("cloud", 2)],
        steps: (0..chain_kills)
            .map(|k| Step {
                at: s(5 + 10 * k as u64),
                router: 1,
                action: Action::Kill,
                down: s(1),
            })
            .collect(),
        settle,
        sample: Vec::new(),
    });
    // Shorter than the publisher's 10 s resend window, then longer.
    let long = match size {
        Size::Smoke => s(13),
        Size::Quick => s(20),
        Size::Full => s(30),
    };
    out.push(Campaign {
        name: "partition",
        what: format!(
            "r0 - r1 - r2, the middle cut off from both (SIGSTOP) for 5 s, then for {} s",
            long.as_secs()
        ),
        routers: 3,
        links: chain(),
        publisher_router: 0,
        subscribers: vec![("cloud", 2)],
        steps: vec![
            Step {
                at: s(5),
                router: 1,
                action: Action::Partition,
                down: s(5),
            },
            Step {
                at: s(18),
                router: 1,
                action: Action::Partition,
                down: long,
            },
        ],
        settle,
        sample: Vec::new(),
    });
    if size != Size::Smoke {
        let (minutes, every) = if size == Size::Full {
            (30, 60)
        } else {
            (3, 30)
        };
        let victims = [1, 3, 5];
        out.push(Campaign {
            name: "soak",
            what: format!("the ring for {minutes} minutes, r1, r3 and r5 in turn killed (kill -9) every {every} s and restarted 3 s later; memory and descriptors of the others sampled every 5 s"),
            routers: 6,
            links: ring(),
            publisher_router: 0,
            subscribers: vec![("cloud-a", 2), ("cloud-b", 4)],
            steps: (0..minutes * 60 / every)
                .map(|k| Step {
                    at: s(every * (k + 1) - 10),
                    router: victims[k as usize % 3],
                    action: Action::Kill,
                    down: s(3),
                })
                .collect(),
            settle,
            sample: vec![0, 2, 4],
        });
    }
    out
}
