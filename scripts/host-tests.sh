#!/usr/bin/env bash
# Redis 7.0.15's own test suite, with the module loaded into every server it
# starts from its default config: the server around us must still behave as
# its own tests say.
#
#   scripts/host-tests.sh          fetch the suite (once), run the units, print the summary
#   scripts/host-tests.sh fetch    only fetch the suite into the cache; print the tarball's path
#
# The suite is Redis's release tarball as Debian ships it: the source package
# `redis` $debian_version, its orig tarball pinned by sha256, fetched once with
# `apt-get source --download-only` (a deb-src entry in an apt state of its own,
# so the machine's apt sources are left alone) into the cache, and checked
# before every use. Every 7.0.15-1~deb12uN ships that same tarball: when the
# pinned revision has left the mirror, the newest one is fetched and the
# checksum decides.
#
# Each unit runs in its own `runtest --single <unit> --clients 1`, two at a
# time (two CPUs), in trees unpacked from the tarball under target/host-tests/
# (tests/ and runtest only; src/ holds links to the installed redis-server,
# redis-cli, redis-benchmark, redis-check-aof and redis-check-rdb), one tree
# and one port range per lane, since runtest cleans its tests/tmp when it
# starts. Units with run_solo tests (defrag) run last, alone. Our module is
# loaded by a `loadmodule` line appended to the tree's tests/assets/default.conf.
#
# The control: a unit that fails with the module runs again in a tree without
# it. The run fails when a unit fails with the module and passes without it
# (ours); a unit that fails both ways is reported as failing without the
# module too, and does not fail the run. Logs: target/host-tests/logs/.
#
# Env:
#   RECIPES_MODULE         the module .so (default target/release/librecipes.so)
#   RECIPES_SERVERS_CACHE  cache (default ${XDG_CACHE_HOME:-~/.cache}/recipes-servers),
#                          shared with scripts/compat-servers.sh
#   HOST_TESTS_UNITS       the units to run (default: the list below)
#   HOST_TESTS_CONTROL     `failed` (default): the control for the units that
#                          fail with the module; `all`: for every unit
#   DEBIAN_MIRROR          where apt fetches the source package (default
#                          http://deb.debian.org/debian)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${RECIPES_SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/recipes-servers}
module=${RECIPES_MODULE:-$repo/target/release/librecipes.so}
control_for=${HOST_TESTS_CONTROL:-failed}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

debian_version=5:7.0.15-1~deb12u7
orig=redis_7.0.15.orig.tar.gz
orig_sha256=4b1dc4ee6d622a09fff9c6777191209750fb5e5a725ef78ea012d6eef4c22982
suite_dir=$cache/redis-7.0.15-suite-${orig_sha256:0:16}
tarball=$suite_dir/$orig

# Every unit of the suite's own list (tests/test_helper.tcl), and
# unit/cluster/announced-endpoints, which that list misses; longest first, so
# the two lanes end together. Left out: unit/tls (runs only in the suite's
# TLS mode, --tls) and unit/printver (no test: it starts a server and prints its
# version, which is how this script checks that a server starts with the
# module at all). docs/reliability.md lists what the suite holds beside these.
default_units="
integration/replication integration/replication-psync unit/memefficiency
unit/hyperloglog integration/psync2 unit/type/list-3 unit/maxmemory
integration/replication-4 unit/aofrw integration/block-repl unit/dump
unit/type/stream integration/psync2-reg unit/type/zset
integration/corrupt-dump-fuzzer unit/obuf-limits unit/geo unit/cluster
unit/expire unit/latency-monitor integration/corrupt-dump
integration/psync2-pingoff unit/type/list integration/replication-buffer
integration/aof unit/scripting integration/aof-multi-part
integration/replication-2 integration/replication-3 unit/type/string
unit/type/list-2 integration/shutdown unit/introspection
integration/redis-cli unit/type/set unit/other integration/rdb
integration/dismiss-mem unit/scan integration/psync2-master-restart
unit/introspection-2 unit/multi integration/failover
unit/type/stream-cgroups unit/functions unit/wait unit/querybuf
unit/client-eviction unit/cluster/misc unit/cluster/announced-endpoints
unit/type/hash unit/sort unit/acl unit/pendingquerybuf unit/cluster/links
unit/auth unit/acl-v2 integration/redis-benchmark unit/tracking
unit/oom-score-adj unit/networking unit/cluster-scripting unit/violations
unit/protocol unit/keyspace unit/info unit/type/incr
integration/convert-zipmap-hash-on-load integration/convert-ziplist-zset-on-load
integration/convert-ziplist-hash-on-load integration/logging unit/pubsub
unit/pubsubshard unit/slowlog unit/limits unit/bitfield unit/lazyfree
unit/replybufsize unit/bitops unit/info-command unit/quit unit/pause
unit/shutdown
"
units=${HOST_TESTS_UNITS:-$default_units}
binaries="redis-server redis-cli redis-benchmark redis-check-aof redis-check-rdb"

mode=${1:-test}
case $mode in
    fetch | test) ;;
    *)
        echo "usage: $0 [fetch|test]" >&2
        exit 2
        ;;
esac

say() { echo "host-tests: $*" >&2; }
die() {
    say "$*"
    exit 1
}
sudo=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo=sudo; fi

# The pinned orig tarball into the cache, unless there already.
fetch_suite() {
    [ -f "$tarball" ] && return 0
    mkdir -p "$cache"
    # One fetch at a time (fd 9); a second run waits, then finds it done.
    exec 9>"$suite_dir.lock"
    flock 9
    [ -f "$tarball" ] || fetch_suite_locked
    exec 9>&-
}

fetch_suite_locked() {
    local apt_root
    # What a fetch that failed left (its log) goes when the next one starts.
    rm -rf "$cache"/.fetch-redis-suite.*
    apt_root=$(mktemp -d "$cache/.fetch-redis-suite.XXXXXX")
    mkdir -p "$apt_root/lists/partial" "$apt_root/cache/archives/partial" \
        "$apt_root/sources.list.d" "$apt_root/download"
    printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s bookworm main\n' \
        "$mirror" >"$apt_root/sources.list"
    # The machine's apt keeps its own sources and lists; these are for this fetch only.
    local apt=(apt-get -q -o "Dir::Etc::SourceList=$apt_root/sources.list"
        -o "Dir::Etc::SourceParts=$apt_root/sources.list.d"
        -o "Dir::State::Lists=$apt_root/lists" -o "Dir::Cache=$apt_root/cache")
    say "fetching Debian's source package redis $debian_version from $mirror"
    "${apt[@]}" update >"$apt_root/fetch.log" 2>&1 ||
        die "apt-get update of the deb-src entry failed (log: $apt_root/fetch.log)"
    if ! (cd "$apt_root/download" && "${apt[@]}" source --download-only "redis=$debian_version") \
        >>"$apt_root/fetch.log" 2>&1; then
        say "redis $debian_version is not on the mirror any more; fetching its newest revision"
        (cd "$apt_root/download" && "${apt[@]}" source --download-only redis) >>"$apt_root/fetch.log" 2>&1 ||
            die "apt-get source redis failed (log: $apt_root/fetch.log)"
    fi
    check_tarball "$apt_root/download/$orig"
    mkdir -p "$suite_dir"
    mv "$apt_root/download/$orig" "$tarball.tmp"
    mv "$tarball.tmp" "$tarball"
    rm -rf "$apt_root"
    say "fetched $tarball"
}

check_tarball() {
    local got
    got=$(sha256sum "$1" 2>/dev/null | cut -d' ' -f1)
    [ "$got" = "$orig_sha256" ] || die "$1: checksum ${got:-missing}, pinned $orig_sha256"
}

fetch_suite
check_tarball "$tarball"
if [ "$mode" = fetch ]; then
    echo "$tarball"
    exit 0
fi

[ -f "$module" ] || die "no module at $module (cargo build --release makes it)"
for b in $binaries; do
    command -v "$b" >/dev/null 2>&1 || die "$b not installed (make deps installs redis-server and redis-tools)"
done
if ! command -v tclsh8.6 >/dev/null 2>&1 && ! command -v tclsh8.5 >/dev/null 2>&1; then
    say "installing: tcl"
    $sudo apt-get update -q && $sudo env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends tcl >&2
fi

work=$repo/target/host-tests
rm -rf "$work"
mkdir -p "$work/logs/module" "$work/logs/control"

# make_tree <dir> module|control: the suite, its src/ linked to the installed
# binaries, and for `module` our loadmodule line.
make_tree() {
    local dir=$1 kind=$2 b
    mkdir -p "$dir/src"
    tar -xzf "$tarball" -C "$dir" --strip-components=1 redis-7.0.15/tests redis-7.0.15/runtest
    for b in $binaries; do ln -s "$(command -v "$b")" "$dir/src/$b"; done
    # The file has no final newline.
    [ "$kind" = control ] || printf '\nloadmodule %s\n' "$module" >>"$dir/tests/assets/default.conf"
}

# run_unit <kind> <lane> <unit>: one runtest, logged in logs/<kind>/<unit>.log;
# its status is runtest's. Each lane has its own tree and ports (runtest also
# binds each port + 10000 for the cluster bus).
run_unit() (
    kind=$1 lane=$2 unit=$3
    cd "$work/$kind-$lane"
    TERM=dumb ./runtest --single "$unit" --clients 1 --timeout 600 --dump-logs \
        --baseport $((21111 + lane * 4000)) --portcount 3900 \
        >"$work/logs/$kind/${unit//\//_}.log" 2>&1
)

# run_units <kind> <unit...>: two lanes; sets status[<unit>] to runtest's exit
# status and secs[<unit>].
declare -A status=() secs=()
run_units() {
    local kind=$1 unit pid lane
    shift
    local -A lane_of=() unit_of=() started=()
    local free="0 1" solo=()
    say "$kind: $# unit(s)"
    for unit in "$@"; do
        [ -f "$work/$kind-0/tests/$unit.tcl" ] || die "no unit $unit in the suite"
        # run_solo tests (defrag) expect an idle machine: those units run last, alone.
        if grep -q '^run_solo' "$work/$kind-0/tests/$unit.tcl"; then
            solo+=("$unit")
            continue
        fi
        if [ -z "$free" ]; then wait_one "$kind"; fi
        lane=${free%% *}
        free=${free#"$lane"}
        free=${free# }
        run_unit "$kind" "$lane" "$unit" &
        lane_of[$!]=$lane unit_of[$!]=$unit started[$!]=$SECONDS
    done
    while [ ${#unit_of[@]} -gt 0 ]; do wait_one "$kind"; done
    local solo_start
    for unit in "${solo[@]}"; do
        solo_start=$SECONDS
        status[$unit]=0
        run_unit "$kind" 0 "$unit" || status[$unit]=$?
        secs[$unit]=$((SECONDS - solo_start))
        report "$kind" "$unit"
    done
}

# Waits for one unit of run_units to end; records it and frees its lane.
wait_one() {
    local kind=$1 pid rc=0
    wait -n -p pid || rc=$?
    status[${unit_of[$pid]}]=$rc
    secs[${unit_of[$pid]}]=$((SECONDS - started[$pid]))
    report "$kind" "${unit_of[$pid]}"
    free="$free ${lane_of[$pid]}"
    free=${free# }
    unset "lane_of[$pid]" "unit_of[$pid]" "started[$pid]"
}

# count <kind> <unit> <tag>: lines runtest printed with [tag].
count() {
    grep -c "^\[$3\]" "$work/logs/$1/${2//\//_}.log" || true
}

declare -A line=()
report() {
    local kind=$1 unit=$2 ok err skipped
    ok=$(count "$kind" "$unit" ok)
    err=$(($(count "$kind" "$unit" err) + $(count "$kind" "$unit" exception)))
    skipped=$(($(count "$kind" "$unit" skip) + $(count "$kind" "$unit" ignore)))
    line[$kind:$unit]="$ok passed, $err failed, $skipped skipped, ${secs[$unit]} s"
    if [ "${status[$unit]}" = 0 ]; then
        say "$kind: $unit: ${line[$kind:$unit]}"
    else
        line[$kind:$unit]+=", runtest status ${status[$unit]}"
        say "$kind: $unit: FAILED: ${line[$kind:$unit]} (log: target/host-tests/logs/$kind/${unit//\//_}.log)"
    fi
}

start=$SECONDS
for lane in 0 1; do
    make_tree "$work/module-$lane" module
    make_tree "$work/control-$lane" control
done
# A module that keeps the server from starting would fail every unit after
# runtest's start timeouts (a minute or more each): one server first.
run_units module unit/printver
if [ "${status[unit/printver]}" = 0 ]; then
    # shellcheck disable=SC2086 # the list is one unit a word
    run_units module $units
else
    units=unit/printver
    say "no server of the suite starts with the module loaded: no unit runs"
fi
declare -A with_module=()
failing=()
for unit in $units; do
    with_module[$unit]=${status[$unit]}
    if [ "${status[$unit]}" != 0 ] || [ "$control_for" = all ]; then failing+=("$unit"); fi
done
[ ${#failing[@]} = 0 ] || run_units control "${failing[@]}"

echo
echo "host-tests: Redis 7.0.15's suite on $(redis-server --version | cut -d' ' -f1-3), module $module"
passed=0 ours_failed=0 ours=() not_ours=()
for unit in $units; do
    passed=$((passed + $(count module "$unit" ok)))
    printf '  %-38s %s\n' "$unit" "${line[module:$unit]}"
    [ -n "${line[control:$unit]:-}" ] || continue
    printf '  %-38s without the module: %s\n' "" "${line[control:$unit]}"
    [ "${with_module[$unit]}" != 0 ] || continue
    grep '^\[\(err\|exception\)\]' "$work/logs/module/${unit//\//_}.log" | sed 's/^/      with the module: /' || true
    if [ "${status[$unit]}" = 0 ]; then
        ours+=("$unit")
        # A unit that stopped without naming a test (crash, timeout) counts one.
        n=$(($(count module "$unit" err) + $(count module "$unit" exception)))
        ours_failed=$((ours_failed + (n > 0 ? n : 1)))
    else
        not_ours+=("$unit")
    fi
done
[ "$units" != unit/printver ] || echo "host-tests: no server of the suite starts with the module loaded: no unit ran"
echo "host-tests: $(wc -w <<<"$units") units in $((SECONDS - start)) s"
[ ${#not_ours[@]} = 0 ] || echo "host-tests: failing without the module too (not ours): ${not_ours[*]}"
[ ${#ours[@]} = 0 ] || echo "host-tests: OURS, failing with the module and passing without it: ${ours[*]}"
echo "host-tests: $passed passed, $ours_failed failed"
[ ${#ours[@]} = 0 ]
