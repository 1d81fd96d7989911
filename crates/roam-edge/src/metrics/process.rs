//! The process's own figures: pid, times, CPU time and resident memory.

use roam_net::latency::now_us;

use super::{Process, ProcessKind};

/// What stays the same for the life of a process.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub id: String,
    pub kind: ProcessKind,
    pub start_time_us: u64,
}

impl Identity {
    /// Taken when the process starts its work (the start time is now).
    pub fn new(id: &str, kind: ProcessKind) -> Self {
        Identity {
            id: id.to_string(),
            kind,
            start_time_us: now_us(),
        }
    }

    /// The process as it is now.
    pub fn sample(&self) -> Process {
        Process {
            id: self.id.clone(),
            kind: self.kind,
            roam_version: env!("CARGO_PKG_VERSION").to_string(),
            pid: std::process::id(),
            start_time_us: self.start_time_us,
            snapshot_time_us: now_us(),
            cpu_time_us: cpu_time_us(),
            rss_bytes: rss_bytes(),
            udp_receive_drops: roam_net::quic::udp_receive_drops(),
        }
    }
}

/// User and system CPU time of the whole process (all threads), from getrusage(2).
#[cfg(unix)]
fn cpu_time_us() -> Option<u64> {
    use nix::sys::resource::{getrusage, UsageWho};
    let u = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let us = |t: nix::sys::time::TimeVal| -> Option<u64> {
        Some(u64::try_from(t.tv_sec()).ok()? * 1_000_000 + u64::try_from(t.tv_usec()).ok()?)
    };
    Some(us(u.user_time())? + us(u.system_time())?)
}

#[cfg(not(unix))]
fn cpu_time_us() -> Option<u64> {
    None
}

/// Resident memory now (Linux: `VmRSS` in /proc/self/status; absent elsewhere).
fn rss_bytes() -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    vm_rss_bytes(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// The `VmRSS:   1234 kB` line of a /proc/PID/status text, in bytes.
pub(crate) fn vm_rss_bytes(status: &str) -> Option<u64> {
    let v = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kb: u64 = v.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kb.checked_mul(1024)
}
