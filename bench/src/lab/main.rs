//! `roam-lab`: the performance lab. Runs the seeds' experiments over native DDS, roam and (when
//! built) the Zenoh ROS 2 bridge, in one run on one machine, and writes
//! `bench/results/lab.json` and `bench/RESULTS.md`. Nothing is asserted about speed.

mod ddsperf;
mod drops;
mod experiments;
mod fairness;
mod fairness_report;
mod fastdds;
mod faults;
mod floor;
mod flows;
mod hol;
mod hol_report;
mod hop_report;
mod hops;
mod many_topics;
mod many_topics_report;
mod measure;
mod report;
mod stages;
mod systems;

use std::path::PathBuf;
use std::time::Instant;

use experiments::{Plan, Suite};

const USAGE: &str = "\
usage: roam-lab [--smoke|--quick|--full] [--only e1,e2,...] [--zenoh PATH|--zenoh-off]
                [--fastdds-off] [--out FILE.json]
                [--markdown FILE.md]
       roam-lab faults [--smoke|--quick|--full] ...   (fault campaigns: roam-lab faults --help)

  --smoke        a minute: E1 and E2 with few messages, native and roam only (CI)
  --quick        every headline figure in a few minutes (default)
  --full         every point of every experiment
  --only LIST    run only these experiments (e1 rtt vs size, e2 throughput, e3 encryption,
                 e4 rate, e5 13 MB, e6 wide area, e10 ddsperf, e11 sharing a
                 bottleneck, e12 head-of-line blocking, e13 many topics); E7-E9 are computed from the others. Give --out and
                 --markdown too, or the partial report replaces the committed one
  --zenoh PATH   the roam-zenoh-bridge binary (default: $ROAM_ZENOH_BRIDGE, else the
                 cached build of bench/zenoh-bridge/build.sh if present; without it the
                 Zenoh columns are left out and the report says so)
  --zenoh-off    leave the Zenoh bridge out even when it is built
  --fastdds-off  leave out the rows with Fast DDS nodes (E1, E2); otherwise the lab builds
                 bench/fastdds into target/fastdds-loadgen (cmake, fastddsgen, Debian's
                 libfastrtps-dev) and leaves them out only when that fails
  --out FILE     results JSON [bench/results/lab.json]
  --markdown F   report [bench/RESULTS.md]; --smoke writes neither unless asked

  E1's floor runs copies of roam-lab itself as its middle and far end:
  --floor-forwarder PORT  pass datagrams between 127.0.0.1:PORT and whoever else sends
  --floor-echo            echo each whole message back
  (each prints `port N` once bound and runs until stopped)";

fn zenoh_default() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ROAM_ZENOH_BRIDGE") {
        return Some(PathBuf::from(p));
    }
    let cache = std::env::var_os("ROAM_BENCH_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/roam-bench")))?;
    let p = cache.join("zenoh-target/release/roam-zenoh-bridge");
    p.is_file().then_some(p)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("roam-lab: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let bench = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut suite = Suite::Quick;
    let mut only = Vec::new();
    let mut zenoh = zenoh_default();
    let mut fastdds = true;
    let mut out = None;
    let mut markdown = None;
    let mut it = std::env::args().skip(1).peekable();
    if it.peek().map(String::as_str) == Some("faults") {
        it.next();
        return faults::main(it);
    }
    while let Some(a) = it.next() {
        match a.as_str() {
            "--smoke" => suite = Suite::Smoke,
            "--quick" => suite = Suite::Quick,
            "--full" => suite = Suite::Full,
            "--only" => {
                only = it
                    .next()
                    .ok_or("--only needs a list")?
                    .split(',')
                    .map(str::to_string)
                    .collect()
            }
            "--zenoh" => zenoh = Some(it.next().ok_or("--zenoh needs a path")?.into()),
            "--zenoh-off" => zenoh = None,
            "--fastdds-off" => fastdds = false,
            "--floor-forwarder" => {
                return floor::forwarder(&it.next().ok_or("--floor-forwarder needs a port")?)
            }
            "--floor-echo" => return floor::echo(),
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
    if suite != Suite::Smoke {
        out.get_or_insert(bench.join("results/lab.json"));
        markdown.get_or_insert(bench.join("RESULTS.md"));
    }
    if let Some(z) = &zenoh {
        if !z.is_file() {
            return Err(format!("--zenoh {}: no such program", z.display()));
        }
    }
    let started = Instant::now();
    let lab = systems::Lab::prepare(zenoh, fastdds)?;
    eprintln!(
        "roam-lab {suite:?}: Zenoh bridge {}",
        lab.zenoh
            .as_ref()
            .map_or("not built: its columns are left out".to_string(), |p| p
                .display()
                .to_string())
    );
    match &lab.fastdds {
        Ok(p) => eprintln!("roam-lab: Fast DDS load generator {}", p.display()),
        Err(e) => eprintln!("roam-lab: no Fast DDS rows: {e}"),
    }
    let mut plan = Plan {
        lab: &lab,
        suite,
        only,
        out: Vec::new(),
        ddsperf: Vec::new(),
        fairness: Vec::new(),
        hol: Vec::new(),
        many_topics: Vec::new(),
        floor: Vec::new(),
    };
    plan.run_all();
    let mut report = report::Report::new(
        suite,
        &lab,
        std::mem::take(&mut plan.out),
        started.elapsed(),
    );
    report.ddsperf = std::mem::take(&mut plan.ddsperf);
    report.fairness = std::mem::take(&mut plan.fairness);
    report.hol = std::mem::take(&mut plan.hol);
    report.many_topics = std::mem::take(&mut plan.many_topics);
    report.floor = std::mem::take(&mut plan.floor);
    report.routing_plane = std::fs::read(bench.join("results/routing-plane.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let failed = report
        .measurements
        .iter()
        .filter(|m| m.error.is_some())
        .count()
        + report.ddsperf.iter().filter(|r| r.error.is_some()).count()
        + report.fairness.iter().filter(|r| r.error.is_some()).count()
        + report.hol.iter().filter(|r| r.error.is_some()).count()
        + report
            .many_topics
            .iter()
            .filter(|r| r.error.is_some())
            .count()
        + report.floor.iter().filter(|r| r.error.is_some()).count();
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
    println!("{}", report::summary(&report));
    eprintln!(
        "{} runs, {failed} failed, {:.0} s",
        report.measurements.len(),
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        return Err(format!("{failed} runs failed"));
    }
    Ok(())
}
