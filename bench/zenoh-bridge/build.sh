#!/usr/bin/env bash
# Builds roam-zenoh-bridge (release) into a cache outside the clone and prints the binary's
# absolute path as the last line on stdout. Skips the build when the binary is newer than
# the sources, Cargo.toml and Cargo.lock. Not part of CI: a clean build takes ~10 minutes.
#
#   ROAM_BENCH_CACHE   cache root (default: $HOME/.cache/roam-bench); the target directory
#                      is $ROAM_BENCH_CACHE/zenoh-target
#   FORCE=1            rebuild even when the binary looks up to date
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${ROAM_BENCH_CACHE:-$HOME/.cache/roam-bench}"
export CARGO_TARGET_DIR="$cache/zenoh-target"
bin="$CARGO_TARGET_DIR/release/roam-zenoh-bridge"

up_to_date() {
    [[ -x "$bin" ]] || return 1
    [[ "${FORCE:-0}" == 1 ]] && return 1
    local newer
    newer="$(find "$here/src" "$here/Cargo.toml" "$here/Cargo.lock" "$here/build.sh" -newer "$bin" -print -quit)"
    [[ -z "$newer" ]]
}

if up_to_date; then
    echo "roam-zenoh-bridge is up to date" >&2
else
    mkdir -p "$CARGO_TARGET_DIR"
    echo "building roam-zenoh-bridge into $CARGO_TARGET_DIR (a clean build takes ~10 min)" >&2
    # --locked: the committed Cargo.lock is the version record; stdout stays clean for the path.
    cargo build --release --locked --manifest-path "$here/Cargo.toml" 1>&2
    # cargo leaves the binary's mtime alone when nothing changed: touch it so the skip test holds.
    touch "$bin"
fi
echo "$bin"
