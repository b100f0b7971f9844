"""What the instruction-counting scripts share: a redis-server under
valgrind --tool=callgrind (counting only while told), a plain RESP client,
and the inclusive count of a server function from the output file.

Used by bench-compare.py, plain-keys-instructions.py, topn-write-callgrind.py
and keys-that-move.py (run from scripts/, so this module is on sys.path).
"""

import glob
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent


def module_arg():
    """The module the script's first argument names, else this tree's release build."""
    return Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "release" / "librecipes.so"

def fail(msg):
    sys.exit(f"{os.path.basename(sys.argv[0])}: {msg}")


def resp(args):
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def reply(self, command=b"?", errors_ok=False):
        line = self.file.readline()
        if not line:
            fail("the server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"-" and not errors_ok:
            fail(f"{command}: error reply {rest!r}")
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        if kind == b"*":
            return [self.reply(command, errors_ok) for _ in range(int(rest))]
        return rest

    def pipeline(self, commands, errors_ok=False):
        """Sends `commands` 1,000 at a time; fails on an error reply unless
        `errors_ok`."""
        for i in range(0, len(commands), 1000):
            batch = commands[i:i + 1000]
            self.sock.sendall(b"".join(resp(c) for c in batch))
            for c in batch:
                self.reply(c[0], errors_ok)

    def cmd(self, *args):
        self.sock.sendall(resp(args))
        return self.reply(args[0])

    def info_int(self, section, field):
        text = self.cmd("INFO", section).decode()
        return int(re.search(rf"^{field}:(\d+)", text, re.M).group(1))

    def close(self):
        self.file.close()
        self.sock.close()


class Server:
    """A redis-server under callgrind on a free-ish loopback port, started with
    instrumentation off; `out` is its output file once stopped."""

    def __init__(self, outdir, name, server_args, server="redis-server", valgrind_args=()):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        pattern = outdir / f"callgrind.{name}.%p"
        argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                f"--callgrind-out-file={pattern}", *valgrind_args, server,
                "--port", str(self.port), "--save", "", "--appendonly", "no", *server_args]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self.pattern = str(pattern)
        # Valgrind starts a server in seconds, or minutes on a loaded machine.
        deadline = time.time() + 300
        while True:
            try:
                self.conn = Conn(self.port)
                return
            except OSError:
                if time.time() > deadline or self.process.poll() is not None:
                    self.process.kill()
                    fail(f"{server} under valgrind did not start")
                time.sleep(0.1)

    def instrument(self, on):
        subprocess.run(["callgrind_control", "-i", "on" if on else "off",
                        str(self.process.pid)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        """Stops the server; returns its callgrind output file."""
        self.conn.close()
        self.process.terminate()
        self.process.wait()
        [path] = glob.glob(self.pattern.replace("%p", str(self.process.pid)))
        return path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def annotate(path):
    return subprocess.run(["callgrind_annotate", "--inclusive=yes", path], capture_output=True,
                          text=True, check=True).stdout


def inclusive(text, function):
    """Instructions inside `function` and what it calls, from `annotate`'s
    text (None if it never ran)."""
    m = re.search(rf"^\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*:{function} \[", text, re.M)
    return int(m.group(1).replace(",", "")) if m else None


def commands(path):
    """`annotate`'s text of `path`, the instructions inside Redis's call(),
    and how many calls they span; fails if call() never ran."""
    text = annotate(path)
    call = inclusive(text, "call")
    if call is None:
        fail(f"no call() in {path}")
    return text, call, calls_of(path, "call")


def calls_of(path, function):
    """How many times `function` was called while counting: what to divide
    by, as `callgrind_control -i on` may take effect a few commands late."""
    names, callee, n = {}, None, 0
    with open(path) as f:
        for line in f:
            if line.startswith(("fn=", "cfn=")):
                m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
                if m and m.group(2):
                    names[m.group(1)] = m.group(2)
                callee = names.get(m.group(1)) if m and line.startswith("cfn=") else None
            elif line.startswith("calls=") and callee == function:
                n += int(line.split()[0][len("calls="):])
    return n


def totals(path):
    """Every instruction counted in the file ("summary:" stays 0 when
    instrumentation starts off)."""
    with open(path) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("totals:"))
