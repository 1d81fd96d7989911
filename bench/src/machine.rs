//! What machine and source tree the figures come from.

use std::process::Command;

use serde::Serialize;

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu: String,
    pub kernel: String,
    pub rustc: String,
    /// net.core.rmem_max: the largest UDP receive buffer a process may ask for, which decides
    /// whether bursts of large messages are dropped by the kernel (QUIC links, DDS).
    pub udp_rmem_max: Option<u64>,
}

fn cmd(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub fn machine() -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    Machine {
        nproc: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        cpu,
        kernel,
        rustc: cmd(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into()),
        udp_rmem_max: std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|s| s.trim().parse().ok()),
    }
}

/// UTC now as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn date() -> String {
    cmd("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]).unwrap_or_else(|| "unknown".into())
}

/// The commit checked out, with `-dirty` when tracked files differ from it.
pub fn commit() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let Some(head) = cmd("git", &["-C", dir, "rev-parse", "--short=12", "HEAD"]) else {
        return "unknown".into();
    };
    let dirty = cmd(
        "git",
        &["-C", dir, "status", "--porcelain", "--untracked-files=no"],
    )
    .is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{head}-dirty")
    } else {
        head
    }
}
