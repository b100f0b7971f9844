# recipes: Redis module (Rust cdylib)
#   make run    build (release) and run redis-server with the module, foreground
#   make test   cargo test (unit + integration, real redis-server); builds the bench too
#   make test-faults  the fault suite (tests/faults/: kill -9, cut AOF, failover,
#               resharding, maxmemory, corrupt RDB/RESTORE, fuzz), about a minute
#   make test-compat  integration tests on Debian's Redis 7.0, Redis 7.2.6 and Valkey
#               8.0.1 (the last two built once from ../shared/servers into ~/.cache;
#               skipped with a message when the tarballs are not there)
#   make bench  cargo run --release --example bench
# Missing system packages (redis-server, redis-tools, libclang-dev) are installed
# with apt-get, only when missing.

SHELL := /bin/bash
PORT ?= 6399
CARGO ?= cargo
RUST_TEST_THREADS ?= 4
export RUST_TEST_THREADS
FAULTS_TEST_THREADS ?= 2

SUDO := $(shell if [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then echo sudo; fi)

.PHONY: all deps build run test test-faults test-compat bench fmt clean

all: build

deps:
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v redis-cli >/dev/null 2>&1 || missing="$$missing redis-tools"; \
	dpkg -s libclang-dev >/dev/null 2>&1 || missing="$$missing libclang-dev"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

build: deps
	$(CARGO) build --release

run: build
	@echo "connect with: redis-cli -p $(PORT)"
	redis-server redis.conf.example --port $(PORT)

# --lib --tests: unit and integration tests (which rebuild the module .so
# they load); no doc-tests, and the bench is only built.
test: deps
	$(CARGO) build --examples
	$(CARGO) test --lib --tests

# Not in `make test` (`test = false` in Cargo.toml): real crashes, failovers
# and a cluster reshard, two tests at a time on 2 cores.
test-faults: deps
	RUST_TEST_THREADS=$(FAULTS_TEST_THREADS) $(CARGO) test --test faults

# Builds the servers once (cached outside the checkout), then runs the
# integration suite on each: scripts/compat-servers.sh says how.
test-compat: deps
	CARGO=$(CARGO) scripts/compat-servers.sh

bench: build
	$(CARGO) run --release --example bench

fmt:
	$(CARGO) fmt

clean:
	$(CARGO) clean
