#!/usr/bin/env python3
"""Instructions per TOPN.INCR event under callgrind, on the stream of the
bench's `topn-vs-topk` group (Pareto 1.2 over 200,000 members, BY 1-20,
hourly buckets of 50,000 events, the leaders changing for hours 12-24).

    scripts/topn-write-callgrind.py [MODULE]

Rows (each a fresh redis-server under valgrind --tool=callgrind, counting
only while the measured commands run):
- write: `TOPN.INCR key member BY n AT ms` into `BUCKET 3600 WINDOW 36`;
- floor: the same commands with AT a day before the window (parsed,
  checked, answered, nothing written);
- w24 / views: the same writes into `WINDOW 24`, without and with
  `VIEWS 6 12`;
- pool / pool-views: the `topn-write` group's `TOPN.INCR key member` (a
  pool of 10,000 members, uniform: counts tie a lot), without and with
  `VIEWS 6 12`;
- backfill / backfill-views: the `topn-write` group's backfill, scaled down
  by TOPN_CG_BACKFILL_SCALE (default 4: 24 hours of 12,500 events over
  50,000 members), `TOPN.INCR key member AT ms` into `WINDOW 24` without
  and with `VIEWS 6 12`, oldest hour first, every `AT` in the past (the
  24 hours up to the server's time): unit counts, a tenth of an hour's
  events on a skewed head, popularity reversing half-way. The whole load
  is measured (nothing before it).
Each stream key first takes TOPN_CG_WARM_HOURS hours of the stream (default
8), a pool key every member once and TOPN_CG_CALLS random ones (uninstrumented);
then TOPN_CG_CALLS events (default 20,000) of the next hour are measured. Printed per event: instructions inside Redis's call() (the
command itself: the module, its replication and its reply) and in the whole
server while they ran but serverCron (what a pipelined client waits for:
reading, parsing, the command, writing the replies, the module's timers);
their ratio to the floor's.
Batch rows (the `topn-capacity` group's Zipf stream, s = 1.5 over 1,000,000
members, hourly buckets of 50,000 events, TOPN_CG_BATCH events a call,
default 10): cap-batch, `TOPN.INCRBY key AT ms n member ...` into
`CAPACITY 117` (TOPN_CG_CAPACITY); topk-batch, `TOPK.INCRBY key member n ...` into
`TOPK.RESERVE k 10 2000 7 0.925` (RedisBloom: TOPN_CG_BLOOM, default the
cached redisbloom-2.8.2 of scripts/compat-servers.sh). Per event they also
print the module's handler and the key's update with its replies (TOPN:
the command's entry, its arguments' decoding in, and the capped layout's
`Window::incr_many`;
TOPK: `TopK_Incrby_Cmd` and `TopK_Add`). Not in the default rows (they
need RedisBloom).
exact-batch: the same `TOPN.INCRBY` calls into an exact key (`WINDOW 24`, no
CAPACITY; its update the full layout's `Window::incr_many`).
TOPN_CG_ROWS picks rows (comma-separated; default all but the batch rows);
TOPN_CG_VALGRIND adds valgrind options (e.g. --cache-sim=yes, then read the
files with callgrind_annotate).
"""

import os
import random
import subprocess
import sys
import time

import callgrind

from callgrind import ROOT

MODULE = callgrind.module_arg()
OUT = ROOT / "target" / "topn-write-callgrind"
HOUR_MS = 3_600_000
PER_HOUR = 50_000
MEMBERS = 200_000


def stream(hours):
    """(member, by, hour) of the first `hours` hours, oldest first (the bench's
    shape; not its exact draws)."""
    rng = random.Random(36)
    for h in range(hours):
        for _ in range(PER_HOUR):
            u = rng.uniform(sys.float_info.epsilon, 1.0)
            m = (int(u ** (-1.0 / 1.2)) - 1) % MEMBERS
            if 12 <= h < 24:
                m = (m * 7_919 + 13) % MEMBERS
            yield m, rng.randint(1, 20), h


def zipf(hours):
    """(member, hour) of the `topn-capacity` group's Zipf stream (its shape,
    not its exact draws), oldest first."""
    rng = random.Random(29)
    for h in range(hours):
        for _ in range(PER_HOUR):
            u = rng.uniform(sys.float_info.epsilon, 1.0)
            yield (int(u ** -2.0) - 1) % 1_000_000, h


def backfill(scale):
    """`TOPN.INCR k member AT ms` of the `topn-write` group's backfill (its
    shape, not its exact draws), `scale` times smaller: 24 hours up to now,
    oldest first."""
    rng = random.Random(24)
    per_hour, members, head = 50_000 // scale, 200_000 // scale, 1_000 // scale
    now = int(time.time() * 1000)
    first = (now // HOUR_MS - 23) * HOUR_MS
    calls = []
    for h in range(24):
        start = first + h * HOUR_MS
        span = max(1, min(HOUR_MS, now - start))
        for e in range(per_hour):
            if e < per_hour // 10:
                u = rng.random()
                rank = int(head * u * u * u)
            else:
                rank = rng.randrange(members)
            m = rank if h < 12 else members - 1 - rank
            calls.append(("TOPN.INCR", "k", 100_000_000 + m, "AT", start + e * span // per_hour))
    return calls


def batch_calls(topk, events, size, hour0):
    """The events as calls of `size` (within one hour each, as the bench's)."""
    calls, run = [], []
    for e in events + [None]:
        if run and (e is None or len(run) == size or e[1] != run[0][1]):
            if topk:
                calls.append(["TOPK.INCRBY", "k"] + [x for m, _ in run for x in (f"m{m}", 1)])
            else:
                at = hour0 + run[0][1] * HOUR_MS
                calls.append(["TOPN.INCRBY", "k", "AT", at] + [x for m, _ in run for x in (1, f"m{m}")])
            run = []
        if e is not None:
            run.append(e)
    return calls


def bloom_module():
    path = os.environ.get("TOPN_CG_BLOOM")
    if path:
        return path
    got = subprocess.run([str(ROOT / "scripts" / "compat-servers.sh"), "path", "redisbloom-2.8.2"],
                         capture_output=True, text=True)
    if got.returncode != 0 or not got.stdout.strip():
        sys.exit("topn-write-callgrind: no RedisBloom (set TOPN_CG_BLOOM)")
    return got.stdout.strip()


def run(row, create, warm_hours, calls, kind):
    """One row; `kind`: None the pool, False the stream written, True the
    stream a day before its window (the floor), "topn" / "exact" / "topk" the
    batch rows, "backfill" the backfill."""
    OUT.mkdir(parents=True, exist_ok=True)
    valgrind_args = os.environ.get("TOPN_CG_VALGRIND", "").split()
    modules = ["--loadmodule", str(MODULE)]
    if kind in ("topn", "topk"):
        modules += ["--loadmodule", bloom_module()]
    with callgrind.Server(OUT, row, modules, valgrind_args=valgrind_args) as server:
        if kind == "backfill":
            warm = []
            measured = backfill(int(os.environ.get("TOPN_CG_BACKFILL_SCALE", "4")))
            incr = None
        elif kind in ("topn", "exact", "topk"):
            size = int(os.environ.get("TOPN_CG_BATCH", "10"))
            hour0 = (int(time.time() * 1000) // HOUR_MS - warm_hours) * HOUR_MS + 1
            events = list(zipf(warm_hours + 1))
            warm = batch_calls(kind == "topk", [e for e in events if e[1] < warm_hours], size, hour0)
            measured = batch_calls(kind == "topk", [e for e in events if e[1] == warm_hours][:calls],
                                   size, hour0)
            incr = None
        elif kind is None:
            # The pool: 9-digit ids, each counted once, then uniform draws.
            rng = random.Random(5)
            ids = [100_000_000 + i for i in range(10_000)]
            warm = ids + [rng.choice(ids) for _ in range(calls)]
            measured = [rng.choice(ids) for _ in range(calls)]

            def incr(m):
                return ("TOPN.INCR", "k", m)
        else:
            # The stream's last hour is the current one, as in the bench.
            hour0 = (int(time.time() * 1000) // HOUR_MS - warm_hours) * HOUR_MS + 1
            events = list(stream(warm_hours + 1))
            warm = [e for e in events if e[2] < warm_hours]
            measured = [e for e in events if e[2] == warm_hours][:calls]
            back = (36 + 24) * HOUR_MS if kind else 0

            def incr(e):
                m, by, h = e
                return ("TOPN.INCR", "k", f"m{m}", "BY", by, "AT", hour0 + h * HOUR_MS - back)

        if incr is not None:
            warm, measured = [incr(e) for e in warm], [incr(e) for e in measured]
        server.conn.pipeline([create.split()] + warm)
        server.instrument(True)
        server.conn.pipeline(measured)
        server.instrument(False)
        path = server.stop()
    text, call, counted = callgrind.commands(path)
    # serverCron runs by the clock, and valgrind's clock runs slow: left out.
    cron = callgrind.inclusive(text, "serverCron") or 0
    per = counted
    parts = {}
    if kind in ("topn", "exact", "topk"):
        # Per event: the calls hold `calls` events between them.
        per = calls * counted / len(measured)
        names = {"topn": (r"recipes::topn::FAMILY::entry",
                          r"<recipes::topn::layout::capped::Capped as recipes::topn::window::Window>::incr_many"),
                 "exact": (r"recipes::topn::FAMILY::entry",
                           r"<recipes::topn::layout::full::key::Full as recipes::topn::window::Window>::incr_many"),
                 "topk": ("TopK_Incrby_Cmd", "TopK_Add")}[kind]
        for label, name in zip(("handler", "update+replies"), names):
            n = callgrind.inclusive(text, name)
            parts[label] = None if n is None else n / per
    return call / per, (callgrind.totals(path) - cron) / per, path, parts


def main():
    warm_hours = int(os.environ.get("TOPN_CG_WARM_HOURS", "8"))
    calls = int(os.environ.get("TOPN_CG_CALLS", "20000"))
    capacity = int(os.environ.get("TOPN_CG_CAPACITY", "117"))
    rows = {
        "write": ("TOPN.CREATE k BUCKET 3600 WINDOW 36", False),
        "floor": ("TOPN.CREATE k BUCKET 3600 WINDOW 36", True),
        "w24": ("TOPN.CREATE k BUCKET 3600 WINDOW 24", False),
        "views": ("TOPN.CREATE k BUCKET 3600 WINDOW 24 VIEWS 6 12", False),
        "pool": ("TOPN.CREATE k BUCKET 3600 WINDOW 24", None),
        "pool-views": ("TOPN.CREATE k BUCKET 3600 WINDOW 24 VIEWS 6 12", None),
        "backfill": ("TOPN.CREATE k BUCKET 3600 WINDOW 24", "backfill"),
        "backfill-views": ("TOPN.CREATE k BUCKET 3600 WINDOW 24 VIEWS 6 12", "backfill"),
        "cap-batch": (f"TOPN.CREATE k BUCKET 3600 WINDOW 24 CAPACITY {capacity}", "topn"),
        "exact-batch": ("TOPN.CREATE k BUCKET 3600 WINDOW 24", "exact"),
        "topk-batch": ("TOPK.RESERVE k 10 2000 7 0.925", "topk"),
    }
    default = [r for r in rows if not r.endswith("-batch")]
    picked = os.environ.get("TOPN_CG_ROWS", ",".join(default)).split(",")
    got = {}
    for row in picked:
        create, kind = rows[row]
        got[row] = run(row, create, warm_hours, calls, kind)
        call, total, path, parts = got[row]
        more = "".join(f"  {k} {'-' if v is None else f'{v:,.0f}'}" for k, v in parts.items())
        print(f"{row:6} call() {call:9,.0f}  server {total:9,.0f}{more}  instr/event  ({path})",
              flush=True)
    if "floor" in got:
        fc, ft, _, _ = got["floor"]
        for row, (c, t, _, _) in got.items():
            print(f"{row:6} / floor: call() {c / fc:.3f}x  server {t / ft:.3f}x")
    for plain, viewed in (("w24", "views"), ("pool", "pool-views"),
                          ("backfill", "backfill-views")):
        if plain in got and viewed in got:
            (c0, t0, _, _), (c1, t1, _, _) = got[plain], got[viewed]
            print(f"{viewed} / {plain}: call() {c1 / c0:.3f}x  server {t1 / t0:.3f}x")
    if "cap-batch" in got and "topk-batch" in got:
        (c0, t0, _, _), (c1, t1, _, _) = got["topk-batch"], got["cap-batch"]
        print(f"cap-batch / topk-batch: call() {c1 / c0:.3f}x  server {t1 / t0:.3f}x")


if __name__ == "__main__":
    main()
