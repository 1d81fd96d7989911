# The two commands of the quick start: `make demo` and `make test`. Each installs what it needs.
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup build demo test lint fuzz-smoke fuzz bench bench-build bench-full bench-mqtt bench-rules bench-faults bench-plots clean

setup:
	@scripts/setup.sh

build: setup
	$(CARGO) build --release -p roam

demo: build
	target/release/roam demo --duration $${DURATION:-15}

test: setup
	$(CARGO) fmt --all --check
	$(CARGO) test --workspace --all-targets -- --test-threads=2
	$(MAKE) lint
	$(MAKE) fuzz-smoke

# What the code is held to besides its tests: clippy and rustdoc without a warning.
lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

# Every fuzz target over its seed corpus plus random inputs for a few seconds (needs nightly
# for cargo-fuzz; skipped with a note when none is installed, the property tests still run).
fuzz-smoke:
	@scripts/fuzz-smoke.sh

# Every fuzz target for minutes (FUZZ_SECONDS each, default 120; FUZZ_TARGETS="a b" for some),
# keeping what it finds in fuzz/corpus/. Needs nightly (fails with a note without one); a crash
# fails it, its input in fuzz/artifacts/. docs/security.md "Fuzzing" says what each covers.
fuzz:
	@scripts/fuzz.sh long $(FUZZ_TARGETS)

# The performance lab. `make bench`: the quick suite (routing plane, then native DDS, roam and
# the Zenoh bridge side by side); `make bench-full`: everything. Both build the Zenoh bridge
# harness once into $(ROAM_BENCH_CACHE) (about 9 minutes the first time, cached after) and
# write bench/results/*.json, bench/RESULTS.md, bench/ROUTING-PLANE.md, bench/MSG-CODEC.md,
# bench/GATEWAY.md and the plots.
ROAM_BENCH_CACHE ?= $(HOME)/.cache/roam-bench
export ROAM_BENCH_CACHE

bench-build: setup
	$(CARGO) build --release -p roam -p roam-bench
	@ROAM_ZENOH_BRIDGE_BUILD_LOG=$(ROAM_BENCH_CACHE)/zenoh-build.log bench/zenoh-bridge/build.sh >/dev/null \
		|| echo "the Zenoh bridge did not build (see $(ROAM_BENCH_CACHE)); the lab runs without it"

bench: bench-build
	target/release/roam-bench --quick
	target/release/roam-msg-bench --quick
	target/release/roam-gateway-bench --quick
	target/release/roam-lab --quick
	$(MAKE) bench-plots

bench-full: bench-build
	target/release/roam-bench
	target/release/roam-msg-bench
	target/release/roam-gateway-bench
	target/release/roam-mqtt-bench
	target/release/roam-rules-bench
	target/release/roam-lab --full
	$(MAKE) bench-plots

# Seed 003's MQTT study (roam mqtt against a Python paho + cyclonedds bridge, Mosquitto on
# loopback): bench/results/mqtt.json, bench/MQTT.md and its ECDF plots.
bench-mqtt: setup
	$(CARGO) build --release -p roam -p roam-bench
	target/release/roam-mqtt-bench $(if $(QUICK),--quick,)
	$(MAKE) bench-plots

# Seed 001's question: what metrics and rules cost a proxy, next to Python hz/bw monitors
# (bench/results/rules.json, bench/RULES.md).
bench-rules: setup
	$(CARGO) build --release -p roam -p roam-bench
	target/release/roam-rules-bench $(if $(QUICK),--quick,)

# Routers killed, restarted and cut off under a reliable stream (bench/FAULTS.md,
# bench/results/faults.json); FULL=1 for the long campaigns and the 30-minute soak.
bench-faults: setup
	$(CARGO) build --release -p roam -p roam-bench
	target/release/roam-lab faults $(if $(FULL),--full,--quick)

bench-plots:
	@python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install --quiet matplotlib \
		|| python3 -m pip install --quiet --break-system-packages matplotlib
	python3 bench/plot.py

clean:
	$(CARGO) clean
