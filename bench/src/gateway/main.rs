//! roam-gateway-bench: the rosbridge v2 door of `roam gateway` under load, with real processes
//! (a router and a gateway from target/release) and real WebSocket clients: 640x480 images at
//! 15 and 30 Hz to a JSON, a CBOR and a cbor-raw client at once; 1 KB messages at a high rate
//! to 1 and to 30 clients; a client that stops reading. Writes bench/results/gateway.json and
//! bench/GATEWAY.md. Nothing is asserted: this is a lab.

mod clients;
mod door;
mod messages;
mod report;
mod scenarios;
mod setup;
mod stats;

use std::path::PathBuf;
use std::time::Duration;

use door::Door;
use messages::Kind;
use roam_bench::machine;
use scenarios::Stream;

const USAGE: &str = "usage: roam-gateway-bench [--quick] [--only LIST] [--kb-rate N] [--out FILE.json] [--markdown FILE.md]\n\
  --quick       5 s per image rate and 1 KB run, 10 s for the stalled client (default: 10 and 20)\n\
  --only LIST   images, kb, stalled (comma-separated; default all)\n\
  --kb-rate N   1 KB messages a second to 1 and 30 clients [5000]; a third run is unpaced\n\
  --stalled-seconds N  how long the client that stops reading stays (default: 20, quick 10)\n\
  --out         results file (default bench/results/gateway.json)\n\
  --markdown    report (default bench/GATEWAY.md)";

fn main() {
    let bench_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (mut quick, mut kb_rate, mut stalled_s) = (false, 5000.0, None);
    let mut only: Vec<String> = ["images", "kb", "stalled"].map(String::from).to_vec();
    let mut out = bench_dir.join("results/gateway.json");
    let mut markdown = bench_dir.join("GATEWAY.md");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| exit_usage());
        match a.as_str() {
            "--quick" => quick = true,
            "--only" => only = value().split(',').map(String::from).collect(),
            "--kb-rate" => kb_rate = value().parse().unwrap_or_else(|_| exit_usage()),
            "--stalled-seconds" => {
                stalled_s = Some(value().parse().unwrap_or_else(|_| exit_usage()))
            }
            "--out" => out = PathBuf::from(value()),
            "--markdown" => markdown = PathBuf::from(value()),
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => exit_usage(),
        }
    }
    let window = Duration::from_secs(if quick { 5 } else { 10 });
    let mut setup = match setup::Setup::new() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("roam-gateway-bench: {e}");
            std::process::exit(1);
        }
    };
    let mut results = report::Results {
        machine: machine::machine(),
        date: machine::date(),
        commit: machine::commit(),
        quick,
        images: Vec::new(),
        kb: Vec::new(),
        stalled: None,
        errors: Vec::new(),
    };
    let wants = |s: &str| only.iter().any(|o| o == s);
    if wants("images") {
        for rate in [15.0, 30.0] {
            let s = Stream {
                name: format!("images at {rate} Hz"),
                kind: Kind::Image,
                rate_hz: rate,
                window,
                doors: Door::ALL.to_vec(),
            };
            match scenarios::stream(&mut setup, &s) {
                Ok(run) => results.images.push(run),
                Err(e) => results.errors.push(format!("{}: {e}", s.name)),
            }
        }
    }
    if wants("kb") {
        // At a fixed rate to 1 and to 30 clients, then unpaced to 1: the most it takes.
        let (json, fox) = (Door::RosbridgeJson, Door::Foxglove);
        for (rate, n, door) in [
            (kb_rate, 1, json),
            (kb_rate, 30, json),
            (0.0, 1, json),
            (kb_rate, 1, fox),
            (kb_rate, 30, fox),
        ] {
            let pace = if rate > 0.0 {
                format!("{rate}/s")
            } else {
                "unpaced".into()
            };
            let s = Stream {
                name: format!(
                    "1 KB {pace} to {n} {} client{}",
                    door.label(),
                    if n > 1 { "s" } else { "" }
                ),
                kind: Kind::Text,
                rate_hz: rate,
                window,
                doors: vec![door; n],
            };
            match scenarios::stream(&mut setup, &s) {
                Ok(run) => results.kb.push(run),
                Err(e) => results.errors.push(format!("{}: {e}", s.name)),
            }
        }
    }
    if wants("stalled") {
        let w = stalled_s.map_or(window * 2, Duration::from_secs);
        match scenarios::stalled(&mut setup, 30.0, w) {
            Ok(run) => results.stalled = Some(run),
            Err(e) => results.errors.push(format!("stalled client: {e}")),
        }
    }
    drop(setup);

    let md = report::markdown(&results);
    print!("{md}");
    let json = serde_json::to_string_pretty(&results).expect("results serialize");
    if let Some(d) = out.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    std::fs::write(&out, json + "\n").expect("writing the results");
    std::fs::write(&markdown, md).expect("writing the report");
    eprintln!("wrote {} and {}", out.display(), markdown.display());
    if !results.errors.is_empty() {
        eprintln!("{} scenarios failed", results.errors.len());
        std::process::exit(1);
    }
}

fn exit_usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}
