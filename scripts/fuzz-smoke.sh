#!/usr/bin/env bash
# Runs every fuzz target of fuzz/Cargo.toml briefly (FUZZ_SECONDS each, default 10) from the
# committed seeds, as `make test` does: scripts/fuzz.sh's smoke mode (see there). With a
# nightly toolchain they run instrumented; without one, every target is still built and run
# over its seeds once on stable, so a target that no longer compiles fails here either way.
set -euo pipefail
exec "$(dirname "$0")/fuzz.sh" smoke "$@"
