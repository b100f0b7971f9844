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
#
# A missing tarball (a clone without ../shared) skips that server with a
# message; a checksum mismatch, a build failure or a failing test fails the
# run, after every server has been tried.
#
# Env:
#   RECIPES_SERVERS_DIR    tarballs + SHA256SUMS (default <repo>/../shared/servers)
#   RECIPES_SERVERS_CACHE  build cache (default ${XDG_CACHE_HOME:-~/.cache}/recipes-servers);
#                          one folder per tarball, named after its checksum, so a
#                          changed tarball is rebuilt. Delete it to rebuild.
#   COMPAT_SERVERS         which servers (default "debian redis-7.2.6 valkey-8.0.1")
#   CARGO                  cargo binary (default cargo)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
servers_dir=${RECIPES_SERVERS_DIR:-$repo/../shared/servers}
cache=${RECIPES_SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/recipes-servers}
servers=${COMPAT_SERVERS:-debian redis-7.2.6 valkey-8.0.1}
cargo=${CARGO:-cargo}
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
    local name=$1 tarball="$servers_dir/$1.tar.gz"
    if [ ! -f "$tarball" ]; then
        reason="no $tarball (the tarballs live in ../shared/servers beside the main checkout)"
        return 3
    fi
    local sums="$servers_dir/SHA256SUMS" want got
    want=$(awk -v f="$name.tar.gz" '$2 == f || $2 == "*" f { print $1 }' "$sums" 2>/dev/null || true)
    if [ -z "$want" ]; then
        reason="$name.tar.gz is not listed in $sums"
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
    mkdir -p "$cache"
    # One build per cache folder at a time: a second run waits, then finds it done.
    exec 9>"$dir.lock"
    flock 9
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
    say "building $name in $tmp (about a minute on 2 cores)"
    if ! {
        tar -xzf "$tarball" -C "$tmp" &&
            make -C "$tmp/$name" -j2 MALLOC=libc BUILD_TLS=no &&
            mkdir -p "$tmp/out/bin" &&
            cp "$tmp/$name/src/$prefix-server" "$tmp/$name/src/$prefix-cli" "$tmp/out/bin/"
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

# locate <name>: sets $srv and $cli, building if needed. Returns as `build`.
locate() {
    local name=$1
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

# Every server resolved (and built) before any test runs.
declare -A bins=()
for name in $servers; do
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
    for name in $servers; do
        if [ -n "${bins[$name]:-}" ]; then
            read -r srv _ <<<"${bins[$name]}"
            record "$name: $(version_of "$srv") ready ($srv)"
        fi
    done
else
    tested=""
    for name in $servers; do [ -n "${bins[$name]:-}" ] && tested=1; done
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
    for name in $servers; do
        [ -n "${bins[$name]:-}" ] || continue
        read -r srv cli <<<"${bins[$name]}"
        version=$(version_of "$srv")
        log="$logdir/$name.log"
        say "=== $name: $version ($srv, $cli) ==="
        start=$SECONDS
        rc=0
        # --test <each integration test>: the integration tests only (the unit
        # tests start no server; the fault suite, tests/faults/, runs once in
        # `make test-faults`); --no-fail-fast: every test file, even after a
        # failure.
        (cd "$repo" && REDIS_SERVER=$srv REDIS_CLI=$cli $cargo test --no-fail-fast $integration_tests 2>&1) |
            tee "$log" || rc=$?
        secs=$((SECONDS - start))
        passed=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
        nfailed=$(sed -n 's/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\2/p' "$log" | awk '{s += $1} END {print s + 0}')
        if [ $rc = 0 ]; then
            record "$name: $version: ok, $passed passed, $nfailed failed, ${secs} s"
        else
            record "$name: $version: FAILED, $passed passed, $nfailed failed, ${secs} s (log: $log)" fail
        fi
    done
fi

echo
say "summary"
for line in "${summary[@]}"; do echo "  $line"; done
exit $failed
