#!/usr/bin/env python3
"""Instructions per TOPN.TOP call under callgrind, on a key of `BUCKET 3600
WINDOW 24`: 24 hourly buckets of 50,000 events over 200,000 members, the
newest the current hour (the `topn-read` and `topn-reads` keys' size).

    scripts/topn-read-callgrind.py [MODULE]

Rows (each a fresh redis-server under valgrind --tool=callgrind, counting
only while the measured reads run, after one read not counted):
- top: `TOPN.TOP k 10` at the server's time, unit events with a skewed head
  (a tenth of a bucket's events on its first 1,000 members);
- last1: `TOPN.TOP k 10 LAST 1` at the server's time (the newest bucket
  alone), weighted events (BY 1-100) spread evenly over the members;
- sparse: `TOPN.TOP k 10 LAST 2` at the server's time, the two newest
  buckets of 500 weighted events each (a read window of few entries on a key
  of many members);
- sparse1: `TOPN.TOP k 10 LAST 1` on that key (one bucket of few entries).
Printed per read: instructions inside Redis's call() (the command, its
reply) and the first two members of the reply. TOPN_CG_ROWS picks rows
(comma-separated; default all), TOPN_CG_READS the reads counted (default 10).
"""

import os
import random
import sys
import time

import callgrind

from callgrind import ROOT

MODULE = callgrind.module_arg()
OUT = ROOT / "target" / "topn-read-callgrind"
HOUR_MS = 3_600_000
BUCKETS = 24
PER_BUCKET = 50_000
MEMBERS = 200_000
SPARSE = 500
PAIRS = 100


def fill(kind):
    """`TOPN.INCRBY k AT ms by member ...` calls, oldest bucket first."""
    rng = random.Random(24)
    hour0 = (int(time.time() * 1000) // HOUR_MS - (BUCKETS - 1)) * HOUR_MS + 1
    calls = []
    for h in range(BUCKETS):
        sparse = kind.startswith("sparse") and h >= BUCKETS - 2
        events = SPARSE if sparse else PER_BUCKET
        pairs = []
        for _ in range(events):
            if kind == "top":
                skewed = rng.random() < 0.1
                m = rng.randrange(1_000) if skewed else rng.randrange(MEMBERS)
                pairs.append((1, m))
            else:
                pairs.append((rng.randint(1, 100), rng.randrange(MEMBERS)))
        for i in range(0, len(pairs), PAIRS):
            args = ["TOPN.INCRBY", "k", "AT", hour0 + h * HOUR_MS]
            for by, m in pairs[i:i + PAIRS]:
                args += [by, f"m{m}"]
            calls.append(args)
    return calls


READS = {
    "top": ("TOPN.TOP", "k", 10),
    "last1": ("TOPN.TOP", "k", 10, "LAST", 1),
    "sparse": ("TOPN.TOP", "k", 10, "LAST", 2),
    "sparse1": ("TOPN.TOP", "k", 10, "LAST", 1),
}


def run(row, reads):
    OUT.mkdir(parents=True, exist_ok=True)
    with callgrind.Server(OUT, row, ["--loadmodule", str(MODULE)]) as server:
        server.conn.pipeline([["TOPN.CREATE", "k", "BUCKET", 3600, "WINDOW", BUCKETS]])
        server.conn.pipeline(fill(row))
        # The upkeep timer's steps after the fill (sealing, accumulators) come first.
        time.sleep(2)
        first = server.conn.cmd(*READS[row])
        server.instrument(True)
        for _ in range(reads):
            server.conn.cmd(*READS[row])
        server.instrument(False)
        path = server.stop()
    _, call, counted = callgrind.commands(path)
    return call / counted, first[:2], path


def main():
    reads = int(os.environ.get("TOPN_CG_READS", "10"))
    picked = os.environ.get("TOPN_CG_ROWS", ",".join(READS)).split(",")
    for row in picked:
        per, first, path = run(row, reads)
        print(f"{row:6} call() {per:11,.0f} instr/read  first members {first}  ({path})", flush=True)


if __name__ == "__main__":
    main()
