//! Processes the lab starts: each stopped by its PID (SIGTERM, then SIGKILL) when dropped,
//! with its stdout lines on a channel and its stderr kept for error messages, and sampled for
//! CPU time and resident memory from /proc. A roam process also names its metrics file.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

/// The CycloneDDS settings of every DDS process in the lab: loopback only, unicast discovery.
pub fn cyclonedds_uri() -> String {
    format!(
        "<CycloneDDS><Domain>{}</Domain></CycloneDDS>",
        roam_dds::loopback_config()
    )
}

pub struct Proc {
    pub name: String,
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<Stderr>>,
    /// Where a roam process keeps its metrics snapshot (what it measured at its hops).
    pub metrics_file: Option<PathBuf>,
    /// CPU ticks (utime + stime) when the current sampling window started.
    window: Option<(Instant, u64)>,
    peak_rss_kb: u64,
}

/// CPU and memory of one process over a window.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Usage {
    pub process: String,
    /// Percent of one core.
    pub cpu_percent: f64,
    /// CPU time (user + system) over the window.
    pub cpu_seconds: f64,
    pub peak_rss_mb: f64,
}

impl Proc {
    /// Starts `program` with `args`; DDS programs get the lab's loopback configuration.
    pub fn start(name: &str, program: &Path, args: &[String]) -> Result<Proc, String> {
        let mut child = Command::new(program)
            .args(args)
            .env("CYCLONEDDS_URI", cyclonedds_uri())
            .env_remove("LD_LIBRARY_PATH")
            .env(
                "RUST_LOG",
                std::env::var("ROAM_LAB_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting {name} ({}): {e}", program.display()))?;
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().ok_or("no stdout")?;
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Stderr::default()));
        let err = child.stderr.take().ok_or("no stderr")?;
        let sink = stderr.clone();
        let tag = name.to_string();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                if std::env::var_os("ROAM_LAB_VERBOSE").is_some() {
                    eprintln!("    [{tag}] {l}");
                }
                if let Ok(mut v) = sink.lock() {
                    v.keep(l);
                }
            }
        });
        Ok(Proc {
            name: name.into(),
            child,
            lines,
            stderr,
            metrics_file: None,
            window: None,
            peak_rss_kb: 0,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last lines the process wrote to stderr, for error messages.
    pub fn log_tail(&self) -> String {
        let v = self.stderr_lines();
        v[v.len().saturating_sub(8)..].join("\n")
    }

    /// What is kept of the process's stderr: its first lines and its last (where a summary
    /// printed on exit is).
    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr
            .lock()
            .map(|v| v.head.iter().chain(&v.tail).cloned().collect())
            .unwrap_or_default()
    }

    /// The next stdout line within `timeout`: `Ok(None)` when none came, `Err` once the
    /// process's output has ended.
    pub fn next_line(&self, timeout: Duration) -> Result<Option<String>, String> {
        match self.lines.recv_timeout(timeout) {
            Ok(l) => Ok(Some(l)),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(format!("{} exited:\n{}", self.name, self.log_tail()))
            }
        }
    }

    /// Sends `signal` (a name `kill -s` takes: KILL, STOP, CONT ...) to the process.
    pub fn signal(&self, signal: &str) -> Result<(), String> {
        let ok = Command::new("kill")
            .args(["-s", signal, &self.pid().to_string()])
            .status()
            .map_err(|e| format!("kill -s {signal} {}: {e}", self.name))?
            .success();
        ok.then_some(())
            .ok_or_else(|| format!("kill -s {signal} {}: refused", self.name))
    }

    /// Waits for a stdout line satisfying `want`; Err after `timeout` or when the process
    /// ended without one.
    pub fn wait_line(
        &self,
        timeout: Duration,
        want: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let end = Instant::now() + timeout;
        loop {
            let left = end.checked_duration_since(Instant::now()).ok_or_else(|| {
                format!(
                    "{}: nothing within {timeout:?}\n{}",
                    self.name,
                    self.log_tail()
                )
            })?;
            match self.lines.recv_timeout(left) {
                Ok(l) if want(&l) => return Ok(l),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(format!("{} exited:\n{}", self.name, self.log_tail()))
                }
            }
        }
    }

    /// The stdout lines written within `timeout`, and whether the output ended (the process
    /// exited) meanwhile: then returns at once.
    pub fn lines_for(&self, timeout: Duration) -> (Vec<String>, bool) {
        let end = Instant::now() + timeout;
        let mut v = Vec::new();
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(l) => v.push(l),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return (v, true),
            }
        }
        (v, false)
    }

    /// Starts a CPU/memory window now.
    pub fn begin_window(&mut self) {
        self.window = cpu_ticks(self.pid()).map(|t| (Instant::now(), t));
        self.peak_rss_kb = rss_kb(self.pid()).unwrap_or(0);
    }

    /// Samples resident memory (call periodically within a window).
    pub fn sample(&mut self) {
        if let Some(kb) = rss_kb(self.pid()) {
            self.peak_rss_kb = self.peak_rss_kb.max(kb);
        }
    }

    /// CPU use since `begin_window` and the peak memory seen.
    pub fn end_window(&mut self) -> Option<Usage> {
        let (t0, c0) = self.window.take()?;
        let c1 = cpu_ticks(self.pid())?;
        self.sample();
        let ticks_per_s = 100.0; // USER_HZ on Linux
        let secs = t0.elapsed().as_secs_f64().max(1e-3);
        let cpu_seconds = c1.saturating_sub(c0) as f64 / ticks_per_s;
        Some(Usage {
            process: self.name.clone(),
            cpu_percent: cpu_seconds / secs * 100.0,
            cpu_seconds,
            peak_rss_mb: self.peak_rss_kb as f64 / 1024.0,
        })
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for the exit.
    pub fn stop(&mut self, grace: Duration) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill").arg(self.pid().to_string()).status();
        let end = Instant::now() + grace;
        while Instant::now() < end {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to exit on its own.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

/// A process's stderr as kept: the first lines (start-up errors) and a window of the last.
#[derive(Default)]
struct Stderr {
    head: Vec<String>,
    tail: std::collections::VecDeque<String>,
}

impl Stderr {
    const HEAD: usize = 200;
    const TAIL: usize = 200;

    fn keep(&mut self, line: String) {
        if self.head.len() < Self::HEAD {
            self.head.push(line);
            return;
        }
        if self.tail.len() == Self::TAIL {
            self.tail.pop_front();
        }
        self.tail.push_back(line);
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(3));
    }
}

/// CPU time a process has used (utime + stime), in clock ticks (USER_HZ, 100 on Linux).
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    stat_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?).map(|(_, t)| t)
}

/// The name and CPU ticks of a `stat` file's text.
fn stat_ticks(s: &str) -> Option<(String, u64)> {
    // Fields after the command name, which is in parentheses and may contain spaces.
    let name = s.get(s.find('(')? + 1..s.rfind(')')?)?.to_string();
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the name and state.
    Some((
        name,
        f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?,
    ))
}

/// Each thread of a process: its id, name and CPU ticks so far (where one thread, not the
/// process, is the limit, this shows it).
pub fn thread_ticks(pid: u32) -> Vec<(u32, String, u64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let tid = e.file_name().to_str()?.parse().ok()?;
        let (name, ticks) = stat_ticks(&std::fs::read_to_string(e.path().join("stat")).ok()?)?;
        Some((tid, name, ticks))
    })
    .collect()
}

/// Resident memory of a process now (VmRSS), in KiB.
pub fn rss_kb(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .ok()
}

/// Open file descriptors of a process now.
pub fn open_fds(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

/// Runs `roam` with `args` to completion (set-up steps: `pki init`, `pki issue`, `realm new`);
/// Err with its stderr when it fails.
pub fn roam_ok(roam: &Path, args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new(roam)
        .args(args)
        .output()
        .map_err(|e| format!("roam {}: {e}", args.join(" ")))?;
    out.status.success().then_some(()).ok_or_else(|| {
        format!(
            "roam {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
