#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZ_SECONDS each, default 10) from the committed seeds.
# Needs a nightly toolchain; installs cargo-fuzz from crates.io when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
secs=${FUZZ_SECONDS:-10}
if ! rustup toolchain list 2>/dev/null | grep -q nightly; then
  echo "fuzz-smoke: no nightly toolchain; skipping the fuzzers (property tests cover the codecs)"
  exit 0
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
for t in frame envelope meta directory msg_parse msg_cdr msg_json service_wire rules_parse; do
  mkdir -p "fuzz/corpus/$t"
  cargo +nightly fuzz run "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- -max_total_time="$secs" -max_len=4096 2>&1 | tail -n 3
done
echo "fuzz-smoke: all targets ran ${secs}s without a crash"
