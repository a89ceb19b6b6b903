"""The file board's records, kept in memory and brought up to date from its journal.

Reading every task file on every read made each board read cost grow with the number
of tasks ever created: agents read the board several times per step, so the soak's
per-call overhead doubled over a run (docs/design.md, "Task board on files"). Instead,
every writer appends the id it wrote to `.team/tasks/.journal` (under the board lock,
after the task file is in place), and each process keeps the records it has read. A
read stats the journal; when it grew, only the ids named in the new lines are read
again. The journal is only a hint: a reader that cannot use it (no journal yet, a
rotated one, or `RESCAN_S` since the last full scan, which also picks up task files
edited by hand) reads the whole folder again, as every read did before.

Ordering makes it safe without a lock: the writer replaces the task file, then appends
its id; the reader stats the journal, then reads the files. A reader never serves a
version of the journal older than the files it read for it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from team.tasks.model import Task

T = TypeVar("T")

JOURNAL = ".journal"
JOURNAL_MAX_BYTES = 1 << 20
"""A longer journal is replaced by an empty one (readers then rescan once)."""
RESCAN_S = 5.0
"""How often a reader reads the whole folder anyway (hand edits reach it this late)."""
TASK_FILE = re.compile(r"^([1-9][0-9]*)\.json$")

Reader = Callable[[int, Path], "Task | None"]


def note_written(root: Path, task_ids: list[int]) -> None:
    """Append ids whose files just changed; call with the board lock held."""
    path = root / JOURNAL
    line = "".join(f"{i}\n" for i in task_ids).encode()
    try:
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > JOURNAL_MAX_BYTES:
                tmp = root / f"{JOURNAL}.{os.getpid()}.tmp"
                tmp.write_bytes(b"")
                os.replace(tmp, path)  # a new inode: every reader sees the rotation
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.write(fd, line) != len(line):  # one small append: whole lines or none
                raise OSError(errno.ENOSPC, "short write to the board journal")
        finally:
            os.close(fd)
    except OSError:
        # The task file is written already: the write must not fail for its hint (a full
        # disk would leave a task nobody hears of). Without a journal every reader
        # rescans the folder, which is always right; a later writer starts a new one.
        with contextlib.suppress(OSError):
            path.unlink()


class BoardView:
    """Every task of one folder, as this process last read it; thread-safe.

    Args:
        root: the board's folder.
        read: reads one task file (None when it is missing or unreadable).
    """

    def __init__(self, root: Path, read: Reader) -> None:
        self.root = root
        self._read = read
        self._lock = threading.Lock()
        self._records: dict[int, Task] = {}
        self._ids: set[int] = set()  # every <id>.json present, readable or not
        self._open: set[int] = set()  # ids of the unfinished tasks
        self._hot: dict[int, Task] = {}
        # (inode, bytes consumed, mtime): a journal deleted and made again can get the
        # same inode and size, never the same mtime
        self._journal: tuple[int, int, int] | None = None
        self._scanned = -RESCAN_S

    def read(self, use: Callable[[dict[int, Task], dict[int, Task]], T]) -> T:
        """`use(records, hot)` on the current records, under the view's lock.

        `hot` holds the unfinished tasks and their blockers: all that claimable, open and
        all-done questions depend on, so their cost does not grow with finished work.
        Neither dict may be kept or changed by `use`.
        """
        with self._lock:
            self._refresh()
            return use(self._records, self._hot)

    def snapshot(self, *, fresh: bool = False) -> tuple[dict[int, Task], set[int]]:
        """A copy of the records and of the ids of every task file (readable or not).

        `fresh` reads the folder again whatever the journal says (a stat of each file;
        only changed ones are parsed): writers decide under the board lock on what the
        files hold, never on a view that a hand edit or a lost journal line left behind.
        """
        with self._lock:
            if fresh:
                self._rescan(self.root / JOURNAL)
            else:
                self._refresh()
            return dict(self._records), set(self._ids)

    def _refresh(self) -> None:
        path = self.root / JOURNAL
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        if (
            st is None
            or self._journal is None
            or self._journal[0] != st.st_ino
            or st.st_size < self._journal[1]
            or (st.st_size == self._journal[1] and st.st_mtime_ns != self._journal[2])
            or time.monotonic() - self._scanned > RESCAN_S
        ):
            self._rescan(path)
        elif st.st_size > self._journal[1]:
            self._catch_up(path)

    def _rescan(self, path: Path) -> None:
        self._journal = None
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
            self._journal = (st.st_ino, data.rfind(b"\n") + 1, st.st_mtime_ns)  # then files
        except FileNotFoundError:
            pass
        records: dict[int, Task] = {}
        ids: set[int] = set()
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            names = []
        for name in names:
            m = TASK_FILE.match(name)
            if m:
                task_id = int(m.group(1))
                ids.add(task_id)
                task = self._read(task_id, self.root / name)
                if task is not None:
                    records[task_id] = task
        self._records, self._ids = records, ids
        self._open = {i for i, t in records.items() if not t.finished}
        self._scanned = time.monotonic()
        self._rebuild_hot()

    def _catch_up(self, path: Path) -> None:
        assert self._journal is not None
        ino, offset, _ = self._journal
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if st.st_ino != ino:
                    return self._rescan(path)
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            return self._rescan(path)
        whole = data.rfind(b"\n") + 1
        try:
            ids = {int(x) for x in data[:whole].split()}
        except ValueError:  # not written by `note_written`: trust the folder instead
            return self._rescan(path)
        self._journal = (ino, offset + whole, st.st_mtime_ns)
        for task_id in ids:
            file = self.root / f"{task_id}.json"
            task = self._read(task_id, file)
            self._open.discard(task_id)
            if task is not None:
                self._records[task_id] = task
                self._ids.add(task_id)
                if not task.finished:
                    self._open.add(task_id)
            else:
                self._records.pop(task_id, None)
                if file.exists():  # unreadable: its id stays taken
                    self._ids.add(task_id)
                else:
                    self._ids.discard(task_id)
        self._rebuild_hot()

    def _rebuild_hot(self) -> None:
        # Only unfinished tasks and what they wait on; finished work drops out of it.
        hot: dict[int, Task] = {}
        for task_id in self._open:
            task = self._records[task_id]
            hot[task_id] = task
            for b in task.blocked_by:
                if b in self._records:
                    hot[b] = self._records[b]
        self._hot = hot
