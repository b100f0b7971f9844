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

import glob
import os
import random
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

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


def resp(args):
    parts = [str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def send_all(port, commands):
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        batch = []
        for c in commands:
            batch.append(c)
            if len(batch) == 1000:
                flush(s, f, batch)
                batch = []
        flush(s, f, batch)


def flush(s, f, batch):
    s.sendall(b"".join(resp(c) for c in batch))
    for c in batch:
        line = f.readline()
        if not line or line.startswith(b"-"):
            sys.exit(f"topn-write-callgrind: {c[0]}: {line!r}")


def run(row, create, warm_hours, calls, late):
    port = random.randrange(20_000, 40_000)
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"callgrind.{row}.%p"
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
         *os.environ.get("TOPN_CG_VALGRIND", "").split(), "redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
         "--loadmodule", str(MODULE)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.1)
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

        send_all(port, [create.split()] + [incr(e) for e in warm])
        subprocess.run(["callgrind_control", "-i", "on", str(server.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        send_all(port, [incr(e) for e in measured])
        subprocess.run(["callgrind_control", "-i", "off", str(server.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        server.terminate()
        server.wait()
    [path] = glob.glob(str(out).replace("%p", str(server.pid)))
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", path], capture_output=True,
                          text=True, check=True).stdout
    m = re.search(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*:call \[", text, re.M)
    total = re.search(r"^\s*([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text, re.M)
    cron = re.search(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*:serverCron \[", text, re.M)
    if not m or not total:
        sys.exit(f"topn-write-callgrind: no call() or totals in {path}")
    num = lambda g: int(g.group(1).replace(",", "")) / len(measured) if g else 0
    # serverCron runs by the clock, and valgrind's clock runs slow: left out.
    return num(m), num(total) - num(cron), path


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
