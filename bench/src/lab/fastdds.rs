//! Fast DDS nodes for the lab: `roam-loadgen-fastdds` (bench/fastdds/loadgen.cpp), the same
//! load generator as `roam-loadgen` on Debian's Fast DDS 2.9, built by the lab on first use.
//!
//! cmake configures bench/fastdds into `target/fastdds-loadgen` (fastddsgen generates the
//! message types from LoadgenTypes.idl) and make builds it; every later start runs
//! `cmake --build` again, which rebuilds only what changed (loadgen.cpp, the IDL,
//! CMakeLists.txt) and otherwise takes a fraction of a second. The build holds a `flock` on
//! `target/fastdds-loadgen.lock`, so two labs starting together build once. Without Fast DDS
//! (scripts/setup.sh installs libfastrtps-dev, libfastcdr-dev and fastddsgen) the build fails
//! with cmake's own words, and the lab runs without its Fast DDS rows.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The sources: bench/fastdds.
fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fastdds")
}

/// Builds (or brings up to date) the Fast DDS load generator next to cargo's output:
/// `<target>/fastdds-loadgen/roam-loadgen-fastdds`, `<target>` being the directory above the
/// one that holds this program (`target/release/roam-lab`).
pub fn build() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let target = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("roam-lab is not in <target>/<profile>/")?;
    let build = target.join("fastdds-loadgen");
    std::fs::create_dir_all(&build).map_err(|e| format!("{}: {e}", build.display()))?;
    let lock = target.join("fastdds-loadgen.lock");
    let script = r#"set -e
command -v cmake >/dev/null || { echo "cmake is not installed"; exit 1; }
command -v fastddsgen >/dev/null || { echo "fastddsgen is not installed"; exit 1; }
if [ ! -f "$2/Makefile" ]; then
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release >"$2/configure.log" 2>&1 || { tail -n 20 "$2/configure.log"; exit 1; }
fi
cmake --build "$2" -j2 >"$2/build.log" 2>&1 || { grep -m 20 -E 'error|Error' "$2/build.log"; exit 1; }"#;
    let out = Command::new("flock")
        .arg(&lock)
        .args(["sh", "-c", script, "sh"])
        .arg(sources())
        .arg(&build)
        // cargo may point LD_LIBRARY_PATH at cyclors' build: nothing for a C++ build to see.
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .map_err(|e| format!("running flock/sh to build it: {e}"))?;
    if !out.status.success() {
        // What the build said (cmake's last lines, the compiler's errors), on one line.
        let mut said = String::from_utf8_lossy(&out.stdout).to_string();
        if said.trim().is_empty() {
            said = String::from_utf8_lossy(&out.stderr).to_string();
        }
        let said: Vec<&str> = said
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        return Err(format!(
            "{}: building {} into {} failed (scripts/setup.sh installs libfastrtps-dev, \
             libfastcdr-dev and fastddsgen)",
            said.join("; "),
            sources().display(),
            build.display(),
        ));
    }
    let bin = build.join("roam-loadgen-fastdds");
    bin.is_file()
        .then_some(bin.clone())
        .ok_or_else(|| format!("{} was not built", bin.display()))
}
