"""Real redis-server processes with the module loaded, for the tests.

Each server gets a free loopback port and a fresh directory, must answer PING
as the process we started (its ``process_id``) before a startup deadline, and is
stopped by its pid (SIGTERM, then SIGKILL after a deadline).

Env: ``RECIPES_MODULE`` = the module .so (the Makefile sets it);
``REDIS_SERVER`` / ``REDIS_CLI`` = the server and cli to run (default
``redis-server`` / ``redis-cli``).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import List, Optional

import redis

STARTUP_DEADLINE = 15.0
STOP_DEADLINE = 10.0
CLUSTER_DEADLINE = 20.0


def module_path() -> str:
    path = os.environ.get("RECIPES_MODULE")
    if not path:
        raise RuntimeError(
            "set RECIPES_MODULE to the module .so (make test-clients does: "
            "target/release/librecipes.so)"
        )
    if not Path(path).is_file():
        raise RuntimeError(f"RECIPES_MODULE={path} does not exist: run cargo build --release")
    return path


def redis_cli() -> str:
    return os.environ.get("REDIS_CLI", "redis-cli")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(cluster_bus: bool = False) -> int:
    """A free loopback port; with ``cluster_bus``, one at most 55535 whose bus
    port (+10000) is free too, as a cluster node needs."""
    if not cluster_bus:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    while True:
        port = random.randrange(20000, 55535)
        if _bindable(port) and _bindable(port + 10000):
            return port


class Server:
    def __init__(self, *extra: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="recipes-py-")
        self.extra = list(extra)
        cluster_bus = "--cluster-enabled" in extra
        self.process: Optional[subprocess.Popen] = None
        self.port = 0
        for _ in range(5):
            self.port = free_port(cluster_bus)
            if self._spawn():
                return
        raise RuntimeError(f"redis-server did not start; log:\n{self.log()}")

    def log(self) -> str:
        try:
            return Path(self.dir, "redis.log").read_text()
        except OSError:
            return ""

    def _command_line(self) -> List[str]:
        return [
            os.environ.get("REDIS_SERVER", "redis-server"),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self.dir,
            "--logfile", "redis.log",
            "--save", "",
            "--daemonize", "no",
            "--loadmodule", module_path(),
            *self.extra,
        ]  # fmt: skip

    def _spawn(self) -> bool:
        """True once our process answers; False on a port collision."""
        self.process = subprocess.Popen(
            self._command_line(),
            cwd=self.dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + STARTUP_DEADLINE
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if "Address already in use" in self.log():
                    return False
                raise RuntimeError(f"redis-server exited; log:\n{self.log()}")
            try:
                with redis.Redis(port=self.port, socket_timeout=2) as c:
                    if c.info("server")["process_id"] != self.process.pid:
                        self._kill()  # another server owns the port
                        return False
                    if c.ping():
                        return True
            except (redis.ConnectionError, redis.TimeoutError):
                pass
            time.sleep(0.02)
        self._kill()
        raise RuntimeError(f"redis-server not ready in {STARTUP_DEADLINE}s; log:\n{self.log()}")

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                self._kill()
        self.process = None
        shutil.rmtree(self.dir, ignore_errors=True)


class Cluster:
    """Three masters joined by ``redis-cli --cluster create``."""

    def __init__(self) -> None:
        self.nodes: List[Server] = []
        try:
            for _ in range(3):
                self.nodes.append(
                    Server(
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "5000",
                    )  # fmt: skip
                )
            addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
            out = subprocess.run(
                [redis_cli(), "--cluster", "create", *addrs, "--cluster-yes"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if out.returncode != 0:
                raise RuntimeError(f"cluster create failed:\n{out.stdout}{out.stderr}")
            self._wait_ok()
        except BaseException:
            self.stop()
            raise

    def _wait_ok(self) -> None:
        deadline = time.monotonic() + CLUSTER_DEADLINE
        while time.monotonic() < deadline:
            states = []
            for n in self.nodes:
                with redis.Redis(port=n.port, socket_timeout=2) as c:
                    states.append(c.execute_command("CLUSTER", "INFO"))
            if all(b"cluster_state:ok" in s for s in states):
                return
            time.sleep(0.05)
        raise RuntimeError("cluster did not reach cluster_state:ok")

    def node_of_slot(self, slot: int) -> int:
        """Port of the master owning ``slot``."""
        with redis.Redis(port=self.nodes[0].port) as c:
            for start, end, master, *_ in c.execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return int(master[1])
        raise LookupError(slot)

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()


async def aclose(client) -> None:
    """Close an asyncio client (``aclose`` from redis-py 5.0.1, ``close`` before)."""
    await (getattr(client, "aclose", None) or client.close)()
