"""The task board on files: one JSON file per task in `.team/tasks/<id>.json`.

Readers never lock: every file is written whole (tmp + fsync + rename), so a reader sees
the old record or the new one, never half of one. Writers that read-modify-write (id
allocation, claims, completion) hold `fcntl.flock` on `.team/tasks/.lock`, which works
across threads and processes alike: Linux ties a flock to the open file description,
and every acquisition opens the lock file afresh. What each operation does to the
records is decided by `team.tasks.rules`, shared with every other backend. Reads go
through a `BoardView` (team.tasks.view): the unfinished records in memory, brought up to
date from the journal every writer appends to, so a read does not reread every file and
a long run does not hold every finished task; `list` (every task) reads the files.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError

from team.tasks import rules
from team.tasks.model import Task, TaskError
from team.tasks.operations import Change, RuleBoard, Stored, apply_rule
from team.tasks.view import BoardView, note_written, task_ids

log = logging.getLogger(__name__)

LOCK_TIMEOUT = 30.0


class TaskBoard(RuleBoard):
    """The tasks in one folder (a `Board`). Safe to share between threads and processes."""

    def __init__(self, root: Path, *, lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.root = Path(root)
        self.lock_timeout = lock_timeout
        self._warned: set[tuple[str, int]] = set()
        self._warned_lock = threading.Lock()
        self._view = BoardView(self.root, self._read_or_warn)

    # -- reading (no lock) ---------------------------------------------------------

    def get(self, task_id: int) -> Task:
        """The task with this id, its status derived from its blockers.

        Raises:
            TaskError: no such task, or its file is unreadable.
        """
        task = self._read(task_id)
        if not task.blocked_by:
            return task
        return rules.derive(task, self._stored(self._view.read(dict)))

    def list(self) -> list[Task]:
        """Every readable task, by id (numerically: #10 comes after #2). Reads every file:
        for the CLI; a running team asks `unfinished` and `recently_finished`."""
        tasks = {}
        for task_id, path in self._files():
            task = self._read_or_warn(task_id, path)
            if task is not None:
                tasks[task_id] = task
        return rules.derive_all(tasks)

    def recently_finished(self, limit: int) -> list[Task]:
        """The `limit` finished tasks updated last, by id."""
        held = self._view.recent(limit)
        if held is not None:
            return held
        done = sorted((t for t in self.list() if t.finished), key=lambda t: (t.updated_at, t.id))
        return sorted(done[-limit:] if limit > 0 else [], key=lambda t: t.id)

    # The questions below depend only on unfinished tasks and their blockers (`hot`), so
    # their cost stays flat however many tasks the team has finished.

    def unfinished(self) -> list[Task]:
        """Every task not finished (pending, blocked, in progress), by id."""
        return self._view.read(lambda hot: [t for t in rules.derive_all(hot) if not t.finished])

    def open_for(self, agent: str) -> list[Task]:
        """Tasks owned by `agent` that are not finished (assigned, blocked, in progress)."""
        return self._view.read(lambda hot: rules.open_for(hot, agent))

    def unclaimed(self) -> list[Task]:
        """Claimable tasks: pending, owned by nobody, blockers completed; oldest first."""
        return self._view.read(lambda hot: rules.claimable(hot))

    def all_done(self) -> bool:
        """True when nothing can still run (an empty board is done)."""
        return self._view.read(lambda hot: rules.all_done(hot))

    # -- writing (under the board lock) --------------------------------------------

    def create(
        self,
        subject: str,
        *,
        owner: str | None = None,
        description: str = "",
        created_by: str = "user",
        blocked_by: Sequence[int] = (),
    ) -> Task:
        """Add a task, assigned to `owner` or (None) open for anyone to claim.

        Raises:
            TaskError: empty subject, or an unknown id in `blocked_by`.
        """
        rules.check_subject(subject)
        with self._locked():
            hot, last = self._view.fresh()  # unreadable files keep their id
            tasks = self._stored(hot)
            task = rules.new_task(
                tasks,
                subject,
                task_id=last + 1,
                owner=owner,
                description=description,
                created_by=created_by,
                blocked_by=blocked_by,
                now=time.time(),
            )
            self._write(task)
            return rules.derive(task, tasks)

    # -- internals -----------------------------------------------------------------

    def discard(self, task_id: int) -> None:
        """Remove a task that was never announced (its delivery failed): all or nothing."""
        with self._locked():
            self._path(task_id).unlink(missing_ok=True)
            _fsync_dir(self.root)
            note_written(self.root, [task_id])

    def _apply(self, change: Change) -> Task | None:
        """Run one rule on the current records under the lock; store what it returns."""
        with self._locked():
            records = self._stored(self._view.fresh()[0])  # the files, not this process' view
            return apply_rule(records, change, time.time(), self._write)

    def _read(self, task_id: int) -> Task:
        path = self._path(task_id)
        try:
            return Task.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            raise TaskError(f"no task #{task_id}") from None
        except (OSError, ValidationError, ValueError) as e:
            raise TaskError(f"task #{task_id} is unreadable ({path}): {_first_line(e)}") from None

    def _stored(self, hot: dict[int, Task]) -> Mapping[int, Task]:
        """The stored records (status never `blocked`) as the rules need them."""
        return Stored(hot, lambda i: self._read_or_warn(i, self._path(i)))

    def _path(self, task_id: int) -> Path:
        return self.root / f"{int(task_id)}.json"

    def _files(self) -> list[tuple[int, Path]]:
        return [(i, self._path(i)) for i in sorted(task_ids(self.root))]

    def _read_or_warn(self, task_id: int, path: Path) -> Task | None:
        try:
            task = Task.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None  # removed between listing and reading
        except (OSError, ValidationError, ValueError) as e:
            self._warn_once(path, f"skipping unreadable task file {path}: {_first_line(e)}")
            return None
        if task.id != task_id:
            self._warn_once(path, f"skipping task file {path}: it says id {task.id}")
            return None
        return task

    def _warn_once(self, path: Path, message: str) -> None:
        # Agents list tasks on every turn; one warning per file version is enough.
        try:
            key = (str(path), path.stat().st_mtime_ns)
        except OSError:
            key = (str(path), 0)
        with self._warned_lock:
            if key in self._warned:
                return
            self._warned.add(key)
        log.warning("%s", message)

    def _write(self, task: Task) -> None:
        path = self._path(task.id)
        tmp = self.root / f".{task.id}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        data = task.model_dump_json(indent=2).encode() + b"\n"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            # rename, not write in place: readers must never see half a record
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        _fsync_dir(self.root)
        note_written(self.root, [task.id])  # after the file: see team.tasks.view

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # Threads of this process queue on a plain lock first (fair and without polling);
        # the flock below then only ever contends with other processes.
        guard = _thread_guard(self.root)
        if not guard.acquire(timeout=self.lock_timeout):
            raise TaskError(
                f"task board {self.root} is busy: could not lock it in {self.lock_timeout:g}s"
            )
        try:
            with self._flocked():
                yield
        finally:
            guard.release()

    @contextlib.contextmanager
    def _flocked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + self.lock_timeout
            pause = 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TaskError(
                            f"task board {self.root} is busy: could not lock it in "
                            f"{self.lock_timeout:g}s"
                        ) from None
                    time.sleep(pause)
                    pause = min(pause * 2, 0.02)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock


_GUARDS: dict[str, threading.Lock] = {}
_GUARDS_LOCK = threading.Lock()


def _thread_guard(root: Path) -> threading.Lock:
    key = str(Path(root).resolve())
    with _GUARDS_LOCK:
        return _GUARDS.setdefault(key, threading.Lock())


def _fsync_dir(path: Path) -> None:
    """Make a rename durable: the directory entry must reach the disk too."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _first_line(e: BaseException) -> str:
    if isinstance(e, ValidationError) and e.errors():
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "record"
        return f"{where}: {err['msg']}"
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
