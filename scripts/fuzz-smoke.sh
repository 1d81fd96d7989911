#!/usr/bin/env bash
# Runs every fuzz target of fuzz/Cargo.toml briefly (FUZZ_SECONDS each, default 10) from the
# committed seeds. With a nightly toolchain (cargo-fuzz is installed from crates.io when
# missing) they run instrumented; without one, every target is still built and run over its
# seeds once on stable, so a target that no longer compiles fails here either way.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
secs=${FUZZ_SECONDS:-10}
targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^roam-fuzz$')
if ! rustup toolchain list 2>/dev/null | grep -q nightly; then
  echo "fuzz-smoke: no nightly toolchain; building every target on stable and running its seeds"
  cargo build --manifest-path fuzz/Cargo.toml --bins
  for t in $targets; do
    "fuzz/target/debug/$t" -runs=0 "fuzz/seeds/$t" 2>&1 | tail -n 1
  done
  echo "fuzz-smoke: every target built; seeds ran without a crash"
  exit 0
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
for t in $targets; do
  mkdir -p "fuzz/corpus/$t"
  cargo +nightly fuzz run "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- -max_total_time="$secs" -max_len=4096 2>&1 | tail -n 3
done
echo "fuzz-smoke: all targets ran ${secs}s without a crash"
