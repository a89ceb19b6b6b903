"""The `bash` tool: one command in the workspace, with a timeout and an output cap.

With a `Sandbox` (team.sandbox.bwrap) the command runs under bubblewrap and per-command
limits; without one it runs as the user, with the user's rights. Either way it does not
get the team's API keys (see `scrubbed_env`), and it runs in its own process group so
that a timeout or a stop kills everything it started, not just the shell.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from team.sandbox.bwrap import Sandbox

# Substrings that mark a variable as a secret. Broad on purpose: a lost PATH-like
# variable costs a command a retry, a leaked key costs the user money.
_SECRET_MARKS = ("API_KEY", "APIKEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL")
_PIPE_GRACE = 1.0  # seconds to wait for the pipe to close after the shell exits
_TICK = 0.1  # how often a stop request and the deadline are checked while a command runs
_POLL = 0.01  # how often the exit is polled where there are no pidfds
_READ_SIZE = 65536  # a pipe's default capacity


def scrubbed_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default os.environ) without ANTHROPIC_* and other obvious secrets."""
    source = os.environ if env is None else env
    out = {}
    for name, value in source.items():
        upper = name.upper()
        if upper.startswith("ANTHROPIC_") or any(m in upper for m in _SECRET_MARKS):
            continue
        out[name] = value
    return out


@dataclass(frozen=True)
class ShellResult:
    """What a command did: its (capped) output and how it ended."""

    output: str
    exit_code: int | None  # None when it was killed before it exited
    timed_out: bool = False
    stopped: bool = False
    cut: int = 0  # bytes of output left out
    total: int = 0  # bytes of output the command printed
    output_limit: int | None = None  # set when it was killed for printing more than this

    def render(self, timeout: float) -> str:
        """The text the model sees: output, then one line on how the command ended."""
        text = self.output.rstrip("\n")
        if self.output_limit is not None:
            mib = self.output_limit / (1024 * 1024)
            end = f"[killed: printed more than the {mib:g} MiB output limit]"
        elif self.timed_out:
            end = f"[timed out after {timeout:g}s; the command and its children were killed]"
        elif self.stopped:
            end = "[interrupted: the team is stopping; the command was killed]"
        else:
            end = f"[exit code {self.exit_code}]"
        return f"{text}\n{end}" if text else f"(no output)\n{end}"


class _Capture:
    """Keeps the head and the tail of a stream and counts what falls in between.

    The tail matters as much as the head (test summaries, the last error), and a
    command that prints gigabytes must not grow the agent's memory.
    """

    def __init__(self, cap: int, limit: int | None = None) -> None:
        self.limit = limit
        self.over = False  # set once more than `limit` bytes came in
        self.head_limit = cap - cap // 2
        self.tail_limit = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes | memoryview) -> None:
        self.total += len(chunk)
        if self.limit is not None and self.total > self.limit:
            self.over = True
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> tuple[str, int]:
        tail = self.tail[-self.tail_limit :] if self.tail_limit else b""
        cut = self.total - len(self.head) - len(tail)
        head, tail = bytes(self.head), bytes(tail)
        if cut > 0:
            # cut at line ends when one is near, so no half line reads as real output
            end = head.rfind(b"\n")
            if end >= len(head) // 2:
                head = head[: end + 1]
            start = tail.find(b"\n")
            if 0 <= start < len(tail) // 2:
                tail = tail[start + 1 :]
            cut = self.total - len(head) - len(tail)
        head_text = head.decode("utf-8", errors="replace")
        tail_text = tail.decode("utf-8", errors="replace")
        if cut <= 0:
            return head_text + tail_text, 0
        note = f"\n[... output capped: {cut} of {self.total} bytes cut here ...]\n"
        return head_text + note + tail_text, cut


def run_command(
    command: str,
    cwd: Path,
    *,
    timeout: float,
    output_cap: int,
    stop: threading.Event | None = None,
    env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
) -> ShellResult:
    """Run `command` with bash in `cwd`; stdout and stderr are merged, in order.

    Args:
        command: shell text, as the model wrote it.
        cwd: the workspace root.
        timeout: seconds before the whole process group is killed.
        output_cap: most characters of output kept (head and tail).
        stop: when set, the command is killed at once (the team is shutting down).
        env: the environment; default the scrubbed `os.environ`.
        sandbox: confines the command and sets its limits (default: unconfined).
    """
    if sandbox is None:
        shell = shutil.which("bash") or "/bin/sh"
        return _run([shell, "-c", command], cwd, timeout, output_cap, None, stop, env)
    limit = sandbox.limits.output_mb * 1024 * 1024 if sandbox.bwrap else None
    with sandbox.argv(command) as argv:
        return _run(argv, cwd, timeout, output_cap, limit, stop, env)


def _run(
    argv: list[str],
    cwd: Path,
    timeout: float,
    output_cap: int,
    output_limit: int | None,
    stop: threading.Event | None,
    env: Mapping[str, str] | None,
) -> ShellResult:
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env) if env is not None else scrubbed_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # own process group: a timeout kills the children too
    )
    capture = _Capture(output_cap, output_limit)
    try:
        with _Watch(proc, capture) as watch:
            timed_out, stopped = _wait(proc, watch, timeout, stop)
    finally:
        if proc.returncode is None:  # watching failed (no fds, no memory): not left running
            _kill_group(proc)
        if proc.stdout is not None:
            proc.stdout.close()
    flooded = capture.over
    output, cut = capture.text()
    code = None if (timed_out or stopped or flooded) else proc.returncode
    return ShellResult(
        output,
        code,
        timed_out=timed_out,
        stopped=stopped,
        cut=cut,
        total=capture.total,
        output_limit=output_limit if flooded else None,
    )


def _wait(
    proc: subprocess.Popen[bytes], watch: _Watch, timeout: float, stop: threading.Event | None
) -> tuple[bool, bool]:
    """Take the output until the command exits, is stopped, times out or floods; then
    the rest of it. Returns (timed out, stopped)."""
    deadline = time.monotonic() + timeout
    timed_out = stopped = False
    while proc.returncode is None and not watch.capture.over:
        if stop is not None and stop.is_set():
            stopped = True
            break
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        watch.step(left)
    if proc.returncode is None:  # stopped, timed out or flooded
        _kill_group(proc)
    if not watch.drain(_PIPE_GRACE):
        # The shell is gone but a background child still holds the pipe open (or floods
        # it); without this the tool would hang until that child exits. A child that left
        # the process group (setsid) and is still writing gets EPIPE once the pipe closes.
        _kill_group(proc)
        watch.drain(_PIPE_GRACE)
    return timed_out, stopped


class _Watch:
    """The command's output pipe and its exit, watched from the calling thread.

    One selector waits on both: the pipe, and a pidfd that becomes readable the moment
    the command exits (Linux 5.3+), so a short command returns at once and no thread is
    started per command (a reader and a reaper thread a command cost the soak ~1.8 MiB
    of RSS: their stacks and malloc arenas). Without pidfds the exit is polled every
    `_POLL` seconds. Output is read into one buffer kept for the command, not a new
    64 KiB string a read.
    """

    def __init__(self, proc: subprocess.Popen[bytes], capture: _Capture) -> None:
        assert proc.stdout is not None
        self.proc = proc
        self.capture = capture
        self.pipe = proc.stdout.fileno()
        self.buf = bytearray(_READ_SIZE)
        self.open = True  # the pipe has not reached end of file
        self.exit_fd: int | None = None
        self.selector = selectors.DefaultSelector()
        try:
            self.selector.register(self.pipe, selectors.EVENT_READ)
        except BaseException:
            self.selector.close()
            raise
        with contextlib.suppress(AttributeError, OSError):  # no pidfd_open: poll instead
            fd = os.pidfd_open(proc.pid)
            try:
                self.selector.register(fd, selectors.EVENT_READ)
            except BaseException:
                os.close(fd)
                raise
            self.exit_fd = fd
        self.watching_exit = self.exit_fd is not None

    def __enter__(self) -> _Watch:
        return self

    def __exit__(self, *exc: object) -> None:  # the pipe itself is closed by `_run`
        self.selector.close()
        if self.exit_fd is not None:
            os.close(self.exit_fd)

    def step(self, wait: float) -> None:
        """Wait up to `wait` seconds (at most `_TICK`) for output or the exit; take both."""
        tick = _TICK if self.watching_exit else _POLL
        for key, _ in self.selector.select(min(wait, tick)):
            if key.fd == self.pipe:
                self._read()
        if self.proc.poll() is not None:  # it exited (now reaped)
            self._unwatch_exit()

    def drain(self, grace: float) -> bool:
        """Read the rest of the output; False when the pipe is still open after `grace`
        or what came in passed the output limit."""
        self._unwatch_exit()  # it exited or was killed: only the pipe matters now
        end = time.monotonic() + grace
        while self.open:
            left = end - time.monotonic()
            if left <= 0 or self.capture.over:
                return False
            for key, _ in self.selector.select(left):
                if key.fd == self.pipe:
                    self._read()
        return True

    def _unwatch_exit(self) -> None:
        if self.watching_exit:  # a pidfd stays readable: it would end every wait at once
            self.selector.unregister(self.exit_fd)
            self.watching_exit = False

    def _read(self) -> None:
        n = os.readv(self.pipe, [self.buf])
        if n == 0:
            self.open = False
            self.selector.unregister(self.pipe)
            return
        with memoryview(self.buf) as view:
            self.capture.feed(view[:n])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
