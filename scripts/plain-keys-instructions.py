#!/usr/bin/env python3
"""`make bench-plain-keys`: what the module costs keys that are not its own, in
instructions, which no other load on the machine can move (the `plain-keys`
bench group measures the same churns in server CPU time, which moves by about
5% between runs on a busy machine).

    scripts/plain-keys-instructions.py [MODULE]

For each churn of plain string keys (GET, SET of new keys, DEL, UNLINK,
expiry, eviction, RENAME, MOVE), three fresh servers under valgrind --tool=callgrind: one without the
module, one with it and no keys of its own, one with it and 2,000 ULIST keys
each holding a value with an expiry (their schedules full). The churn runs
over KEYS keys with instrumentation on only while it runs; a row is the bare
server's instructions per key over the module server's (1.0: the module costs
nothing; the goal is at least 0.97), median of PLAIN_KEYS_RUNS runs, each on
fresh servers (Redis seeds its hash tables at random, so counts move by about
1% between servers). Two figures: in the commands and the evictions (Redis's
call() and performEvictions(), inclusive: where a key's delete, expiry,
eviction, rename or move runs), and the whole server (also I/O, parsing, the
module's command filter, which sees every command before it runs, and the
timers, whose share valgrind's slowdown inflates about fifty times).

Env: PLAIN_KEYS (default 10000), PLAIN_KEYS_RUNS (3), REDIS_SERVER
(redis-server). Writes
target/bench/plain-keys-instructions.json.
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import callgrind

ROOT = Path(__file__).resolve().parent.parent
KEYS = int(os.environ.get("PLAIN_KEYS", "10000"))
SCHEDULED = 2_000
SERVER = os.environ.get("REDIS_SERVER", "redis-server")
RUNS = int(os.environ.get("PLAIN_KEYS_RUNS", "3"))
CHURNS = ["GET", "SET", "DEL", "UNLINK", "expiry", "eviction", "RENAME", "MOVE"]


def fill_schedules(c):
    c.pipeline([("ULIST.CREATE", f"ul:{i}", "VALUE", "v") for i in range(SCHEDULED)])
    c.pipeline([("ULIST.ADD", f"ul:{i}", "EXPIRE", 86400, "v", "x") for i in range(SCHEDULED)])


def churn(server, kind):
    """Sets the keys up (not counted), then counts the churn."""
    c = server.conn
    c.cmd("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    c.cmd("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    px = ("PX", 1) if kind == "expiry" else ()
    c.pipeline([("SET", f"k:{i}", "value", *px) for i in range(KEYS)])
    if kind == "eviction":
        c.cmd("CONFIG", "SET", "maxmemory", c.info_int("memory", "used_memory"))
    time.sleep(0.01)
    evicted = c.info_int("stats", "evicted_keys")
    server.instrument(True)
    work = {
        "GET": lambda i: ("GET", f"k:{i}"),
        "SET": lambda i: ("SET", f"n:{i}", "value"),
        "DEL": lambda i: ("DEL", f"k:{i}"),
        "UNLINK": lambda i: ("UNLINK", f"k:{i}"),
        # A read of an expired key deletes it, as the expiry cycle would.
        "expiry": lambda i: ("EXISTS", f"k:{i}"),
        "eviction": lambda i: ("SET", f"n:{i}", "value"),
        "RENAME": lambda i: ("RENAME", f"k:{i}", f"r:{i}"),
        "MOVE": lambda i: ("MOVE", f"k:{i}", 1),
    }[kind]
    c.pipeline([work(i) for i in range(KEYS)])
    server.instrument(False)
    if kind == "eviction" and c.info_int("stats", "evicted_keys") == evicted:
        sys.exit("plain-keys: eviction: nothing was evicted")
    removes = kind not in ("GET", "SET", "eviction")
    if removes and int(c.cmd("EXISTS", "k:0", f"k:{KEYS - 1}")) != 0:
        sys.exit(f"plain-keys: {kind}: keys left behind")


def instructions(module, outdir, kind, schedules):
    """(in the commands and evictions, whole server) instructions per key."""
    name = f"{kind}.{'bare' if not module else schedules}"
    args = ["--databases", "2", "--enable-debug-command", "yes"]
    if module:
        args += ["--loadmodule", str(module)]
    with callgrind.Server(outdir, name, args, server=SERVER) as server:
        if schedules == "full":
            fill_schedules(server.conn)
        churn(server, kind)
        path = server.stop()
    text = callgrind.annotate(path)
    work = sum(callgrind.inclusive(text, f) or 0 for f in ("call", "performEvictions"))
    keys = callgrind.calls_of(path, "call")
    return work / keys, callgrind.totals(path) / keys


def median(xs):
    return sorted(xs)[len(xs) // 2]


def fmt(xs):
    return f"{min(xs):.3f}-{max(xs):.3f}"


def main():
    module = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "target/release/librecipes.so")
    if not module.exists():
        sys.exit(f"plain-keys: no module at {module} (make build)")
    outdir = Path(tempfile.mkdtemp(prefix="plain-keys-"))
    rows = []
    print(f"instructions per key, {KEYS} keys, {SERVER}, median of {RUNS} runs (min-max); "
          "ratio = bare / with the module (>= 0.97 is the goal)")
    for kind in CHURNS:
        runs = {"bare": [], "empty": [], "full": []}
        for _ in range(RUNS):
            runs["bare"].append(instructions(None, outdir, kind, "bare"))
            for schedules in ("empty", "full"):
                runs[schedules].append(instructions(module, outdir, kind, schedules))
        for schedules in ("empty", "full"):
            ratios = [[b[i] / m[i] for b, m in zip(runs["bare"], runs[schedules])]
                      for i in (0, 1)]
            row = {"churn": kind, "schedules": schedules, "runs": runs,
                   "work_ratio": median(ratios[0]), "work_ratio_runs": ratios[0],
                   "server_ratio": median(ratios[1]), "server_ratio_runs": ratios[1]}
            rows.append(row)
            print(f"  {kind:9} schedules {schedules:5}: in the commands {row['work_ratio']:.3f} "
                  f"({fmt(ratios[0])}), whole server {row['server_ratio']:.3f} "
                  f"({fmt(ratios[1])})", flush=True)
    dest = ROOT / "target/bench"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "plain-keys-instructions.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
