//! roam-msg-bench: CDR <-> JSON throughput of roam-msg for three large ROS 2 messages (a
//! 100,000-range LaserScan, a 1 MiB PointCloud2, a 640x480 rgb8 Image), next to the Python
//! pipeline a bridge runs (bench/msg_codec.py: rosbags + Python's json) on the same bytes in
//! the same run. Writes bench/results/msg-codec.json and bench/MSG-CODEC.md. MB/s are of CDR
//! bytes (input for CDR -> JSON, output for JSON -> CDR) per second of CPU time, on both sides.
//! Nothing is asserted: this is a lab.

mod messages;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use roam_bench::machine;
use roam_msg::{EncodeOptions, MessageType};
use serde_json::{json, Value};

const USAGE: &str = "usage: roam-msg-bench [--quick] [--out FILE.json] [--markdown FILE.md]\n\
  --quick      shorter timing windows (0.3 s instead of 1.5 s per figure)\n\
  --out        results file (default bench/results/msg-codec.json)\n\
  --markdown   table (default bench/MSG-CODEC.md)\n\
  --only NAME  one message only: laserscan, pointcloud2 or image";

/// CPU time this thread has used (user + system), from /proc/thread-self/stat in clock ticks
/// (USER_HZ, 100 on Linux). The machine is shared: CPU time, not wall time, is what the codec
/// costs. Falls back to wall time where /proc is missing.
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after_name.split(' ').collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Runs `f` repeatedly for at least `window` of CPU time (and 5 runs); returns MB/s of CPU
/// time for `bytes` per run.
fn rate(window: Duration, bytes: usize, mut f: impl FnMut()) -> f64 {
    f();
    let wall = Instant::now();
    let cpu0 = thread_cpu();
    let mut runs = 0u32;
    let used = loop {
        f();
        runs += 1;
        let used = match (cpu0, thread_cpu()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => wall.elapsed(),
        };
        if runs >= 5 && used >= window {
            break used;
        }
    };
    bytes as f64 * runs as f64 / used.as_secs_f64() / 1e6
}

fn main() {
    let bench_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut only: Option<String> = None;
    let (mut quick, mut out, mut markdown) = (
        false,
        bench_dir.join("results/msg-codec.json"),
        bench_dir.join("MSG-CODEC.md"),
    );
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--only" => only = Some(args.next().unwrap_or_else(|| exit_usage())),
            "--out" => {
                out = args
                    .next()
                    .map(PathBuf::from)
                    .unwrap_or_else(|| exit_usage())
            }
            "--markdown" => {
                markdown = args
                    .next()
                    .map(PathBuf::from)
                    .unwrap_or_else(|| exit_usage())
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => exit_usage(),
        }
    }
    let window = Duration::from_millis(if quick { 500 } else { 2000 });
    let tmp = std::env::temp_dir().join(format!("roam-msg-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");

    let mut rows = Vec::new();
    let mut py_args = vec![tmp.to_string_lossy().to_string()];
    for m in messages::all()
        .into_iter()
        .filter(|m| only.as_deref().is_none_or(|o| o == m.name))
    {
        let ty: MessageType = m.ty.clone();
        let mut cdr = Vec::new();
        ty.json_to_cdr(m.json.as_bytes(), &EncodeOptions::default(), &mut cdr)
            .expect("bench message encodes");
        let mut text = Vec::new();
        ty.cdr_to_json(&cdr, &mut text)
            .expect("bench message decodes");
        std::fs::write(tmp.join(format!("{}.cdr", m.name)), &cdr).expect("write cdr");
        py_args.push(format!("{}={}", m.name, ty.name().full()));

        let mut buf = Vec::with_capacity(text.len());
        let to_json = rate(window, cdr.len(), || {
            buf.clear();
            ty.cdr_to_json(&cdr, &mut buf).expect("decodes");
        });
        let mut back = Vec::with_capacity(cdr.len());
        let opts = EncodeOptions::default();
        let to_cdr = rate(window, cdr.len(), || {
            back.clear();
            ty.json_to_cdr(&text, &opts, &mut back).expect("encodes");
        });
        assert_eq!(
            back, cdr,
            "{}: JSON -> CDR must give the same bytes",
            m.name
        );
        println!(
            "{:<12} {:>9} B CDR  roam CDR->JSON {to_json:8.1} MB/s  JSON->CDR {to_cdr:8.1} MB/s",
            m.name,
            cdr.len()
        );
        rows.push(json!({
            "message": m.name, "type": ty.name().full(), "description": m.description,
            "cdr_bytes": cdr.len(), "json_bytes": text.len(),
            "roam": {"cdr_to_json_mbps": to_json, "json_to_cdr_mbps": to_cdr},
        }));
    }

    let script = bench_dir.join("msg_codec.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script)
        .arg(if quick { "0.5" } else { "2" })
        .args(&py_args);
    let python: Option<Value> = match cmd.output() {
        Ok(o) if o.status.success() => serde_json::from_slice(&o.stdout).ok(),
        Ok(o) => {
            eprintln!(
                "python pipeline failed (run scripts/setup.sh for rosbags):\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("python3 not runnable: {e}");
            None
        }
    };
    let _ = std::fs::remove_dir_all(&tmp);
    for row in &mut rows {
        let name = row["message"].as_str().unwrap_or_default().to_string();
        if let Some(p) = python.as_ref().and_then(|p| p.get(&name)) {
            let speed = |k: &str| {
                row["roam"][k].as_f64().unwrap_or(0.0) / p[k].as_f64().unwrap_or(f64::NAN)
            };
            let speedup = json!({"cdr_to_json": speed("cdr_to_json_mbps"), "json_to_cdr": speed("json_to_cdr_mbps")});
            row["python"] = p.clone();
            row["speedup"] = speedup;
            println!(
                "{name:<12} python CDR->JSON {:8.1} MB/s  JSON->CDR {:8.1} MB/s",
                p["cdr_to_json_mbps"].as_f64().unwrap_or(0.0),
                p["json_to_cdr_mbps"].as_f64().unwrap_or(0.0)
            );
        }
    }
    let results = json!({
        "machine": machine::machine(), "date": machine::date(), "commit": machine::commit(),
        "quick": quick, "messages": rows,
    });
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&results).expect("json") + "\n",
    )
    .expect("write results");
    std::fs::write(&markdown, messages::markdown(&results)).expect("write markdown");
    println!("wrote {} and {}", out.display(), markdown.display());
}

fn exit_usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}
