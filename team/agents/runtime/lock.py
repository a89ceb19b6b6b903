"""`.team/team.lock`: held by the one running `team up` for a workspace."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from team.core.errors import UserError

ACQUIRE_GRACE_S = 1.0


class TeamLock:
    """An exclusive `flock` on the lock file, released by the kernel even on `kill -9`.

    The file also names the holder's pid, so `team status` and `team down` can tell
    whether a team is up without guessing from stale files.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        # `team status` and `team down` hold a shared lock for an instant to look: retry
        # briefly so that a look never makes `team up` think a team is running
        deadline = time.monotonic() + ACQUIRE_GRACE_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
            os.close(fd)
            pid = self.holder_pid()
            who = f" (pid {pid})" if pid else ""
            raise UserError(
                f"a team is already running in {self.path.parent.parent}{who}; "
                "stop it with `team down` first"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "started": time.time()}).encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def holder_pid(self) -> int | None:
        try:
            return int(json.loads(self.path.read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def is_held(self) -> bool:
        """True when some process (maybe this one) holds the lock."""
        if self._fd is not None:
            return True
        if not self.path.exists():
            return False
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False
