//! Router resident memory: a real `roam router` process idle and holding 1,000,000 names
//! published by a client, and the routing core alone in a child process.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use roam_net::client::{Client, ClientConfig};
use roam_net::link::LinkConfig;
use roam_net::runtime::PeerAddr;
use roam_proto::frame::Role;
use serde::Serialize;

use crate::pki::TempPki;

#[derive(Debug, Clone, Serialize)]
pub struct ProcessMemory {
    /// The program measured, e.g. `target/release/roam router`.
    pub program: String,
    pub idle_rss_kib: u64,
    pub names: u64,
    /// Once the router reports holding every name (its status log), after a settling pause.
    pub loaded_rss_kib: u64,
    pub loaded_peak_kib: u64,
    pub bytes_per_name: f64,
    /// From the first `Client::publish` to the router's status line counting every name.
    pub load_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CoreMemory {
    pub names: u64,
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
    pub bytes_per_name: f64,
    /// `Router::rib_memory_estimate() / names`, for comparison.
    pub estimate_bytes_per_name: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    pub router_process: ProcessMemory,
    pub routing_core: CoreMemory,
}

/// `VmRSS` or `VmHWM` of a process, in KiB.
pub fn status_kib(pid: u32, field: &str) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix(field).and_then(|r| {
                r.trim_start_matches(':')
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
        })
        .ok_or_else(|| format!("no {field} in {path}"))
}

/// The `roam` binary beside this one, built first if missing.
fn roam_binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("ROAM_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| format!("locating the bench binary: {e}"))?;
    let dir = exe.parent().ok_or("bench binary has no directory")?;
    let roam = dir.join("roam");
    if !roam.exists() {
        eprintln!("  building the roam binary (cargo build --release -p roam)...");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        // Into the same target directory as this binary (`<target>/release/roam`).
        let target = dir
            .parent()
            .ok_or("bench binary is not in a target directory")?;
        let st = Command::new(cargo)
            .args(["build", "--release", "-p", "roam"])
            .env("CARGO_TARGET_DIR", target)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .status()
            .map_err(|e| format!("running cargo: {e}"))?;
        if !st.success() || !roam.exists() {
            return Err(format!(
                "cargo build --release -p roam failed; set ROAM_BIN to a roam binary ({} missing)",
                roam.display()
            ));
        }
    }
    Ok(roam)
}

/// A child process, killed by its PID when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn router_process(names: u64) -> Result<ProcessMemory, String> {
    let roam = roam_binary()?;
    let pki = TempPki::new("mem")?;
    pki.identity("rmem", Role::Router)?;
    let child = Command::new(&roam)
        .args([
            "router",
            "--id",
            "rmem",
            "--listen",
            "127.0.0.1:0",
            "--status-interval",
            "1",
            // One client holds the million names here: the limit a client link has by
            // default (20,000) is what this measures past.
            "--client-max-names",
            "0",
            "--pki",
        ])
        .arg(pki.dir())
        .env("RUST_LOG", "info,quinn=warn,rustls=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", roam.display()))?;
    let mut proc = Proc(child);
    let pid = proc.0.id();
    let stdout = proc.0.stdout.take().ok_or("no stdout")?;
    let stderr = proc.0.stderr.take().ok_or("no stderr")?;
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(a) = line.strip_prefix("listening quic ") {
                let _ = addr_tx.send(a.trim().to_string());
            }
        }
    });
    // The largest `names=` the router's status log has shown.
    let seen = Arc::new(AtomicU64::new(0));
    let seen_w = seen.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(v) = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("names=")?.parse::<u64>().ok())
            {
                seen_w.fetch_max(v, Ordering::Relaxed);
            }
        }
    });
    let addr: SocketAddr = addr_rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|_| "roam router printed no \"listening quic\" line within 10 s".to_string())?
        .parse()
        .map_err(|e| format!("bad listen address: {e}"))?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = status_kib(pid, "VmRSS")?;

    let client = Client::start(ClientConfig {
        identity: pki.identity("cmem", Role::Client)?,
        router: PeerAddr::Quic(addr),
        link: LinkConfig::default(),
        max_backoff: Duration::from_millis(500),
    })
    .map_err(|e| format!("starting the client: {e}"))?;
    let t = Instant::now();
    for i in 0..names {
        client.publish(crate::core::name(i as u32)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    while seen.load(Ordering::Relaxed) < names {
        if Instant::now() > deadline {
            return Err(format!(
                "router holds {} of {names} names after 300 s",
                seen.load(Ordering::Relaxed)
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let load_seconds = t.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let loaded = status_kib(pid, "VmRSS")?;
    let peak = status_kib(pid, "VmHWM")?;
    drop(client);
    drop(proc);
    Ok(ProcessMemory {
        program: format!(
            "{} router",
            roam.file_name()
                .map_or("roam".into(), |f| f.to_string_lossy())
        ),
        idle_rss_kib: idle,
        names,
        loaded_rss_kib: loaded,
        loaded_peak_kib: peak,
        bytes_per_name: (loaded.saturating_sub(idle) * 1024) as f64 / names as f64,
        load_seconds,
    })
}

/// Runs in a child process (`roam-bench --child-core-rss N`): prints `before after estimate`.
pub fn child_core_rss(names: u32) -> Result<(), String> {
    let pid = std::process::id();
    let now = Instant::now();
    let mut r = crate::core::bench_router(now);
    let before = status_kib(pid, "VmRSS")?;
    // Generated frame by frame so only the RIB stays resident.
    let mut i = 0;
    while i < names {
        let to = (i + 1024).min(names);
        for f in crate::core::advert_frames(i, to) {
            r.handle_frame(now, crate::core::ROUTER_LINK, f);
        }
        while r.poll_transmit().is_some() {}
        i = to;
    }
    let after = status_kib(pid, "VmRSS")?;
    println!(
        "{before} {after} {} {}",
        r.rib_memory_estimate(),
        r.names_len()
    );
    Ok(())
}

fn core_process(names: u32) -> Result<CoreMemory, String> {
    let exe = std::env::current_exe().map_err(|e| format!("locating the bench binary: {e}"))?;
    let out = Command::new(exe)
        .args(["--child-core-rss", &names.to_string()])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running the routing-core child: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<u64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    if !out.status.success() || v.len() != 4 {
        return Err(format!(
            "routing-core child failed: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if v[3] != names as u64 {
        return Err(format!(
            "routing-core child holds {} of {names} names",
            v[3]
        ));
    }
    Ok(CoreMemory {
        names: names as u64,
        rss_before_kib: v[0],
        rss_after_kib: v[1],
        bytes_per_name: (v[1].saturating_sub(v[0]) * 1024) as f64 / names as f64,
        estimate_bytes_per_name: v[2] as f64 / names as f64,
    })
}

pub async fn run(names: u64) -> Result<Memory, String> {
    let routing_core = core_process(names as u32)?;
    eprintln!(
        "  routing core: {} names, RSS {} -> {} KiB ({:.0} B/name, estimate {:.0})",
        routing_core.names,
        routing_core.rss_before_kib,
        routing_core.rss_after_kib,
        routing_core.bytes_per_name,
        routing_core.estimate_bytes_per_name
    );
    let router_process = router_process(names).await?;
    eprintln!(
        "  roam router: idle {} KiB, {} names {} KiB (peak {}), {:.0} B/name, loaded in {:.1} s",
        router_process.idle_rss_kib,
        router_process.names,
        router_process.loaded_rss_kib,
        router_process.loaded_peak_kib,
        router_process.bytes_per_name,
        router_process.load_seconds
    );
    Ok(Memory {
        router_process,
        routing_core,
    })
}
