#!/usr/bin/env python3
"""What following renamed keys of ours costs a server at scale, as
docs/design.md "Keys that move" quotes it:

    scripts/keys-that-move.py [MODULE [SERVER]]

Each scenario on a fresh server (default Debian's redis-server and
target/release/librecipes.so), in a scratch directory, with the test-only
view on (its step timings: the most CPU a timer step of the module took):

- search: KEYS plain keys (`DEBUG POPULATE`), 8 ULIST keys with an expiring
  value renamed at once; keys the search looked at a second, and the main
  thread's CPU (`INFO cpu`) while it searched against 10 s idle before;
- idle: 2 x KEYS plain keys, a ULIST and a TOPN key; the main thread's CPU
  over 10 s idle, over 10 s after one RENAME of each, once they are found,
  then the same after 500 more renames;
- reload: KEYS plain keys and a ULIST key, `DEBUG RELOAD`, 10 s idle, then a
  MULTI renaming the ULIST key and 70 missing keys; the slowest PING answer
  over the next 5 s (a thread PINGs every millisecond);
- loadaof: an AOF of KEYS plain keys (its RDB preamble) whose tail renames a
  ULIST key, replayed by `DEBUG LOADAOF`; the slowest PING over 5 s after;
- renames: an AOF of KEYS / 10 plain keys and 40,000 ULIST keys, without
  and with a rename of each, replayed by `DEBUG LOADAOF`: how long each load
  took, the slowest PING over 5 s after.

Env: KEYS (default 1000000), SCENARIOS (comma-separated, default all).
Wall-clock figures: run it on a quiet machine.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import callgrind

ROOT = Path(__file__).resolve().parent.parent
KEYS = int(os.environ.get("KEYS", "1000000"))


class Server:
    """A redis-server with the module, in a scratch dir, stopped on exit."""

    def __init__(self, module, binary, *args):
        self.dir = tempfile.mkdtemp(prefix="keys-that-move-")
        self.port = free_port()
        env = dict(os.environ, RECIPES_TEST_SCHEDULES="1")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
             "--save", "", "--enable-debug-command", "yes", *args,
             "--loadmodule", str(module)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.time() + 30
        while True:
            try:
                self.c = callgrind.Conn(self.port)
                break
            except OSError:
                if time.time() > deadline:
                    callgrind.fail(f"{binary} did not start")
                time.sleep(0.1)

    def cmd(self, *args):
        return self.c.cmd(*args)

    def info(self, section, field):
        text = self.c.cmd("INFO", section).decode()
        return re.search(rf"^{field}:(\S+)", text, re.M).group(1)

    def cpu(self):
        return sum(float(self.info("cpu", f"used_cpu_{k}_main_thread")) for k in ("sys", "user"))

    def followed(self):
        return int(self.info("recipes", "recipes_reclaim_followed_keys"))

    def slowest_step_us(self):
        listing = self.c.cmd("CONFIG", "GET", "recipes.test-schedules")[1].decode()
        return int(re.search(r"^slowest-step-us (\d+)", listing, re.M).group(1))

    def wait_found(self):
        while self.followed():
            time.sleep(0.5)

    def rewrite_aof(self):
        self.cmd("BGREWRITEAOF")
        time.sleep(0.2)
        while self.info("persistence", "aof_rewrite_in_progress") != "0":
            time.sleep(0.2)

    def stop(self):
        self.process.terminate()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_percent(server, seconds):
    """The main thread's CPU over the next `seconds`, in % of a CPU."""
    before = server.cpu()
    time.sleep(seconds)
    return (server.cpu() - before) / seconds * 100


def slowest_ping_ms(port, seconds):
    """The slowest PING answer over `seconds`, one every millisecond."""
    c = callgrind.Conn(port)
    slowest, end = 0.0, time.time() + seconds
    while time.time() < end:
        started = time.perf_counter()
        c.cmd("PING")
        slowest = max(slowest, time.perf_counter() - started)
        time.sleep(0.001)
    c.close()
    return slowest * 1000


def ulist(server, name):
    server.cmd("ULIST.CREATE", name, "VALUE", "v")
    server.cmd("ULIST.ADD", name, "EXPIRE", 86400, "v", "x")


def search(module, binary):
    s = Server(module, binary)
    s.cmd("DEBUG", "POPULATE", KEYS)
    for i in range(8):
        ulist(s, f"u{i}")
    idle = cpu_percent(s, 10)
    looked = int(s.info("recipes", "recipes_reclaim_searched_keys"))
    for i in range(8):
        s.cmd("RENAME", f"u{i}", f"renamed{i}")
    before, started = s.cpu(), time.time()
    s.wait_found()
    took = time.time() - started
    busy = (s.cpu() - before) / took * 100
    looked = int(s.info("recipes", "recipes_reclaim_searched_keys")) - looked
    print(f"search, {KEYS} plain keys, 8 renamed: {looked / took:.0f} keys a second, all "
          f"found after {took:.0f} s; main thread {busy:.2f}% of a CPU while it searched, "
          f"{idle:.2f}% idle; slowest step {s.slowest_step_us()} us", flush=True)
    s.stop()


def idle(module, binary):
    s = Server(module, binary)
    s.cmd("DEBUG", "POPULATE", 2 * KEYS)
    ulist(s, "u0")
    s.c.pipeline([("TOPN.INCR", "t0", f"m{i}") for i in range(300)])
    time.sleep(3)
    rows = [f"idle {cpu_percent(s, 10):.2f}%"]
    s.cmd("RENAME", "u0", "u1")
    s.cmd("RENAME", "t0", "t1")
    rows.append(f"after one RENAME of each {cpu_percent(s, 10):.2f}%")
    s.wait_found()
    rows.append(f"once found {cpu_percent(s, 10):.2f}%")
    s.c.pipeline([cmd for i in range(1, 251)
                  for cmd in (("RENAME", f"u{i}", f"u{i + 1}"), ("RENAME", f"t{i}", f"t{i + 1}"))])
    rows.append(f"after 500 more {cpu_percent(s, 10):.2f}%")
    s.wait_found()
    rows.append(f"once found {cpu_percent(s, 10):.2f}%")
    print(f"idle, {2 * KEYS} plain keys, the main thread: " + ", ".join(rows), flush=True)
    s.stop()


def reload(module, binary):
    s = Server(module, binary)
    s.cmd("DEBUG", "POPULATE", KEYS)
    ulist(s, "u")
    s.cmd("DEBUG", "RELOAD")
    time.sleep(10)
    pinged = {}
    probe = threading.Thread(target=lambda: pinged.setdefault("ms", slowest_ping_ms(s.port, 5)))
    probe.start()
    time.sleep(0.5)
    s.c.pipeline([("MULTI",), ("RENAME", "u", "u2")]
                 + [("RENAME", f"missing{i}", f"other{i}") for i in range(70)] + [("EXEC",)],
                 errors_ok=True)
    probe.join()
    print(f"reload, {KEYS} plain keys, then a MULTI of 71 renames: slowest PING "
          f"{pinged['ms']:.1f} ms; slowest step {s.slowest_step_us()} us", flush=True)
    s.stop()


def loadaof(module, binary):
    s = Server(module, binary, "--appendonly", "yes", "--auto-aof-rewrite-percentage", "0")
    s.cmd("DEBUG", "POPULATE", KEYS)
    s.rewrite_aof()
    ulist(s, "u")
    s.cmd("RENAME", "u", "u2")
    s.cmd("DEBUG", "LOADAOF")
    ping = slowest_ping_ms(s.port, 5)
    print(f"loadaof, {KEYS} plain keys and a rename: slowest PING {ping:.1f} ms after the "
          f"load; slowest step {s.slowest_step_us()} us", flush=True)
    s.stop()


def renames(module, binary):
    for renamed in (False, True):
        s = Server(module, binary, "--appendonly", "yes", "--auto-aof-rewrite-percentage", "0")
        s.cmd("DEBUG", "POPULATE", KEYS // 10)
        s.rewrite_aof()
        s.c.pipeline([cmd for i in range(40_000)
                      for cmd in (("ULIST.CREATE", f"b:{i}", "VALUE", "v"),
                                  ("ULIST.ADD", f"b:{i}", "EXPIRE", 86400, "v", "x"),
                                  ("RENAME", f"b:{i}", f"c:{i}") if renamed else ("PING",))])
        started = time.time()
        s.cmd("DEBUG", "LOADAOF")
        loaded = time.time() - started
        ping = slowest_ping_ms(s.port, 5)
        what = "40,000 ULIST keys renamed" if renamed else "the same keys, not renamed"
        print(f"renames, an AOF of {KEYS // 10} plain keys and {what}: loaded in "
              f"{loaded:.2f} s; slowest PING {ping:.1f} ms after; slowest step "
              f"{s.slowest_step_us()} us", flush=True)
        s.stop()


def main():
    module = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "target/release/librecipes.so")
    binary = sys.argv[2] if len(sys.argv) > 2 else "redis-server"
    scenarios = {"search": search, "idle": idle, "reload": reload, "loadaof": loadaof,
                 "renames": renames}
    wanted = os.environ.get("SCENARIOS", ",".join(scenarios)).split(",")
    for name in wanted:
        scenarios[name](module, binary)


if __name__ == "__main__":
    main()
