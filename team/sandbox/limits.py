"""Per-command resource limits: rlimits set inside the sandbox, and a pids cgroup for root.

CPU time, memory (RLIMIT_DATA: what a process has written, not what it reserved, so
runtimes that reserve large address ranges such as V8 still start) and file size are
rlimits, set by a shell prelude inside the sandbox. The process count is RLIMIT_NPROC
too, set after bubblewrap made the user namespace so it counts the command's processes
only, not the user's others. The kernel never applies RLIMIT_NPROC to root, so when
the team runs as root the count is a pids cgroup made for the command instead, when
one can be made (see `docs/design.md`, Safety).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import resource
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from team.workspace.config import LimitsConfig

log = logging.getLogger(__name__)

_CGROUP_ROOT = Path("/sys/fs/cgroup")
# `sh` joins the cgroup, then becomes the sandbox: every process it starts is counted.
JOIN_CGROUP = 'echo $$ > "$0" && exec "$@"'


@dataclass(frozen=True)
class Rlimits:
    """The values one command's prelude sets (each already capped by the hard limit)."""

    cpu_s: int
    data_kb: int
    file_kb: int
    processes: int

    @classmethod
    def of(cls, cfg: LimitsConfig) -> Rlimits:
        return cls(
            cpu_s=_cap(resource.RLIMIT_CPU, cfg.cpu_s),
            data_kb=_cap(resource.RLIMIT_DATA, cfg.memory_mb * 1024 * 1024) // 1024,
            file_kb=_cap(resource.RLIMIT_FSIZE, cfg.file_mb * 1024 * 1024) // 1024,
            processes=_cap(resource.RLIMIT_NPROC, cfg.processes),
        )

    def prelude(self) -> str:
        """Bash that sets the limits (soft and hard: the command cannot raise them) and
        then runs the command given as `$1` in a fresh bash, exactly as it was written.

        The CPU hard limit is a second above the soft one, so a spinning process gets
        SIGXCPU ("CPU time limit exceeded") rather than a bare SIGKILL."""
        return (
            f"ulimit -S -t {self.cpu_s} && ulimit -H -t {self.cpu_s + 1} && "
            f"ulimit -d {self.data_kb} -f {self.file_kb} -u {self.processes}"
            ' && exec bash -c "$1"'
        )


def _cap(kind: int, want: int) -> int:
    """`want`, or the current hard limit when that is lower (raising it would fail)."""
    hard = resource.getrlimit(kind)[1]
    return want if hard == resource.RLIM_INFINITY else min(want, hard)


def pids_cgroup_base() -> Path | None:
    """A cgroup folder this process may make per-command children in, with a pids
    controller; None when there is none (then root's commands have no process limit)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if "pids" in controllers.split(","):  # cgroup v1
            base = _CGROUP_ROOT / "pids" / rel
            if _writable(base):
                return _swept(base)
        elif controllers == "":  # cgroup v2: children get pids only when it is delegated
            base = _CGROUP_ROOT / rel
            try:
                enabled = (base / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "pids" in enabled and _writable(base):
                return _swept(base)
    return None


def _swept(base: Path) -> Path:
    """`base`, rid of empty cgroups left by team processes that died (kill -9)."""
    for group in base.glob("team-*-*"):
        pid = group.name.split("-")[1]
        if pid.isdigit() and not Path("/proc", pid).exists():
            with contextlib.suppress(OSError):
                group.rmdir()
    return base


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


@contextlib.contextmanager
def pids_cgroup(base: Path | None, processes: int) -> Iterator[Path | None]:
    """A fresh pids cgroup capped at `processes`; yields its `cgroup.procs` (or None when
    no cgroup could be made) and removes the cgroup after the command."""
    if base is None:
        yield None
        return
    group = base / f"team-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(processes))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        yield None
        return
    try:
        yield group / "cgroup.procs"
    finally:
        try:
            group.rmdir()
        except OSError:
            # its last processes are still exiting: wait for them off the tool's path
            _JANITOR.remove(group)


class _Janitor:
    """One thread, started on first use, that removes cgroups still busy after their
    command, one after another (a thread per leftover cgroup was thread churn that
    added up over a long run)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Nothing queued and no thread (also in a forked child, which has no threads)."""
        self._queue: queue.SimpleQueue[Path] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def remove(self, group: Path) -> None:
        self._queue.put(group)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="cgroup-janitor", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            group = self._queue.get()
            try:
                _remove(group)
            except Exception:  # one bad group must not end the removal of the others
                log.warning("could not remove the cgroup %s", group, exc_info=True)


_JANITOR = _Janitor()
os.register_at_fork(after_in_child=_JANITOR.reset)


def _remove(group: Path) -> None:
    """rmdir the cgroup once it is empty; anything still in it is killed first."""
    for _ in range(100):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            with contextlib.suppress(OSError):
                for pid in (group / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), 9)
            time.sleep(0.02)


def join_argv(procs: Path, argv: list[str]) -> list[str]:
    return ["/bin/sh", "-c", JOIN_CGROUP, str(procs), *argv]


def describe(cfg: LimitsConfig, cgroup: Path | None) -> str:
    """One line for `team check`."""
    procs = f"{cfg.processes} processes"
    if os.geteuid() == 0:
        procs += " (pids cgroup)" if cgroup else " (NOT enforced: root, and no pids cgroup)"
    return (
        f"{cfg.cpu_s}s CPU, {cfg.memory_mb} MiB memory, {procs}, "
        f"{cfg.file_mb} MiB per file, {cfg.output_mb} MiB of output"
    )
