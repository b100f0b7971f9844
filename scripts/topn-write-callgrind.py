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
  `VIEWS 6 12`.
Each stream key first takes TOPN_CG_WARM_HOURS hours of the stream (default
8), a pool key every member once and TOPN_CG_CALLS random ones (uninstrumented);
then TOPN_CG_CALLS events (default 20,000) of the next hour are measured. Printed per event: instructions inside Redis's call() (the
command itself: the module, its replication and its reply) and in the whole
server while they ran but serverCron (what a pipelined client waits for:
reading, parsing, the command, writing the replies, the module's timers);
their ratio to the floor's.
TOPN_CG_ROWS picks rows (comma-separated; default all); TOPN_CG_VALGRIND adds
valgrind options (e.g. --cache-sim=yes, then read the files with
callgrind_annotate).
"""

import os
import random
import sys
import time
from pathlib import Path

import callgrind

ROOT = Path(__file__).resolve().parent.parent
MODULE = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "release" / "librecipes.so"
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


def run(row, create, warm_hours, calls, late):
    OUT.mkdir(parents=True, exist_ok=True)
    valgrind_args = os.environ.get("TOPN_CG_VALGRIND", "").split()
    with callgrind.Server(OUT, row, ["--loadmodule", str(MODULE)],
                          valgrind_args=valgrind_args) as server:
        if late is None:
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
            back = (36 + 24) * HOUR_MS if late else 0

            def incr(e):
                m, by, h = e
                return ("TOPN.INCR", "k", f"m{m}", "BY", by, "AT", hour0 + h * HOUR_MS - back)

        server.conn.pipeline([create.split()] + [incr(e) for e in warm])
        server.instrument(True)
        server.conn.pipeline([incr(e) for e in measured])
        server.instrument(False)
        path = server.stop()
    text = callgrind.annotate(path)
    call = callgrind.inclusive(text, "call")
    if call is None:
        sys.exit(f"topn-write-callgrind: no call() in {path}")
    # serverCron runs by the clock, and valgrind's clock runs slow: left out.
    cron = callgrind.inclusive(text, "serverCron") or 0
    counted = callgrind.calls_of(path, "call")
    return call / counted, (callgrind.totals(path) - cron) / counted, path


def main():
    warm_hours = int(os.environ.get("TOPN_CG_WARM_HOURS", "8"))
    calls = int(os.environ.get("TOPN_CG_CALLS", "20000"))
    rows = {
        "write": ("TOPN.CREATE k BUCKET 3600 WINDOW 36", False),
        "floor": ("TOPN.CREATE k BUCKET 3600 WINDOW 36", True),
        "w24": ("TOPN.CREATE k BUCKET 3600 WINDOW 24", False),
        "views": ("TOPN.CREATE k BUCKET 3600 WINDOW 24 VIEWS 6 12", False),
        "pool": ("TOPN.CREATE k BUCKET 3600 WINDOW 24", None),
        "pool-views": ("TOPN.CREATE k BUCKET 3600 WINDOW 24 VIEWS 6 12", None),
    }
    picked = os.environ.get("TOPN_CG_ROWS", ",".join(rows)).split(",")
    got = {}
    for row in picked:
        create, late = rows[row]
        got[row] = run(row, create, warm_hours, calls, late)
        call, total, path = got[row]
        print(f"{row:6} call() {call:9,.0f}  server {total:9,.0f}  instr/event  ({path})",
              flush=True)
    if "floor" in got:
        fc, ft, _ = got["floor"]
        for row, (c, t, _) in got.items():
            print(f"{row:6} / floor: call() {c / fc:.3f}x  server {t / ft:.3f}x")
    for plain, viewed in (("w24", "views"), ("pool", "pool-views")):
        if plain in got and viewed in got:
            (c0, t0, _), (c1, t1, _) = got[plain], got[viewed]
            print(f"{viewed} / {plain}: call() {c1 / c0:.3f}x  server {t1 / t0:.3f}x")


if __name__ == "__main__":
    main()
