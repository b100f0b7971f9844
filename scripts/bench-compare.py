#!/usr/bin/env python3
"""`make bench-compare [REF=<commit>]`: the bench's write rows and its latency
group on an earlier build (default: the previous release, the commit of the
newest `## X.Y.Z — commit <id>` line of CHANGELOG.md) and on this tree's
release build, interleaved, and each row's ratio new/old.

    scripts/bench-compare.py [REF]

- The earlier module is built once by scripts/previous-release.sh (cached
  as target/previous-release/<id>/librecipes.so). This tree's module and the bench
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
  rounds, and their own new/old per round: the plain command ran on the same
  server a few seconds apart, so that ratio leaves out most of the machine's
  drift between the two builds' runs (the steadier figure on a busy
  machine).
- BENCH_COMPARE_CALLGRIND=<runs> (default 3 when valgrind is installed, 0
  otherwise) adds rows that no other load on the machine can move: instructions per call (valgrind --tool=callgrind, counted inside
  Redis's call(), so I/O, parsing and the command lookup are left out) of
  ULIST.ADD, HCOUNTER.INCR and TOPN.INCR as the write groups send them, and of
  SADD, HINCRBY and ZINCRBY on the same layouts, on each build, after a warm-up that gives the
  lists and cells their steady state; each run a fresh server per build
  (Redis seeds its hash tables at random, and RM_Replicate looks the command
  up by name in one, so a count moves by up to ~1% between servers: 3 runs
  give its spread); about a minute a run.
- The latency group's `topn` scenario grows one TOPN bucket to 4,000,000
  members twice a run, its control one zset as many times (ZADD), and logs
  every write over 1 ms with the member count it came at. A count at which
  two growths of one build (over every round) had such a write is printed:
  for the module it is a failure of ours (a structure copied whole at that
  size), not the machine's (its stalls land at random counts), and the
  script says so.
- Writes target/bench/compare.json; each run's own group files stay under
  target/bench-compare/runs/<start time>/.

Env: BENCH_COMPARE_ROUNDS (default 5), BENCH_COMPARE_LATENCY_ROUNDS (1, 0 to
skip the latency group), BENCH_COMPARE_BIG_KEYS (100),
BENCH_COMPARE_CALLGRIND (3; 0: none), CARGO (cargo); the
bench's own BENCH_* knobs pass through (BENCH_ROUNDS is 1 a run here).
"""

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import callgrind

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


def build_old(ref):
    """The module of `ref` (default: the previous release), built once and
    cached by scripts/previous-release.sh, with its full commit id."""
    script = ROOT / "scripts" / "previous-release.sh"
    r = subprocess.run([str(script), *([ref] if ref else [])], stdout=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        sys.exit("bench-compare: scripts/previous-release.sh could not build the old module")
    so = Path(r.stdout.strip())
    return so.parent.name, so


def run_bench(module, only, keys, outdir, log):
    """One bench run of `only` on `module`; its group files land in `outdir`."""
    outdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, RECIPES_MODULE=str(module), BENCH_ONLY=",".join(only),
               BENCH_KEYS=str(keys), BENCH_ROUNDS="1", BENCH_JSON_DIR=str(outdir))
    with open(log, "a") as f:
        r = subprocess.run([str(BENCH)], env=env, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        say(f"the bench failed on {module} ({only}); see {log}")


# Callgrind workloads: (setup, warm-up, measured) command lists, as the
# write groups send them (ulist-write: 10,000 lists, 9-digit ids;
# hcounter-write: 30 dates x 300 companies, the gem's hashes for HINCRBY;
# topn-write: a pool of 10,000 members, ZINCRBY on the recipe's zset).
CALLS = 20_000
DAYS = [f"2024-05-{d:02d}" for d in range(1, 31)]


def ulist_add(rng, cmd):
    key = f"uw:{rng.randrange(SMALL_KEYS)}"
    value = rng.randrange(100_000_000, 1_000_000_000)
    return ("ULIST.ADD", key, "user", value) if cmd == "ULIST.ADD" else ("SADD", key, value)


def hcounter_incr(rng, cmd):
    day, company = rng.choice(DAYS), 10_000 + rng.randrange(300)
    if cmd == "HCOUNTER.INCR":
        return ("HCOUNTER.INCR", "hcw", "date", day, "company_id", company)
    return ("HINCRBY", f"hw:{day}", company, 1)


def topn_incr(rng, cmd):
    member = f"m:{rng.randrange(10_000)}"
    return ("TOPN.INCR", "tw", member) if cmd == "TOPN.INCR" else ("ZINCRBY", "zw", 1, member)


def workloads():
    ulist_setup = [("ULIST.CREATE", f"uw:{k}", "VALUE", "user") for k in range(SMALL_KEYS)]
    hc_setup = [("HCOUNTER.CREATE", "hcw", "PARTITION", "date", "GROUP", "company_id")]
    return [
        # (command, setup, its generator, warm-up calls)
        ("ULIST.ADD", ulist_setup, ulist_add, 200_000),
        ("SADD", [], ulist_add, 200_000),
        ("HCOUNTER.INCR", hc_setup, hcounter_incr, 9_000),
        ("HINCRBY", [], hcounter_incr, 9_000),
        ("TOPN.INCR", [], topn_incr, 20_000),
        ("ZINCRBY", [], topn_incr, 20_000),
    ]


def callgrind_calls(module, command, setup, gen, warm, outdir):
    """Instructions per call of `command` inside Redis's call()."""
    with callgrind.Server(outdir, command, ["--loadmodule", str(module)]) as server:
        rng = random.Random(1)
        server.conn.pipeline(setup + [gen(rng, command) for _ in range(warm)])
        rng = random.Random(7)
        measured = [gen(rng, command) for _ in range(CALLS)]
        server.instrument(True)
        server.conn.pipeline(measured)
        server.instrument(False)
        path = server.stop()
    _, call, counted = callgrind.commands(path)
    return call / counted


def instruction_rows(builds, runs, outdir):
    """Rows of instructions per call on each build, `runs` servers each."""
    counts = {}
    for run in range(runs):
        for command, setup, gen, warm in workloads():
            for build, module in builds.items():
                say(f"callgrind {run + 1}/{runs}: {command} on {build}")
                n = callgrind_calls(module, command, setup, gen, warm, outdir)
                counts.setdefault((command, build), []).append(n)
    plain = {"ULIST.ADD": "SADD", "HCOUNTER.INCR": "HINCRBY", "TOPN.INCR": "ZINCRBY"}
    rows = []
    for command, *_ in workloads():
        old, new = counts[(command, "old")], counts[(command, "new")]
        base = plain.get(command)
        vs = {b: [p / c for p, c in zip(counts[(base, b)], counts[(command, b)])]
              for b in builds} if base else None
        rows.append({
            "config": "callgrind", "group": "instructions", "scenario": command,
            "figure": command, "label": f"instructions per {command} in call()",
            "unit": "instr", "old": spread(old), "new": spread(new),
            "new_over_old": spread([n / o for n, o in zip(new, old)]),
            "vs": base,
            "old_vs": spread(vs["old"]) if base else None,
            "new_vs": spread(vs["new"]) if base else None,
            "vs_new_over_old": (spread([n / o for n, o in zip(vs["new"], vs["old"])])
                                if base else None),
        })
    return rows


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
        vs_per_round = []
        unit, label, vs = None, "", None
        for r in range(rounds):
            pair, vs_pair = {}, {}
            for build in ("old", "new"):
                fig = runs.get((config, r, build), {}).get((group, scen, fig_id))
                if fig is None:
                    continue
                unit, label = fig["unit"], fig["label"]
                pair[build] = fig["value"]
                for ratio in fig.get("ratios", [])[:1]:
                    vs = ratio["vs"]
                    vs_pair[build] = ratio["value"]
                    base_ratios[build].append(ratio["value"])
            if vs_pair.get("old") and vs_pair.get("new") is not None:
                vs_per_round.append(vs_pair["new"] / vs_pair["old"])
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
            "vs_new_over_old": spread(vs_per_round),
        })
    return rows


# The latency group's growths that log their writes over 1 ms by member count.
GROWN = {"topn": "TOPN.INCR", "topn control": "ZADD"}


def repeated_slow_writes(runs, rounds):
    """{(build, scenario): (growths, {count: [us, ...]})}: the member counts
    at which two growths or more of one build had a write over 1 ms."""
    out = {}
    for build in ("old", "new"):
        for scen in GROWN:
            growths = []
            for r in range(rounds):
                for (_, s, fig_id), fig in runs.get(("latency", r, build), {}).items():
                    if s == scen and fig_id.endswith(" over 1 ms") and not fig_id.startswith("repeated"):
                        growths.append(dict(fig.get("details", {}).get("at_counts", [])))
            at = {}
            for g in growths:
                for count, us in g.items():
                    at.setdefault(count, []).append(us)
            out[(build, scen)] = (len(growths), {c: us for c, us in sorted(at.items()) if len(us) > 1})
    return out


def print_repeats(repeats, old_id):
    print()
    print("## Writes over 1 ms at the same member count in two growths (latency group)")
    print()
    for (build, scen), (growths, at) in repeats.items():
        name = f"{build} ({old_id[:12]})" if build == "old" else build
        what = f"{name}, {scen} ({GROWN[scen]}, {growths} growths)"
        if not growths:
            print(f"- {what}: not run")
            continue
        if not at:
            print(f"- {what}: none")
            continue
        listed = "; ".join(f"{c:,} members: " + " / ".join(f"{u / 1000:.1f} ms" for u in us)
                           for c, us in at.items())
        verdict = "FAIL, ours: a cost at that size" if scen == "topn" else "the plain command's"
        print(f"- {what}: {verdict}: {listed}")


def fmt(x, unit=None):
    if x is None:
        return "n/a"
    if unit == "ops/s":
        return f"{x:,.0f}"
    if unit == "instr":
        return f"{x:,.0f}"
    if unit in ("us", "ms", "B"):
        return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"
    return f"{x:.2f}"


def spread_text(s, digits=2):
    if s is None:
        return "n/a"
    if s["n"] == 1:
        return f"{s['median']:.{digits}f}x"
    return f"{s['median']:.{digits}f}x ({s['min']:.{digits}f}-{s['max']:.{digits}f}, {s['n']})"


def print_rows(rows, old_id, new_label):
    print()
    print(f"## bench-compare: new ({new_label}) / old ({old_id[:12]})")
    print()
    print("| runs | row | old | new | new/old median (min-max, rounds) "
          "| vs plain: old / new | vs plain, new/old |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        # Instruction counts tell a 1% change: three digits.
        digits = 3 if r["unit"] == "instr" else 2
        ratio_text = spread_text(r["new_over_old"], digits)
        vs_text, vs_ratio_text = "", ""
        if r["vs"]:
            o = r["old_vs"]["median"] if r["old_vs"] else None
            n = r["new_vs"]["median"] if r["new_vs"] else None
            vs_text = f"{fmt(o)}x / {fmt(n)}x {r['vs']}"
            vs_ratio_text = spread_text(r.get("vs_new_over_old"), digits)
        what = r["scenario"] if r["figure"] == r["scenario"] else f"{r['scenario']}: {r['figure']}"
        unit = r["unit"]
        old = fmt(r["old"]["median"], unit) if r["old"] else "n/a"
        new = fmt(r["new"]["median"], unit) if r["new"] else "n/a"
        print(f"| {r['config']} | {r['group']} {what} ({unit}) | {old} | {new} | {ratio_text} "
              f"| {vs_text} | {vs_ratio_text} |")
    print()
    print("ops/s rows: new/old above 1 is faster; us/ms rows (latency) and instr rows "
          "(callgrind): below 1 is faster; their 'vs plain' is plain / this, as for ops/s.")


def main():
    ref = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else os.environ.get("REF", "")
    rounds = env_int("BENCH_COMPARE_ROUNDS", 5, 1)
    latency_rounds = env_int("BENCH_COMPARE_LATENCY_ROUNDS", 1, 0)
    big_keys = env_int("BENCH_COMPARE_BIG_KEYS", 100, 1)
    for needed in (BENCH, NEW_MODULE):
        if not needed.is_file():
            sys.exit(f"bench-compare: {needed} is missing: run `make bench-compare` "
                     "(it builds the module and the bench)")
    old_id, old_so = build_old(ref)
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
    have_valgrind = all(shutil.which(t) for t in ("valgrind", "callgrind_control",
                                                   "callgrind_annotate"))
    callgrind_runs = env_int("BENCH_COMPARE_CALLGRIND", 3 if have_valgrind else 0, 0)
    if callgrind_runs and not have_valgrind:
        sys.exit("bench-compare: BENCH_COMPARE_CALLGRIND needs valgrind (apt-get install valgrind)")
    if not have_valgrind:
        say("no valgrind: no instruction counts (apt-get install valgrind)")
    if callgrind_runs:
        rows += instruction_rows(builds, callgrind_runs, rundir)
    print_rows(rows, old_id, head)
    repeats = repeated_slow_writes(runs, rounds)
    print_repeats(repeats, old_id)
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
           "small_keys": SMALL_KEYS, "callgrind_runs": callgrind_runs,
           "started_unix_s": started, "wall_s": took,
           "load_average": load, "runs_dir": str(rundir), "rows": rows,
           "repeated_slow_writes": [
               {"build": b, "scenario": sc, "growths": g, "counts": [[c, us] for c, us in at.items()]}
               for (b, sc), (g, at) in repeats.items()]}
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.rename(out)
    print(f"results in {out}")


if __name__ == "__main__":
    main()
