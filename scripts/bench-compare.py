#!/usr/bin/env python3
"""`make bench-compare [REF=<commit>]`: the bench's write rows and its latency
group on an earlier build (default: the previous release, the commit of the
newest `## X.Y.Z — commit <id>` line of CHANGELOG.md) and on this tree's
release build, interleaved, and each row's ratio new/old.

    scripts/bench-compare.py [REF]

- The earlier module is built once from `git archive REF` with a target dir
  of its own under target/bench-compare/ (shared by every commit built so:
  the dependencies build once) and cached as
  target/bench-compare/<id>/librecipes.so. This tree's module and the bench
  binary are built by `make bench-compare` before (the bench of this tree
  drives both modules: a scenario whose command the old module lacks is
  skipped).
- Each round runs the bench binary once per build, in the order old, new
  then new, old (so a drift of the machine over the run weighs on both):
  the write groups at BENCH_KEYS=10000 (many small keys) and the RV/TL/ULIST
  write groups at BENCH_COMPARE_BIG_KEYS keys (default 100: the lists grow
  to thousands of values, past the compact layouts), one bench round of
  BENCH_MS each; the latency group in the first BENCH_COMPARE_LATENCY_ROUNDS
  rounds (default 1; it takes about 3 minutes a build).
- A row's ratio new/old is taken per round (the two builds ran side by side)
  and shown as the median and min-max over rounds; rows of ops/s: above 1 is
  faster; rows of time (us, ms): below 1 is faster. The ratios to the plain
  command (e.g. ULIST.ADD / SADD) are shown for each build, median over
  rounds.
- Writes target/bench/compare.json; each run's own group files stay under
  target/bench-compare/runs/<start time>/.

Env: BENCH_COMPARE_ROUNDS (default 5), BENCH_COMPARE_LATENCY_ROUNDS (1, 0 to
skip the latency group), BENCH_COMPARE_BIG_KEYS (100), CARGO (cargo); the
bench's own BENCH_* knobs pass through (BENCH_ROUNDS is 1 a run here).
"""

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "target"
BASE = TARGET / "bench-compare"
BENCH = TARGET / "release" / "examples" / "bench"
NEW_MODULE = TARGET / "release" / "librecipes.so"

WRITE_GROUPS = ["rv-write", "tl-write", "topn-write", "ulist-write", "hcounter-write"]
# The write groups whose keys are BENCH_KEYS (the others have their own sizes).
KEYED_GROUPS = ["rv-write", "tl-write", "ulist-write"]
SMALL_KEYS = 10_000


def say(msg):
    print(f"bench-compare: {msg}", file=sys.stderr, flush=True)


def env_int(name, default, least):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < least:
        sys.exit(f"bench-compare: {name}={raw!r}: expected an integer >= {least}")
    return int(raw)


def previous_release():
    text = (ROOT / "CHANGELOG.md").read_text()
    m = re.search(r"^## [0-9][0-9.]* — commit ([0-9a-f]{40})$", text, re.M)
    if not m:
        sys.exit("bench-compare: CHANGELOG.md names no release "
                 "(a line '## X.Y.Z — commit <40 hex digits>'); give REF=<commit>")
    return m.group(1)


def resolve(ref):
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                        f"{ref}^{{commit}}"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench-compare: {ref} is not a commit of this clone's history "
                 "(a shallow clone: git fetch --unshallow)")
    return r.stdout.strip()


def build_old(commit):
    """The module of `commit`, built once and cached."""
    out = BASE / commit
    so = out / "librecipes.so"
    if so.is_file():
        return so
    say(f"building {commit[:12]} once (cached as {so.relative_to(ROOT)})")
    src = out / "src"
    subprocess.run(["rm", "-rf", str(src)], check=True)
    src.mkdir(parents=True)
    # -m: the files dated now, not at the commit.
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-m", "-C", str(src)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        sys.exit(f"bench-compare: git archive {commit} failed")
    cargo = os.environ.get("CARGO", "cargo")
    env = dict(os.environ, CARGO_TARGET_DIR=str(BASE / "cargo-target"))
    manifest = ["--manifest-path", str(src / "Cargo.toml")]
    # Every commit's package has the same name and relative path, so cargo
    # would take another commit's build for this one's: clean it first.
    subprocess.run([cargo, "clean", "--release", "-p", "recipes", *manifest], env=env,
                   check=True, stdout=sys.stderr)
    subprocess.run([cargo, "build", "--release", "--lib", *manifest], env=env, check=True,
                   stdout=sys.stderr)
    tmp = so.with_suffix(".so.tmp")
    tmp.write_bytes((BASE / "cargo-target" / "release" / "librecipes.so").read_bytes())
    tmp.rename(so)
    subprocess.run(["rm", "-rf", str(src)], check=True)
    return so


def run_bench(module, only, keys, outdir, log):
    """One bench run of `only` on `module`; its group files land in `outdir`."""
    outdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, RECIPES_MODULE=str(module), BENCH_ONLY=",".join(only),
               BENCH_KEYS=str(keys), BENCH_ROUNDS="1", BENCH_JSON_DIR=str(outdir))
    with open(log, "a") as f:
        r = subprocess.run([str(BENCH)], env=env, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        say(f"the bench failed on {module} ({only}); see {log}")


def figures(outdir):
    """{(group, scenario, figure): figure} of one run's group files."""
    found = {}
    for path in sorted(outdir.glob("*.json")):
        doc = json.loads(path.read_text())
        for scen in doc["scenarios"]:
            for fig in scen["figures"]:
                found[(doc["group"], scen["id"], fig["id"])] = fig
    return found


def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def compare(runs, rounds):
    """Rows of ratios from runs[(config, round, build)] = figures."""
    keys = []
    for (config, _, _), figs in runs.items():
        for k in figs:
            if (config, *k) not in keys:
                keys.append((config, *k))
    rows = []
    for config, group, scen, fig_id in keys:
        per_round, old_vals, new_vals, base_ratios = [], [], [], {"old": [], "new": []}
        unit, label, vs = None, "", None
        for r in range(rounds):
            pair = {}
            for build in ("old", "new"):
                fig = runs.get((config, r, build), {}).get((group, scen, fig_id))
                if fig is None:
                    continue
                unit, label = fig["unit"], fig["label"]
                pair[build] = fig["value"]
                for ratio in fig.get("ratios", [])[:1]:
                    vs = ratio["vs"]
                    base_ratios[build].append(ratio["value"])
            o, n = pair.get("old"), pair.get("new")
            old_vals.append(o)
            new_vals.append(n)
            if o and n is not None and o > 0:
                per_round.append(n / o)
        if not any(v is not None for v in old_vals + new_vals):
            continue
        rows.append({
            "config": config, "group": group, "scenario": scen, "figure": fig_id,
            "label": label, "unit": unit,
            "old": spread(old_vals), "new": spread(new_vals),
            "new_over_old": spread(per_round),
            "vs": vs, "old_vs": spread(base_ratios["old"]), "new_vs": spread(base_ratios["new"]),
        })
    return rows


def fmt(x, unit=None):
    if x is None:
        return "n/a"
    if unit == "ops/s":
        return f"{x:,.0f}"
    if unit in ("us", "ms", "B"):
        return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"
    return f"{x:.2f}"


def print_rows(rows, old_id, new_label):
    print()
    print(f"## bench-compare: new ({new_label}) / old ({old_id[:12]})")
    print()
    print("| runs | row | old | new | new/old median (min-max, rounds) | vs plain: old / new |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["new_over_old"]
        ratio_text = "n/a" if ratio is None else (
            f"{ratio['median']:.2f}x ({ratio['min']:.2f}-{ratio['max']:.2f}, {ratio['n']})")
        vs_text = ""
        if r["vs"]:
            o = r["old_vs"]["median"] if r["old_vs"] else None
            n = r["new_vs"]["median"] if r["new_vs"] else None
            vs_text = f"{fmt(o)}x / {fmt(n)}x {r['vs']}"
        what = r["scenario"] if r["figure"] == r["scenario"] else f"{r['scenario']}: {r['figure']}"
        unit = r["unit"]
        old = fmt(r["old"]["median"], unit) if r["old"] else "n/a"
        new = fmt(r["new"]["median"], unit) if r["new"] else "n/a"
        print(f"| {r['config']} | {r['group']} {what} ({unit}) | {old} | {new} | {ratio_text} "
              f"| {vs_text} |")
    print()
    print("ops/s rows: new/old above 1 is faster; us/ms rows (latency): below 1 is faster.")


def main():
    ref = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else os.environ.get("REF", "")
    old_id = resolve(ref or previous_release())
    rounds = env_int("BENCH_COMPARE_ROUNDS", 5, 1)
    latency_rounds = env_int("BENCH_COMPARE_LATENCY_ROUNDS", 1, 0)
    big_keys = env_int("BENCH_COMPARE_BIG_KEYS", 100, 1)
    for needed in (BENCH, NEW_MODULE):
        if not needed.is_file():
            sys.exit(f"bench-compare: {needed} is missing: run `make bench-compare` "
                     "(it builds the module and the bench)")
    old_so = build_old(old_id)
    head = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                          capture_output=True, text=True).stdout.strip()
    builds = {"old": old_so, "new": NEW_MODULE}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    rundir = BASE / "runs" / stamp
    log = rundir / "bench.log"
    rundir.mkdir(parents=True, exist_ok=True)
    configs = [("small keys", WRITE_GROUPS, SMALL_KEYS), ("big keys", KEYED_GROUPS, big_keys)]
    say(f"{rounds} rounds, old {old_id[:12]} against this tree ({head}); "
        f"runs and their log in {rundir.relative_to(ROOT)}")
    started = time.time()
    runs = {}
    for r in range(rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for build in order:
            for config, groups, keys in configs:
                only = list(groups)
                if config == "small keys" and r < latency_rounds:
                    only.append("latency")
                outdir = rundir / f"{r}-{build}-{keys}"
                say(f"round {r + 1}/{rounds}: {build}, {config}: {','.join(only)}")
                run_bench(builds[build], only, keys, outdir, log)
                figs = figures(outdir)
                # The latency group is a configuration of its own.
                runs.setdefault((config, r, build), {}).update(
                    {k: v for k, v in figs.items() if k[0] != "latency"})
                lat = {k: v for k, v in figs.items() if k[0] == "latency"}
                if lat:
                    runs.setdefault(("latency", r, build), {}).update(lat)
    rows = compare(runs, rounds)
    print_rows(rows, old_id, head)
    took = time.time() - started
    load = os.getloadavg()
    print(f"\n{rounds} rounds in {took / 60:.1f} min; load average at the end "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs "
          "(other builds on the machine widen the spread)")
    out = TARGET / "bench" / "compare.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"old": {"commit": old_id, "module": str(old_so)},
           "new": {"describe": head, "module": str(NEW_MODULE)},
           "rounds": rounds, "latency_rounds": latency_rounds, "big_keys": big_keys,
           "small_keys": SMALL_KEYS, "started_unix_s": started, "wall_s": took,
           "load_average": load, "runs_dir": str(rundir), "rows": rows}
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.rename(out)
    print(f"results in {out}")


if __name__ == "__main__":
    main()
