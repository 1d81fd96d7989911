//! roam's benchmark lab. `roam-bench [--quick] [--out FILE] [--only PARTS]` measures seal/open
//! cost, the routing core, loopback throughput through one and two routers, and router
//! memory; writes a JSON results file and regenerates `bench/ROUTING-PLANE.md`. Nothing is asserted
//! about speed: this is a lab, not a test.

mod core;
mod crypto;
mod edge_path;
mod memory;
mod pki;
mod report;
mod subscribe;
mod throughput;
mod timer;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use report::{Report, Results};
use roam_bench::machine;
use throughput::Scenario;
use timer::Plan;

struct Args {
    quick: bool,
    out: PathBuf,
    markdown: PathBuf,
    only: Vec<String>,
}

const USAGE: &str = "usage: roam-bench [--quick] [--out FILE.json] [--markdown FILE.md] [--only seal,core,throughput,edge,subscribe,memory]";

fn parse_args() -> Result<Option<Args>, String> {
    let bench_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        quick: false,
        out: bench_dir.join("results/routing-plane.json"),
        markdown: bench_dir.join("ROUTING-PLANE.md"),
        only: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--out" => a.out = it.next().ok_or("--out needs a file")?.into(),
            "--markdown" => a.markdown = it.next().ok_or("--markdown needs a file")?.into(),
            "--only" => {
                a.only = it
                    .next()
                    .ok_or("--only needs a list")?
                    .split(',')
                    .map(str::to_string)
                    .collect()
            }
            "--child-core-rss" => {
                let n = it
                    .next()
                    .ok_or("--child-core-rss needs a count")?
                    .parse()
                    .map_err(|e| format!("count: {e}"))?;
                memory::child_core_rss(n)?;
                return Ok(None);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(Some(a))
}

fn main() {
    if let Err(e) = run() {
        eprintln!("roam-bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let Some(args) = parse_args()? else {
        return Ok(());
    };
    let wants = |part: &str| args.only.is_empty() || args.only.iter().any(|p| p == part);
    let plan = if args.quick {
        Plan {
            batch: Duration::from_millis(20),
            batches: 9,
        }
    } else {
        Plan {
            batch: Duration::from_millis(50),
            batches: 21,
        }
    };
    let started = Instant::now();
    let mut results = Results {
        seal_open: Vec::new(),
        routing_core: None,
        throughput: Vec::new(),
        edge: Vec::new(),
        subscribe: None,
        memory: None,
    };

    if wants("seal") {
        eprintln!("[1/5] seal and open");
        results.seal_open = crypto::run(plan)?;
    }
    if wants("core") {
        eprintln!("[2/5] routing core");
        results.routing_core = Some(core::run(plan, args.quick)?);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))?;
    if wants("throughput") {
        eprintln!("[3/5] throughput through routers on loopback");
        let n = if args.quick { 20_000 } else { 200_000 };
        let paced = if args.quick { 2_000 } else { 10_000 };
        let mut scenarios = Vec::new();
        for best_effort in [false, true] {
            for routers in [1, 2] {
                scenarios.push(Scenario {
                    routers,
                    messages: n,
                    payload: 1024,
                    best_effort,
                    rate: None,
                });
            }
        }
        for routers in [1, 2] {
            scenarios.push(Scenario {
                routers,
                messages: paced,
                payload: 1024,
                best_effort: false,
                rate: Some(1000),
            });
        }
        for s in scenarios {
            let repeat = if s.rate.is_some() { 1 } else { 3 };
            let o = rt.block_on(throughput::run_repeated(s, repeat))?;
            eprintln!("  {}", throughput::describe(&o));
            results.throughput.push(o);
        }
    }
    if wants("edge") {
        eprintln!("[3b/5] per-message cost through the edge layer");
        // CPU time is read in 10 ms ticks: runs of a second or more.
        let n = if args.quick { 200_000 } else { 500_000 };
        results.edge = rt.block_on(edge_path::run(n, 64, 3))?;
        for o in &results.edge {
            eprintln!("  {}", edge_path::describe(o));
        }
    }
    if wants("subscribe") {
        eprintln!("[4/5] subscribe across three routers");
        let o = rt.block_on(subscribe::run(3, if args.quick { 10 } else { 50 }))?;
        eprintln!("  {}", subscribe::describe(&o));
        results.subscribe = Some(o);
    }
    if wants("memory") {
        eprintln!("[5/5] router memory");
        results.memory = Some(rt.block_on(memory::run(1_000_000))?);
    }
    drop(rt);

    let report = Report {
        schema: report::SCHEMA,
        machine: machine::machine(),
        date: machine::date(),
        commit: machine::commit(),
        mode: if args.quick { "quick" } else { "full" }.into(),
        batch_ms: plan.batch.as_millis() as u64,
        results,
    };
    let json =
        serde_json::to_string_pretty(&report).map_err(|e| format!("encoding results: {e}"))?;
    if let Some(dir) = args.out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    std::fs::write(&args.out, json + "\n")
        .map_err(|e| format!("writing {}: {e}", args.out.display()))?;
    std::fs::write(&args.markdown, report::markdown(&report))
        .map_err(|e| format!("writing {}: {e}", args.markdown.display()))?;
    eprintln!(
        "wrote {} and {} in {:.0} s",
        args.out.display(),
        args.markdown.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
