"""A real `redis-server` for the tests, on a free loopback port, in a folder of its own.

Started with an append-only file fsynced on every write (`appendfsync always`), so a
message the server accepted survives the server's own kill -9 and restart, the same
promise the file inboxes make. No test skips when the binary is missing: the suite
fails with one line saying how to install it (scripts/test does it on CI).
"""

from __future__ import annotations

import ctypes
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis

START_TIMEOUT_S = 90.0
"""Generous: under load (several suites at once, `stress`) a server can take tens of
seconds to answer its first PING; a slow start must not fail the run."""


def redis_binary() -> str:
    """The path of redis-server, or a clear failure saying how to get it."""
    path = shutil.which("redis-server")
    if path is None:
        raise RuntimeError(
            "redis-server not found: the Redis backend's tests need a real server; "
            "install it (apt-get install redis-server) or run scripts/test, which does"
        )
    return path


def _die_with_parent() -> None:
    """In the child: SIGKILL when the test process dies, so no server outlives a killed run."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One redis-server process; `restart` keeps the port and the data folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.binary = redis_binary()
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *, keep_port: bool = False) -> RedisServer:
        for _attempt in range(5):
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    "--port", str(self.port),
                    "--bind", "127.0.0.1",
                    "--dir", str(self.folder),
                    "--appendonly", "yes",
                    "--appendfsync", "always",
                    "--save", "",
                    "--protected-mode", "yes",
                ],
                stdout=(self.folder / "redis.log").open("ab"),
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )  # fmt: skip
            if self._wait_ready():
                return self
            self.proc.kill()
            self.proc.wait()
            if not keep_port:
                self.port = free_port()  # someone took the port between probe and bind
            else:
                time.sleep(0.2)
        log = (self.folder / "redis.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"redis-server did not start on 127.0.0.1; its log:\n{log}")

    def _wait_ready(self) -> bool:
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while time.monotonic() < deadline:
                if self.proc is not None and self.proc.poll() is not None:
                    return False
                try:
                    if client.ping():
                        return True
                except redis.RedisError:
                    time.sleep(0.05)
            return False
        finally:
            client.close()

    def kill(self) -> None:
        """kill -9: what a crash or a power cut does to the server."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def restart(self) -> None:
        self.kill()
        self.start(keep_port=True)

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
