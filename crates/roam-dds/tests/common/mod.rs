//! Helpers shared by the roam-dds integration tests: Python peers as child processes, waiting.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use roam_dds::loopback_config;

/// Fails (never skips) when Python `cyclonedds` is missing.
pub fn require_python_cyclonedds() {
    let ok = Command::new("python3")
        .args(["-c", "import cyclonedds.domain"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "these tests need python3 with the `cyclonedds` package (PyPI, 11.0.1) as a real DDS \
         peer; run scripts/setup.sh to install it"
    );
}

/// A Python test peer; killed (by PID) when dropped.
pub struct PyPeer {
    child: Child,
    lines: Receiver<String>,
}

impl PyPeer {
    /// Starts `tests/py/<script>` with `args`, on the loopback DDS config, and waits for it to
    /// print "ready".
    pub fn start(script: &str, args: &[&str]) -> PyPeer {
        require_python_cyclonedds();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py");
        let mut child = Command::new("python3")
            .arg("-u")
            .arg(dir.join(script))
            .args(args)
            .env(
                "CYCLONEDDS_URI",
                format!(
                    "<CycloneDDS><Domain>{}</Domain></CycloneDDS>",
                    loopback_config()
                ),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start python3");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut peer = PyPeer { child, lines };
        peer.expect_line(|l| l == "ready", Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{script} did not become ready"));
        peer
    }

    /// Waits up to `timeout` for a line matching `pred`; returns it.
    pub fn expect_line(
        &mut self,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.lines.recv_timeout(left) {
                Ok(l) if pred(&l) => return Some(l),
                Ok(_) => {}
                Err(_) => {
                    if let Ok(Some(status)) = self.child.try_wait() {
                        panic!("python peer exited early: {status}");
                    }
                    return None;
                }
            }
        }
    }

    /// Any lines received so far.
    pub fn try_line(&mut self) -> Option<String> {
        self.lines.try_recv().ok()
    }
}

impl Drop for PyPeer {
    fn drop(&mut self) {
        // SIGTERM first (the scripts exit cleanly on it), then make sure.
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` every 10 ms until it returns Some, or panics after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// CDR (XCDR1, little endian) of a std_msgs/String: header, u32 length with NUL, bytes, NUL.
pub fn cdr_string(s: &str) -> Vec<u8> {
    let mut v = vec![0x00, 0x01, 0x00, 0x00];
    v.extend_from_slice(&(s.len() as u32 + 1).to_le_bytes());
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

/// Decodes what `cdr_string` encodes; None when malformed.
pub fn decode_cdr_string(cdr: &[u8]) -> Option<String> {
    if cdr.get(..4)? != [0x00, 0x01, 0x00, 0x00] {
        return None;
    }
    let len = u32::from_le_bytes(cdr.get(4..8)?.try_into().ok()?) as usize;
    let body = cdr.get(8..8 + len)?;
    let (nul, text) = body.split_last()?;
    if *nul != 0 {
        return None;
    }
    String::from_utf8(text.to_vec()).ok()
}
