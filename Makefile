# The two commands of the quick start: `make demo` and `make test`. Each installs what it needs.
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup build demo test test-rust fuzz-smoke bench bench-smoke clean

setup:
	@scripts/setup.sh

build: setup
	$(CARGO) build --release -p roam

demo: build
	target/release/roam demo --duration $${DURATION:-15}

test: setup
	$(CARGO) test --workspace --all-targets -- --test-threads=2
	$(MAKE) fuzz-smoke

# Every fuzz target over its seed corpus plus random inputs for a few seconds (needs nightly
# for cargo-fuzz; skipped with a note when none is installed, the property tests still run).
fuzz-smoke:
	@scripts/fuzz-smoke.sh

bench: setup
	$(CARGO) run --release -p roam-bench -- --quick

bench-full: setup
	$(CARGO) run --release -p roam-bench

clean:
	$(CARGO) clean
