"""The file board's unfinished records, kept in memory and brought up to date from its journal.

Reading every task file on every read made each board read cost grow with the number
of tasks ever created: agents read the board several times per step, so the soak's
per-call overhead doubled over a run (docs/design.md, "Task board on files"). Instead,
every writer appends the id it wrote to `.team/tasks/.journal` (under the board lock,
after the task file is in place), and each process keeps the records it has read. A
read stats the journal; when it grew, only the ids named in the new lines are read
again. The journal is only a hint: a reader that cannot use it (no journal yet, a
rotated one, or `RESCAN_S` since the last full scan, which also picks up task files
edited by hand) lists the whole folder again and reads the files whose version changed.

Finished tasks are not kept (docs/design.md, "Task board on files"): a process that ran
for hours would hold every task the team ever finished. The view holds the unfinished
tasks, the finished ones they wait on, and the `KEEP_FINISHED` finished tasks updated
last. Whatever needs more (`team tasks`) reads the files. Nor does it keep anything per
other finished file: a rescan skips a file whose inode has not changed since before the
previous scan began (its ctime, which no one can set back, is older), since that scan
saw it already; only files changed since are compared with the stamp (inode, mtime,
size, ctime) this view read last. "Before the previous scan began" is read on the
filesystem's clock, not only ours: no later than the newest ctime this view had seen
then (a filesystem whose clock runs behind), nor than our wall clock then (a file
stamped in the future); and a scan after our wall clock stepped back skips nothing.

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
SETTLED_NS = 3_000_000_000
"""Slack on "before the previous scan began": a file whose ctime is up to this much
older is still looked at (file times come from a coarse clock, 2 s on FAT)."""
KEEP_FINISHED = 50
"""Finished records held in memory (the newest); `list_tasks` shows 20 of them."""
TASK_FILE = re.compile(r"^([1-9][0-9]*)\.json$")

Reader = Callable[[int, Path], "Task | None"]


def task_ids(root: Path) -> list[int]:
    """The ids of the task files in `root` (none when it does not exist yet)."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    return [int(m.group(1)) for m in map(TASK_FILE.match, names) if m]


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
    """The unfinished tasks of one folder (and the few finished ones they need), as this
    process last read them; thread-safe.

    Args:
        root: the board's folder.
        read: reads one task file (None when it is missing or unreadable).
    """

    def __init__(self, root: Path, read: Reader) -> None:
        self.root = root
        self._read = read
        self._lock = threading.Lock()
        self._open: dict[int, Task] = {}  # the unfinished tasks
        self._recent: dict[int, Task] = {}  # the KEEP_FINISHED finished tasks updated last
        self._recent_whole = True  # _recent is the newest of all (the first scan reads all)
        self._blockers: dict[int, Task] = {}  # finished tasks an unfinished one waits on
        # <id>.json: hash(inode, mtime, size), ctime; for the tasks held and the files
        # changed lately, not every finished file (see the module's docstring)
        self._versions: dict[int, tuple[int, int]] = {}
        self._max_id = 0  # the highest id of a task file seen
        self._newest_ctime = 0  # of any task file this view has statted
        self._settled = 0  # a file not held whose ctime is older was seen by the last scan
        self._clocks = (0, 0)  # wall and monotonic ns when the last scan began
        self._hot: dict[int, Task] = {}
        # (inode, bytes consumed, mtime): a journal deleted and made again can get the
        # same inode and size, never the same mtime
        self._journal: tuple[int, int, int] | None = None
        self._scanned = -RESCAN_S

    def read(self, use: Callable[[dict[int, Task]], T]) -> T:
        """`use(hot)` on the current records, under the view's lock.

        `hot` holds the unfinished tasks and their blockers: all that claimable, open and
        all-done questions depend on, so their cost does not grow with finished work.
        It may not be kept or changed by `use`.
        """
        with self._lock:
            self._refresh()
            return use(self._hot)

    def fresh(self) -> tuple[dict[int, Task], int]:
        """For a writer, under the board lock: a copy of the unfinished tasks and their
        blockers as their files hold them now, whatever the journal says, and the highest
        id taken by a task file (readable or not).

        Writers decide on the files, never on a view that a hand edit or a lost journal
        line left behind: each held record's file is statted again (only changed ones are
        parsed), and any other record a rule names is read from its file (`Stored`). Not
        the whole folder: that would make every write cost grow with the finished work.
        """
        with self._lock:
            self._refresh()
            root = os.fspath(self.root)
            for task_id in list(self._hot):
                self._load(task_id, f"{root}/{task_id}.json", only_if_changed=True)
            self._rebuild_hot()
            last = self._max_id
            while os.path.lexists(f"{root}/{last + 1}.json"):  # made by hand, unannounced
                last += 1
            return dict(self._hot), last

    def recent(self, limit: int) -> list[Task] | None:
        """The `limit` finished tasks updated last, by id; None when this view does not
        hold them all (the caller reads the files)."""
        with self._lock:
            self._refresh()
            if limit > KEEP_FINISHED:
                return None
            if not self._recent_whole:
                self._read_recent()
            newest = sorted(self._recent.values(), key=_recency)[-limit:] if limit > 0 else []
            return sorted(newest, key=lambda t: t.id)

    def held(self) -> int:
        """How many task records this view holds in memory."""
        with self._lock:
            return len(self._open) + len(self._recent) + len(self._blockers)

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
        wall, mono = time.time_ns(), time.monotonic_ns()
        began = min(wall, self._newest_ctime)  # on the filesystem's clock, at most
        last_wall, last_mono = self._clocks
        stepped_back = wall - last_wall < mono - last_mono - SETTLED_NS
        settled = 0 if stepped_back else self._settled
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
            self._journal = (st.st_ino, data.rfind(b"\n") + 1, st.st_mtime_ns)  # then files
        except FileNotFoundError:
            pass
        present = set(task_ids(self.root))
        root = os.fspath(self.root)  # writers rescan under the lock: keep the loop cheap
        for task_id in present:
            self._load(task_id, f"{root}/{task_id}.json", only_if_changed=True, settled=settled)
        for task_id in [i for i in self._versions.keys() | self._held() if i not in present]:
            self._forget(task_id)
        self._max_id = max(present, default=0)
        self._scanned = time.monotonic()
        self._clocks = (wall, mono)
        self._settled = began - SETTLED_NS
        self._rebuild_hot()
        # The stamps of finished files not held go once their change is older than this
        # scan's start: the next scan skips them by their ctime instead.
        held = self._held()
        self._versions = {
            i: v for i, v in self._versions.items() if i in held or v[1] >= self._settled
        }

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
            self._load(task_id, f"{os.fspath(self.root)}/{task_id}.json", only_if_changed=False)
        self._rebuild_hot()

    def _load(
        self, task_id: int, file: str, *, only_if_changed: bool, settled: int | None = None
    ) -> None:
        """Read `file` into the view; with `only_if_changed`, only when its stamp is not
        the one read last, or (with `settled`) when a file this view keeps nothing of
        changed after `settled` (an older one was seen by the previous scan)."""
        try:
            st = os.stat(file)
        except FileNotFoundError:
            return self._forget(task_id)
        self._max_id = max(self._max_id, task_id)  # unreadable: its id stays taken
        self._newest_ctime = max(self._newest_ctime, st.st_ctime_ns)
        stamp = _stamp(st)
        known = self._versions.get(task_id)
        if only_if_changed:
            if known == stamp:
                return
            if known is None and settled is not None and st.st_ctime_ns < settled:
                return
        task = self._read(task_id, Path(file))
        if task is None or not task.finished:
            self._lost_recent(task_id)
        self._drop(task_id)
        self._versions[task_id] = stamp
        if task is None:
            return
        if not task.finished:
            self._open[task_id] = task
            return
        self._recent[task_id] = task
        if len(self._recent) > KEEP_FINISHED:
            del self._recent[min(self._recent.values(), key=_recency).id]

    def _held(self) -> set[int]:
        return self._open.keys() | self._recent.keys() | self._blockers.keys()

    def _forget(self, task_id: int) -> None:
        self._lost_recent(task_id)
        self._drop(task_id)
        self._versions.pop(task_id, None)

    def _drop(self, task_id: int) -> None:
        self._open.pop(task_id, None)
        self._blockers.pop(task_id, None)
        self._recent.pop(task_id, None)

    def _lost_recent(self, task_id: int) -> None:
        if task_id in self._recent:
            self._recent_whole = False  # an older finished task, not held, may now be newest

    def _read_recent(self) -> None:
        """Find the newest finished tasks again among the files (after one of them was
        reopened or removed: rare, and only then does this read every finished file)."""
        done = []
        for task_id in task_ids(self.root):
            if task_id not in self._open:
                task = self._read(task_id, self.root / f"{task_id}.json")
                if task is not None and task.finished:
                    done.append(task)
        self._recent = {t.id: t for t in sorted(done, key=_recency)[-KEEP_FINISHED:]}
        self._recent_whole = True

    def _rebuild_hot(self) -> None:
        # Only unfinished tasks and what they wait on; finished work drops out of it.
        hot = dict(self._open)
        blockers: dict[int, Task] = {}
        for task in self._open.values():
            for b in task.blocked_by:
                if b in hot or b in blockers:
                    continue
                found = self._recent.get(b) or self._blockers.get(b)
                if found is None and 0 < b <= self._max_id:
                    found = self._read_blocker(b)
                if found is not None:
                    blockers[b] = found
        self._blockers = blockers
        hot.update(blockers)
        self._hot = hot

    def _read_blocker(self, task_id: int) -> Task | None:
        """A task an unfinished one waits on, not held: read from its file, with its stamp
        when it is finished (so the next `fresh` does not parse it again). One that is
        not finished (reopened by hand, unannounced) gets no stamp: the next rescan
        then reads it as the unfinished task it is."""
        file = self.root / f"{task_id}.json"
        try:
            st = os.stat(file)
        except FileNotFoundError:
            return None
        self._newest_ctime = max(self._newest_ctime, st.st_ctime_ns)
        task = self._read(task_id, file)
        if task is not None and task.finished:
            self._versions[task_id] = _stamp(st)
        return task


def _stamp(st: os.stat_result) -> tuple[int, int]:
    """A task file's version and its ctime. Files are replaced by rename, so (inode,
    mtime, size) names one version; the ctime also catches a copy that kept all three."""
    return hash((st.st_ino, st.st_mtime_ns, st.st_size)), st.st_ctime_ns


def _recency(task: Task) -> tuple[float, int]:
    return (task.updated_at, task.id)
