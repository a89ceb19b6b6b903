"""`team web` in a subprocess and a real headless Chromium driven by Playwright.

The browser is the system's (`/usr/bin/chromium`, the Debian package `scripts/test`
installs): Playwright cannot download one here, so it is pointed at that binary.
Screenshots go to `tests/artifacts/web/` (ignored by git), to be looked at.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts" / "web"
CHROMIUM = os.environ.get("TEAM_TEST_CHROMIUM", "/usr/bin/chromium")


def chromium() -> str:
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail("no chromium: install it (apt-get install chromium; scripts/test does)")
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


class WebServer:
    """`team web --port 0` on a workspace; `url` is what it printed it serves."""

    def __init__(self, root: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "team", "web", "--port", "0", *args, "--dir", str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # a thread reads stderr: select() on a text pipe misses lines already buffered
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.lines = [self._line(30)]
        first = self.lines[0]
        assert first.startswith("team web: serving http://"), first + self.proc.stderr.read()
        self.url = first.split("serving ", 1)[1].split()[0]
        if "?token=" in self.url:
            self.lines.append(self._line(5))

    @property
    def base(self) -> str:
        return self.url.split("?", 1)[0]

    def _line(self, seconds: float) -> str:
        try:
            return self._lines.get(timeout=seconds).strip()
        except queue.Empty:
            self.proc.kill()
            raise AssertionError("team web printed nothing") from None

    def _read(self) -> None:
        for line in self.proc.stderr:
            self._lines.put(line)
        self._lines.put("")

    def stop(self) -> str:
        """Ctrl-C, as a user stops it; what it wrote to stderr after the ready lines."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=10)
        rest = []
        while not self._lines.empty():
            rest.append(self._lines.get())
        return "".join(rest)


@contextlib.contextmanager
def web_server(root: Path, *args: str) -> Iterator[WebServer]:
    server = WebServer(root, *args)
    try:
        yield server
    finally:
        rest = server.stop()
        assert "Traceback" not in rest, rest


@contextlib.contextmanager
def browser() -> Iterator:
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


class Watched:
    """A page whose console errors and uncaught exceptions are collected."""

    def __init__(self, page) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))

    def open(self, url: str) -> None:
        self.page.goto(url)
        self.page.wait_for_selector("body[data-live='1']", timeout=20_000)

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


def team_cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "team", *args, "--dir", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def start_team(root: Path) -> subprocess.Popen:
    """`team up` on the sim, until `team down` (or the test's end) stops it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "team", "up", "--model", "sim", "--dir", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    status = root / ".team" / "status.json"
    while not status.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"team up did not start: {proc.stderr.read()}")
        time.sleep(0.05)
    return proc
