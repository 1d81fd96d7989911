//! Fast DDS peers for the tests: `roam_fastdds_node` (tests/fastdds/node.cpp), a small ROS 2-shaped
//! node on Debian's Fast DDS 2.9, built from the repository's sources once per test run into
//! `target/fastdds-nodes` (cmake, fastddsgen, make; scripts/setup.sh installs them), and started
//! as a user starts it.
//!
//! The build runs under `flock` on `target/fastdds-nodes.lock`, so test binaries running at the
//! same time build once and never see a half-linked program; cmake/make rebuild only what
//! changed (node.cpp, action.cpp, node.hpp, RoamTypes.idl, CMakeLists.txt).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::*;

/// The sources: tests/fastdds.
fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fastdds")
}

/// Cargo's target directory (`target/debug/roam` -> `target`).
fn target_dir() -> PathBuf {
    Path::new(ROAM)
        .ancestors()
        .nth(2)
        .expect("roam lives in <target>/<profile>/")
        .to_path_buf()
}

/// Builds the node (once per process; other processes wait on the lock file) and returns it.
pub fn node_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let target = target_dir();
        let build = target.join("fastdds-nodes");
        let lock = target.join("fastdds-nodes.lock");
        std::fs::create_dir_all(&build).expect("create target/fastdds-nodes");
        let script = r#"set -e
cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$2/configure.log" 2>&1 || { cat "$2/configure.log"; exit 1; }
cmake --build "$2" -j2"#;
        let out = Command::new("flock")
            .arg(&lock)
            .args(["sh", "-c", script, "sh"])
            .arg(sources())
            .arg(&build)
            // cargo points LD_LIBRARY_PATH at cyclors' build: nothing for a C++ build to see.
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .expect("run flock/cmake (util-linux and cmake: run scripts/setup.sh)");
        assert!(
            out.status.success(),
            "building the Fast DDS test nodes failed (scripts/setup.sh installs libfastrtps-dev, \
             libfastcdr-dev and fastddsgen):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let bin = build.join("roam_fastdds_node");
        assert!(bin.exists(), "{} was not built", bin.display());
        bin
    })
}

/// Starts `roam_fastdds_node MODE --domain D ARGS...` and waits for its "ready".
pub fn fastdds(name: &str, mode: &str, domain: u32, args: &[&str]) -> Proc {
    let bin = node_binary().to_string_lossy().into_owned();
    let domain = domain.to_string();
    let mut all = vec![mode, "--domain", &domain];
    all.extend_from_slice(args);
    // Without cargo's LD_LIBRARY_PATH: the node loads Debian's libfastrtps, nothing else.
    let p = Proc::spawn_system(name, &bin, &all);
    assert_eq!(
        p.line(Duration::from_secs(20)).as_deref(),
        Some("ready"),
        "Fast DDS node {name} did not start: {}",
        p.logs()
    );
    p
}

/// FNV-1a 64 as `roam_fastdds_node listen --summary` prints it.
pub fn fnv1a(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

// What the Fast DDS suites (fastdds_*.rs) share.

/// An `exports:` list of one entry in realm `test`.
pub fn export(entry: &str) -> String {
    format!("exports:\n  - {entry}\n    realm: test\n")
}

/// An `imports:` list of one entry in realm `test`.
pub fn import(entry: &str) -> String {
    format!("imports:\n  - {entry}\n    realm: test\n")
}

/// Stops processes in order with SIGTERM (so DDS participants say goodbye), then waits.
pub fn stop(procs: &mut [&mut Proc]) {
    for p in procs.iter_mut() {
        if p.terminate().is_none() {
            p.kill();
        }
    }
}

/// A file a Fast DDS talker waits for (`--start-when`) before it publishes.
pub struct Go(std::path::PathBuf);

impl Go {
    pub fn new(net: &Net, name: &str) -> Go {
        Go(net.dir.join(format!("go-{name}")))
    }

    pub fn arg(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }

    pub fn now(&self) {
        std::fs::write(&self.0, b"").unwrap();
    }
}

/// Waits until a process's stderr says `needle` (e.g. a Fast DDS node's "reader matched 1").
pub fn wait_for(p: &Proc, needle: &str, why: &dyn Fn() -> String) {
    assert!(
        p.wait_log(needle, Duration::from_secs(40)),
        "{} never logged {needle:?}: {}\n{}",
        p.name,
        p.logs(),
        why()
    );
}
