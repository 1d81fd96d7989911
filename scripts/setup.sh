#!/usr/bin/env bash
# Installs what building and testing roam needs on Debian 12. Idempotent; run as root or
# with sudo available. Safe to run on every `make` invocation: it skips what is present.
set -euo pipefail

need_apt=()
# cmake + libclang-dev: the cyclors crate builds CycloneDDS from source and runs bindgen.
# iproute2: network-namespace tests; python3-pip: the Python DDS peers below;
# cyclonedds-tools: ddsperf, an independent DDS load generator the proxy tests use.
# prometheus: the real Prometheus server that tests/network/metrics_prometheus.rs scrapes roam with.
# chromium: the headless browser of tests/gateway/browser.rs (roslibjs over wss://); nodejs and
# npm: the JavaScript clients of the gateway tests (Debian's, unless a Node.js with npm is there).
# tmux: tests/network/top_tmux.rs reads `roam top`'s live screen with capture-pane.
for pkg in build-essential pkg-config openssl ca-certificates cmake libclang-dev iproute2 curl python3 python3-pip cyclonedds-tools prometheus chromium tmux; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

# Fast DDS 2.9 (the default DDS of ROS 2): the tests build small ROS 2-shaped C++ nodes
# (crates/roam/tests/fastdds) with Debian's library, its type generator fastddsgen (a Java
# program: its dependencies pull in a JRE; one is added when none is there) and fastdds-tools.
need_fastdds=()
for pkg in libfastrtps-dev libfastcdr-dev fastddsgen fastdds-tools; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_fastdds+=("$pkg")
done
command -v java >/dev/null 2>&1 || need_fastdds+=(default-jre-headless)
if [ ${#need_fastdds[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_fastdds[@]}"
fi

# Rust: roam needs 1.88 or newer (the workspace's rust-version; Debian 12's own rustc is 1.63,
# too old for quinn/rustls, and the ros2-client/RustDDS node of the tests needs 1.88).
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: no Rust toolchain found. Install Rust 1.88+ with rustup (https://rustup.rs), then re-run." >&2
  exit 1
fi
ver=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n1.88.0\n' "$ver" | sort -V | head -n1)" != "1.88.0" ]; then
  echo "setup: rustc $ver is older than 1.88; run 'rustup update stable'." >&2
  exit 1
fi
# `make test` also holds the code to rustfmt and clippy (rustup's default profile has them;
# a minimal one does not).
if command -v rustup >/dev/null 2>&1; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

# Python cyclonedds (same CycloneDDS 11 as cyclors, C library bundled in the wheel): the tests use
# it as a real ROS 2 peer (on the wire, a node on rmw_cyclonedds).
if ! python3 -c 'import cyclonedds' >/dev/null 2>&1; then
  pip_install() { python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@"; }
  # Debian 12's own python3 is "externally managed": allow the install there explicitly.
  pip_install cyclonedds==11.0.1 2>/dev/null || pip_install --break-system-packages cyclonedds==11.0.1
fi

# rosbags: the independent CDR oracle of roam-msg's tests (ROS 2 typestores, serializer, IDL
# parser) and the Python side of the message-codec benchmark. Pinned: the oracle relies on its
# typestores' contents.
if ! python3 -c 'import rosbags.typesys' >/dev/null 2>&1; then
  pip_install() { python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@"; }
  pip_install rosbags==0.11.9 2>/dev/null || pip_install --break-system-packages rosbags==0.11.9
fi

# roslibpy: a real rosbridge v2 client (Python programs talk to `roam gateway` through it in
# the gateway tests). Pinned: the tests drive its 2.x API.
if ! python3 -c 'import roslibpy' >/dev/null 2>&1; then
  pip_install() { python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@"; }
  pip_install roslibpy==2.1.0 2>/dev/null || pip_install --break-system-packages roslibpy==2.1.0
fi

# websockets: the Python client of the gateway's TLS tests (wss://, client certificates).
if ! python3 -c 'import websockets' >/dev/null 2>&1; then
  pip_install() { python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@"; }
  pip_install websockets==15.0.1 2>/dev/null || pip_install --break-system-packages websockets==15.0.1
fi

# The JavaScript clients of the gateway tests (crates/roam/tests/js/*: roslibjs in Chromium,
# @foxglove/ws-protocol, ...), each from its committed package-lock.json. Reinstalled when the
# lock file changes.
for lock in "$(dirname "$0")"/../crates/roam/tests/js/*/package-lock.json; do
  [ -f "$lock" ] || continue
  dir=$(dirname "$lock")
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$lock" -nt "$dir/node_modules/.package-lock.json" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done

# mcap + mcap-ros2-support: an independent reader of the MCAP files `roam record` writes
# (tests/proxy/record_mcap.rs; rosbags, above, is the other).
if ! python3 -c 'import mcap_ros2' >/dev/null 2>&1; then
  pip_install() { python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@"; }
  pip_install mcap==1.3.0 mcap-ros2-support==0.5.5 2>/dev/null || pip_install --break-system-packages mcap==1.3.0 mcap-ros2-support==0.5.5
fi

# grpcio + grpcio-tools: a real gRPC client (its own C-core HTTP/2 stack, not tonic) for the
# gateway's gRPC door; the tests generate its stubs from proto/roam/gateway/v1/gateway.proto at
# test time with grpcio-tools. Pinned with the protobuf runtime the generated code checks.
# (roam's own build needs no protoc: protox compiles the .proto in pure Rust.)
if ! python3 -c 'import grpc, grpc_tools; assert grpc.__version__ == "1.85.1"' >/dev/null 2>&1; then
  pip_install() { python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@"; }
  pip_install grpcio==1.85.1 grpcio-tools==1.85.1 protobuf==7.36.2 2>/dev/null \
    || pip_install --break-system-packages grpcio==1.85.1 grpcio-tools==1.85.1 protobuf==7.36.2
fi

# Mosquitto (the MQTT broker of the MQTT bridge's tests, with TLS and a password file) and its
# command-line clients; paho-mqtt: the non-ROS MQTT client that judges the bridge's wire format.
need_mqtt=()
for pkg in mosquitto mosquitto-clients; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_mqtt+=("$pkg")
done
if [ ${#need_mqtt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_mqtt[@]}"
  # The package starts a system broker on 1883; the tests start their own on other ports.
fi
if ! python3 -c 'import paho.mqtt; assert paho.mqtt.__version__ == "2.1.0"' >/dev/null 2>&1; then
  pip_install() { python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@"; }
  pip_install paho-mqtt==2.1.0 2>/dev/null || pip_install --break-system-packages paho-mqtt==2.1.0
fi
