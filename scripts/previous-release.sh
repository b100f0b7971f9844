#!/usr/bin/env bash
# Builds the module of an earlier release, named build or commit once and
# prints the path of its .so.
#
#   scripts/previous-release.sh          the previous release: the newest
#                                        "## X.Y.Z — commit <id>" line of CHANGELOG.md
#   scripts/previous-release.sh X.Y.Z    the release CHANGELOG.md names so (e.g. 0.1.0)
#   scripts/previous-release.sh NAME     a build named in the table below
#                                        (e.g. keyword-names)
#   scripts/previous-release.sh COMMIT   any commit of this clone's history
#   scripts/previous-release.sh --list   builds nothing: the name of every release
#                                        CHANGELOG.md names, newest first, one a line
#
# The commit's tree comes from `git archive` (the checkout is left alone) into
# target/previous-release/<id>/src and is built in release mode with a target
# dir of its own (target/previous-release/cargo-target, shared by every commit
# built so, so their dependencies build once; `tar -m` dates the files now, so
# cargo never takes another commit's build as up to date). The result is cached as
# target/previous-release/<id>/librecipes.so: later runs only print its path.
# Build output goes to stderr; stdout is the path alone.
#
# Env: CARGO (default cargo).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cargo=${CARGO:-cargo}
say() { echo "previous-release: $*" >&2; }

# Every release heading of CHANGELOG.md, newest first: "<name> <commit>" a line.
releases() {
    sed -n 's/^## \([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\) — commit \([0-9a-f]\{40\}\)$/\1 \2/p' \
        "$repo/CHANGELOG.md"
}

# Builds that are no release but that make test-upgrade needs, by name.
# keyword-names: a build before 0.1.0 that let declarations use names that are
# keywords now (`group`, `count`); its golden AOF and its stream as a master
# must still load (tests/upgrade/golden.rs).
named_build() {
    case $1 in
        keyword-names) echo 7a559f0 ;;
        *) return 1 ;;
    esac
}

case ${1:-} in
    --list)
        releases | cut -d' ' -f1
        exit 0
        ;;
    "")
        wanted=$(releases | head -n 1 | cut -d' ' -f2)
        what="the newest release"
        ;;
    [0-9]*.[0-9]*.[0-9]*)
        wanted=$(releases | awk -v name="$1" '$1 == name { print $2 }')
        what="release $1"
        ;;
    *)
        if wanted=$(named_build "$1"); then
            what="build $1"
        else
            wanted=$1
            what=""
        fi
        ;;
esac
if [ -z "$wanted" ]; then
    say "CHANGELOG.md names no $what (a line '## X.Y.Z — commit <40 hex digits>')"
    exit 1
fi

if ! id=$(git -C "$repo" rev-parse --verify --quiet "$wanted^{commit}"); then
    say "${what:+$what: }commit $wanted is not in this clone's history."
    if [ "$(git -C "$repo" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
        say "this clone is shallow: fetch the whole history (git fetch --unshallow) and run again."
    fi
    exit 1
fi

base=$repo/target/previous-release
out=$base/$id
so=$out/librecipes.so
mkdir -p "$base"
# One build at a time (two test runs may ask at once).
exec 9>"$base/.lock"
flock 9

if [ ! -f "$so" ]; then
    say "building ${what:+$what, }commit $id (once; cached as $so)"
    rm -rf "$out/src"
    mkdir -p "$out/src"
    git -C "$repo" archive "$id" | tar -x -m -C "$out/src"
    CARGO_TARGET_DIR=$base/cargo-target "$cargo" build --release --lib \
        --manifest-path "$out/src/Cargo.toml" >&2
    cp "$base/cargo-target/release/librecipes.so" "$so.tmp"
    mv "$so.tmp" "$so"
    rm -rf "$out/src"
fi
echo "$so"
