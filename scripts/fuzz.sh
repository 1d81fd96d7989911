#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/Cargo.toml (all of them, or those named after the mode), each
# for FUZZ_SECONDS from its committed seeds (fuzz/seeds/<target>) and what earlier runs found
# (fuzz/corpus/<target>, not committed), instrumented with a nightly toolchain and cargo-fuzz
# (installed from crates.io when missing). A crash stops that target, the others still run,
# and the script fails at the end naming them; libFuzzer leaves the input in
# fuzz/artifacts/<target>/.
#
#   scripts/fuzz.sh smoke [TARGET...]  # `make test`: 10 s each (scripts/fuzz-smoke.sh)
#   scripts/fuzz.sh long [TARGET...]   # `make fuzz`: 120 s each
#
# Without nightly, smoke still builds every target on stable and runs it over its seeds once,
# so a target that no longer compiles or a seed that crashes fails `make test` either way;
# long cannot fuzz without the instrumentation and fails, saying how to get it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

mode=${1:-smoke}
shift || true
case "$mode" in
  smoke) secs=${FUZZ_SECONDS:-10} ;;
  long) secs=${FUZZ_SECONDS:-120} ;;
  *) echo "usage: scripts/fuzz.sh smoke|long [TARGET...]" >&2; exit 2 ;;
esac
all=$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^roam-fuzz$')
targets=${*:-$all}
for t in $targets; do
  grep -qx "$t" <<<"$all" || { echo "fuzz: no target $t (targets: $(echo $all))" >&2; exit 2; }
done

if ! rustup toolchain list 2>/dev/null | grep -q nightly; then
  if [ "$mode" = long ]; then
    echo "fuzz: no nightly toolchain: cargo-fuzz needs one for libFuzzer's instrumentation." >&2
    echo "fuzz: install it with 'rustup toolchain install nightly', then run 'make fuzz' again" >&2
    echo "fuzz: ('make fuzz-smoke' builds every target on stable and runs its seeds)." >&2
    exit 1
  fi
  echo "fuzz-smoke: no nightly toolchain; building every target on stable and running its seeds"
  cargo build --manifest-path fuzz/Cargo.toml --bins
  for t in $targets; do
    "fuzz/target/debug/$t" -runs=0 "fuzz/seeds/$t" 2>&1 | tail -n 1
  done
  echo "fuzz-smoke: every target built; seeds ran without a crash"
  exit 0
fi

command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()
for t in $targets; do
  mkdir -p "fuzz/corpus/$t"
  echo "fuzz: $t, ${secs}s"
  if cargo +nightly fuzz run "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$secs" -max_len=4096 -timeout=30 -print_final_stats=1 >"$log" 2>&1; then
    # libFuzzer's final figures: runs, executions per second, inputs it added to the corpus.
    grep -E '^(Done|stat::(average_exec_per_sec|new_units_added|peak_rss_mb))' "$log" || true
  else
    # The build's error, or the crash: its report, the panic and where the input was written.
    tail -n 40 "$log"
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashed or failed to build: ${failed[*]}; a crash's input is in" \
    "fuzz/artifacts/TARGET/ (replay: cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-...)" >&2
  exit 1
fi
echo "fuzz: all targets ran ${secs}s without a crash"
