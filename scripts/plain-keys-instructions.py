#!/usr/bin/env python3
"""`make bench-plain-keys`: what the module costs keys that are not its own, in
instructions, which no other load on the machine can move (the `plain-keys`
bench group measures the same churns in server CPU time, which moves by about
5% between runs on a busy machine).

    scripts/plain-keys-instructions.py [MODULE [SERVER ...]]

For each server (default: Debian's redis-server, Redis 7.0.15; `make
bench-plain-keys` adds Redis 8.2.3) and each churn of plain string keys (GET,
SET of new keys, DEL, UNLINK, EXPIRE, expiry, eviction, RENAME, MOVE), fresh
servers under valgrind --tool=callgrind: one without the module (and 2,000
more plain keys), one with it and 2,000 ULIST keys each holding a value with
an expiry (every schedule full). The churn runs over KEYS keys with instrumentation on only while it
runs; a row is the bare server's instructions per key over the module
server's (1.0: the module costs nothing; the goal is at least 0.99), median
of PLAIN_KEYS_RUNS runs, each on fresh servers (Redis seeds its hash tables
at random, so counts move by about 1% between servers). Two figures: inside
`processCommand` (inclusive: the command, the evictions it makes room with,
and anything a module hooks before a command runs), and the whole server
(also I/O, parsing and the timers, whose share valgrind's slowdown inflates
about fifty times).

Env: PLAIN_KEYS (default 10000), PLAIN_KEYS_RUNS (7: fewer cannot tell 0.99 from 0.98), PLAIN_KEYS_CHURNS
(comma-separated, default all). Writes target/bench/plain-keys-instructions.json.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import callgrind

ROOT = Path(__file__).resolve().parent.parent
KEYS = int(os.environ.get("PLAIN_KEYS", "10000"))
SCHEDULED = 2_000
RUNS = int(os.environ.get("PLAIN_KEYS_RUNS", "7"))
CHURNS = os.environ.get(
    "PLAIN_KEYS_CHURNS", "GET,SET,DEL,UNLINK,EXPIRE,expiry,eviction,RENAME,MOVE").split(",")


def fill_schedules(c):
    c.pipeline([("ULIST.CREATE", f"ul:{i}", "VALUE", "v") for i in range(SCHEDULED)])
    c.pipeline([("ULIST.ADD", f"ul:{i}", "EXPIRE", 86400, "v", "x") for i in range(SCHEDULED)])


def fill_plain(c):
    """The bare server's keys in place of the ULIST keys: the same number of
    keys, so both servers' hash tables are as full."""
    c.pipeline([("SET", f"ul:{i}", "v") for i in range(SCHEDULED)])


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
        "EXPIRE": lambda i: ("EXPIRE", f"k:{i}", 3600),
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
    removes = kind not in ("GET", "SET", "EXPIRE", "eviction")
    if removes and int(c.cmd("EXISTS", "k:0", f"k:{KEYS - 1}")) != 0:
        sys.exit(f"plain-keys: {kind}: keys left behind")


def instructions(server, module, outdir, kind):
    """(inside processCommand, whole server) instructions per key."""
    name = f"{kind}.{'bare' if not module else 'full'}"
    args = ["--databases", "2", "--enable-debug-command", "yes"]
    if module:
        args += ["--loadmodule", str(module)]
    with callgrind.Server(outdir, name, args, server=server) as srv:
        (fill_schedules if module else fill_plain)(srv.conn)
        churn(srv, kind)
        path = srv.stop()
    text = callgrind.annotate(path)
    keys = callgrind.calls_of(path, "call")
    return (callgrind.inclusive(text, "processCommand") or 0) / keys, callgrind.totals(path) / keys


def median(xs):
    return sorted(xs)[len(xs) // 2]


def fmt(xs):
    return f"{min(xs):.3f}-{max(xs):.3f}"


def version(server):
    out = subprocess.run([server, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"v=(\S+)", out)
    return m.group(1) if m else server


def main():
    module = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "target/release/librecipes.so")
    if not module.exists():
        sys.exit(f"plain-keys: no module at {module} (make build)")
    servers = sys.argv[2:] or ["redis-server"]
    outdir = Path(tempfile.mkdtemp(prefix="plain-keys-"))
    rows = []
    names = [version(s) for s in servers]
    print(f"instructions per key, {KEYS} keys, median of {RUNS} runs (min-max), every schedule "
          f"full; ratio = bare / with the module (>= 0.99 is the goal)")
    print("| churn | " + " | ".join(f"{n}: in processCommand | {n}: whole server"
                                     for n in names) + " |")
    print("|---|" + "---|---|" * len(names))
    for kind in CHURNS:
        cells = []
        for server, name in zip(servers, names):
            runs = {"bare": [], "full": []}
            for _ in range(RUNS):
                runs["bare"].append(instructions(server, None, outdir, kind))
                runs["full"].append(instructions(server, module, outdir, kind))
            ratios = [[b[i] / m[i] for b, m in zip(runs["bare"], runs["full"])] for i in (0, 1)]
            row = {"churn": kind, "server": name, "schedules": "full", "runs": runs,
                   "work_ratio": median(ratios[0]), "work_ratio_runs": ratios[0],
                   "server_ratio": median(ratios[1]), "server_ratio_runs": ratios[1]}
            rows.append(row)
            cells += [f"{row['work_ratio']:.3f} ({fmt(ratios[0])})",
                      f"{row['server_ratio']:.3f} ({fmt(ratios[1])})"]
        print(f"| {kind} | " + " | ".join(cells) + " |", flush=True)
    dest = ROOT / "target/bench"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "plain-keys-instructions.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
