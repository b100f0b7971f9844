#!/usr/bin/env python3
"""Turns `make bench`'s results (target/bench/<group>.json) into the plots of
docs/benchmark.md (docs/img/*.png). `make plots` runs it in a venv under
target/ with matplotlib.

    python3 scripts/plots.py [RESULTS_DIR] [OUT_DIR]

A plot whose groups have no results is skipped with a message, so a partial
run (`BENCH_ONLY=...`) still updates what it measured. The JSON schema is
described in examples/bench/json.rs.
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "bench"
OUT = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs" / "img"

COLORS = {
    "plain": "#9e9e9e",
    "module": "#d84315",
    "lua": "#1565c0",
    "multi": "#6a1b9a",
    "recipe": "#1565c0",
    "gem": "#2e7d32",
}


def load(group):
    path = RESULTS / f"{group}.json"
    return json.loads(path.read_text()) if path.exists() else None


def figures(result):
    for scenario in result["scenarios"]:
        for figure in scenario["figures"]:
            if figure.get("value") is not None:
                yield figure


def footer(fig, results):
    """Where the numbers come from: server, machine, command."""
    first = results[0]
    text = (
        f"Redis {first.get('redis_version', '?')}, "
        f"{first.get('settings', {}).get('cpus', '?')} CPUs; "
        f"{first.get('command', '')}"
    )
    fig.text(0.01, -0.06, text, fontsize=6, color="#555555", wrap=True)


def save(fig, name):
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / name, bbox_inches="tight", dpi=110)
    plt.close(fig)
    print(f"plots: wrote {OUT / name}")


def throughput():
    """Each family's write command against the plain command it replaces
    (1.0) and the recipe as a Lua script or MULTI/EXEC."""
    groups = ["rv-write", "tl-write", "topn-write", "ulist-write", "hcounter-write"]
    results = [r for r in map(load, groups) if r]
    if not results:
        print("plots: no *-write results, throughput skipped")
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    x = 0
    ticks, labels, seen = [], [], set()
    for result in results:
        figs = list(figures(result))
        plain = next((f for f in figs if f.get("role") == "plain"), None)
        if plain is None:
            continue
        shown = [f for f in figs if f.get("role") in ("plain", "module", "lua", "multi")]
        start = x
        for f in shown:
            role = f["role"]
            # The bench's own ratio (the median of per-round ratios) where
            # it gives one, so the plot says what its table says.
            ratio = next((r["value"] for r in f.get("ratios", [])
                          if r["vs"] == plain["id"] and r["value"] is not None),
                         f["value"] / plain["value"])
            label = role if role not in seen else None
            seen.add(role)
            ax.bar(x, ratio, color=COLORS[role], label=label)
            ax.text(x, ratio, f"{ratio:.2f}", ha="center", va="bottom", fontsize=7)
            ax.text(x, 0.02, f["id"], rotation=90, ha="center", va="bottom", fontsize=6,
                    color="white")
            x += 1
        ticks.append((start + x - 1) / 2)
        labels.append(result["group"].replace("-write", "").upper())
        x += 1
    ax.axhline(1.0, color="#555555", linewidth=0.8, linestyle="--")
    ax.set_xticks(ticks, labels)
    ax.set_ylabel("throughput / the plain command")
    ax.set_title("Writes: the module's one command vs the plain command and the recipe")
    ax.legend(fontsize=8)
    footer(fig, results)
    save(fig, "throughput.png")


def topn_reads():
    """Server-side time (SLOWLOG) of one top-10 read against the window it
    covers: the recipe's ZUNIONSTORE + ZREVRANGE (one ZREVRANGE for one
    bucket) against TOPN.TOP ... LAST k, on the master and a replica (the
    latency group's `topn-reads` experiment)."""
    result = load("latency")
    scenario = result and next(
        (s for s in result["scenarios"] if s["id"] == "topn-reads"), None)
    if not scenario:
        print("plots: no latency topn-reads results, TOPN reads skipped")
        return
    series = {}
    for f in scenario["figures"]:
        params = f.get("params", {})
        if f.get("value") is None or "window_buckets" not in params:
            continue
        if params.get("aged_buckets", 0):
            continue
        series.setdefault(params["side"], {})[params["window_buckets"]] = f["value"] / 1000.0
    fig, ax = plt.subplots(figsize=(6, 4))
    styles = {"recipe": (COLORS["recipe"], "recipe: ZUNIONSTORE + ZREVRANGE"),
              "master": (COLORS["module"], "TOPN.TOP k LAST n, master"),
              "replica": ("#ff8a65", "TOPN.TOP k LAST n, replica")}
    for side, points in series.items():
        color, label = styles.get(side, ("k", side))
        xs = sorted(points)
        ax.plot(xs, [points[w] for w in xs], marker="o", color=color, label=label)
    ax.axhline(1.0, color="#555555", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_xlabel("window read (hourly buckets of 50,000 events)")
    ax.set_ylabel("ms server-side (SLOWLOG, max of 10; log scale)")
    ax.set_title("TOPN: top 10 over the last n buckets")
    ax.legend(fontsize=8)
    footer(fig, [result])
    save(fig, "topn-reads.png")


def memory():
    """Bytes per stored value against the gem's layout, by size of the
    partition (HCOUNTER) or list (ULIST), as MEMORY USAGE reports them."""
    hc, ul = load("hcounter-memory"), load("ulist-small")
    results = [r for r in (hc, ul) if r]
    if not results:
        print("plots: no hcounter-memory/ulist-small results, memory skipped")
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    panels = [
        (axes[0], hc, "cells_per_partition", "cells per partition",
         "HCOUNTER: bytes per cell", {"module": "HCOUNTER", "gem": "gem (a hash per partition)"}),
        (axes[1], ul, "values_per_list", "values per list",
         "ULIST: bytes per value", {"module": "ULIST", "gem": "SADD / the gem's zsets"}),
    ]
    for ax, result, param, xlabel, title, names in panels:
        if not result:
            ax.set_visible(False)
            continue
        lines = {}
        for f in figures(result):
            params = f.get("params", {})
            if params.get("by") != "MEMORY USAGE" or param not in params:
                continue
            key = (f.get("role"), params.get("expiring", False))
            lines.setdefault(key, {})[params[param]] = f["value"]
        for (role, expiring), points in sorted(lines.items(), key=str):
            xs = sorted(points)
            label = names.get(role, role) + (", expiring" if expiring else "")
            ax.plot(xs, [points[x] for x in xs], marker="o", color=COLORS.get(role, "k"),
                    linestyle="--" if expiring else "-", label=label)
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("bytes (MEMORY USAGE)")
        ax.set_title(title)
        ax.legend(fontsize=7)
    footer(fig, results)
    save(fig, "memory.png")


if __name__ == "__main__":
    throughput()
    topn_reads()
    memory()
