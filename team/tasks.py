"""The task board: one JSON file per task in `.team/tasks/<id>.json` (DESIGN §1).

Readers never lock: every file is written whole (tmp + fsync + rename), so a reader sees
the old record or the new one, never half of one. Writers that read-modify-write (id
allocation, claims, completion) hold `fcntl.flock` on `.team/tasks/.lock`, which works
across threads and processes alike: Linux ties a flock to the open file description,
and every acquisition opens the lock file afresh.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from team.errors import UserError

log = logging.getLogger(__name__)

TaskStatus = Literal["pending", "in_progress", "completed"]
_TASK_FILE = re.compile(r"^([1-9][0-9]*)\.json$")
LOCK_TIMEOUT = 30.0


class Task(BaseModel):
    """One task record: what `team tasks --json` prints and `list_tasks` returns."""

    model_config = ConfigDict(extra="ignore")

    id: int
    subject: str
    description: str = ""
    status: TaskStatus = "pending"
    owner: str | None = None
    """The agent it is assigned to or claimed by; None while the task is open."""
    created_by: str = "user"
    created_at: float
    updated_at: float
    result: str | None = None
    """What the owner said when completing it."""


class TaskError(UserError):
    """A task operation that cannot be done: unknown id, owned by another, completed."""


class TaskBoard:
    """The tasks in one folder. Safe to share between threads and processes."""

    def __init__(self, root: Path, *, lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.root = Path(root)
        self.lock_timeout = lock_timeout
        self._warned: set[tuple[str, int]] = set()
        self._warned_lock = threading.Lock()
        # Idle agents poll the board several times a second; re-parsing every file each
        # time made polling cost grow with agents x tasks. Files are only ever replaced by
        # rename, so (inode, mtime, size) identifies one version of a task exactly.
        self._parsed: dict[str, tuple[tuple[int, int, int], Task]] = {}
        self._hint: tuple[tuple[int, int], float, bool] | None = None

    # -- reading (no lock) ---------------------------------------------------------

    def get(self, task_id: int) -> Task:
        """The task with this id.

        Raises:
            TaskError: no such task, or its file is unreadable.
        """
        path = self._path(task_id)
        try:
            return Task.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            raise TaskError(f"no task #{task_id}") from None
        except (OSError, ValidationError, ValueError) as e:
            raise TaskError(f"task #{task_id} is unreadable ({path}): {_first_line(e)}") from None

    def list(self) -> list[Task]:
        """Every readable task, by id (numerically: #10 comes after #2)."""
        tasks = []
        for task_id, path in self._files():
            task = self._read_or_warn(task_id, path)
            if task is not None:
                tasks.append(task)
        return tasks

    def open_for(self, agent: str) -> list[Task]:
        """Tasks owned by `agent` that are not completed (assigned or in progress)."""
        return [t for t in self.list() if t.owner == agent and t.status != "completed"]

    def unclaimed(self) -> list[Task]:
        """Open tasks: pending and owned by nobody, oldest first."""
        return [t for t in self.list() if t.status == "pending" and t.owner is None]

    def all_done(self) -> bool:
        """True when no task is pending or in progress (an empty board is done)."""
        return all(t.status == "completed" for t in self.list())

    # -- writing (under the board lock) --------------------------------------------

    def create(
        self,
        subject: str,
        *,
        owner: str | None = None,
        description: str = "",
        created_by: str = "user",
    ) -> Task:
        """Add a pending task, assigned to `owner` or (None) open for anyone to claim."""
        if not subject.strip():
            raise TaskError("a task needs a subject (got empty text)")
        with self._locked():
            ids = [task_id for task_id, _ in self._files()]
            now = time.time()
            task = Task(
                id=max(ids, default=0) + 1,
                subject=subject,
                description=description,
                status="pending",
                owner=owner,
                created_by=created_by,
                created_at=now,
                updated_at=now,
            )
            self._write(task)
        return task

    def claim(self, task_id: int, agent: str) -> Task:
        """Take a task: pending and unowned (or assigned to `agent`) -> in progress.

        Claiming a task the agent already has in progress returns it unchanged, so a
        claim repeated after a crash is harmless.

        Raises:
            TaskError: unknown id, owned by another agent, or already completed.
        """
        with self._locked():
            return self._claim_locked(self.get(task_id), agent)

    def claim_next(self, agent: str) -> Task | None:
        """Atomically claim the oldest open task for `agent`; None if there is none."""
        if not self._maybe_unclaimed():  # the common case when idle: no lock, no reads
            return None
        with self._locked():
            open_tasks = self.unclaimed()
            if not open_tasks:
                return None
            return self._claim_locked(open_tasks[0], agent)

    def complete(self, task_id: int, agent: str, result: str | None = None) -> Task:
        """Mark a task completed. Only its owner may; repeating it is harmless.

        Raises:
            TaskError: unknown id, not owned by `agent`, or completed by another.
        """
        with self._locked():
            task = self.get(task_id)
            if task.owner != agent:
                if task.owner is None:
                    raise TaskError(
                        f"task #{task_id} is not yours: nobody has claimed it (claim it first)"
                    )
                done = "was completed" if task.status == "completed" else "is owned"
                raise TaskError(f"task #{task_id} {done} by {task.owner}, not {agent}")
            if task.status == "completed":
                return task
            task = task.model_copy(
                update={"status": "completed", "result": result, "updated_at": time.time()}
            )
            self._write(task)
            return task

    # -- internals -----------------------------------------------------------------

    def discard(self, task_id: int) -> None:
        """Remove a task that was never announced (its delivery failed): all or nothing."""
        with self._locked():
            self._path(task_id).unlink(missing_ok=True)
            _fsync_dir(self.root)

    def _claim_locked(self, task: Task, agent: str) -> Task:
        if task.status == "completed":
            by = f" by {task.owner}" if task.owner else ""
            raise TaskError(f"task #{task.id} is already completed{by}")
        if task.owner not in (None, agent):
            raise TaskError(f"task #{task.id} is owned by {task.owner}, not {agent}")
        if task.status == "in_progress":
            return task
        task = task.model_copy(
            update={"status": "in_progress", "owner": agent, "updated_at": time.time()}
        )
        self._write(task)
        return task

    def _path(self, task_id: int) -> Path:
        return self.root / f"{int(task_id)}.json"

    def _files(self) -> list[tuple[int, Path]]:
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            m = _TASK_FILE.match(name)
            if m:
                found.append((int(m.group(1)), self.root / name))
        found.sort()
        return found

    def _maybe_unclaimed(self) -> bool:
        """A cheap hint for idle agents: could there be an unclaimed task?

        The answer is cached while the folder's mtime stays the same, for at most
        `HINT_MAX_AGE_S` (two renames in one timestamp tick leave the mtime unchanged).
        A stale "no" only delays a claim; a "yes" is always checked under the lock.
        """
        try:
            st = os.stat(self.root)
        except FileNotFoundError:
            return False
        now = time.monotonic()
        key = (st.st_ino, st.st_mtime_ns)
        hint = self._hint
        if hint is not None and hint[0] == key and now - hint[1] < HINT_MAX_AGE_S:
            return hint[2]
        answer = bool(self.unclaimed())
        self._hint = (key, now, answer)
        return answer

    def _read_or_warn(self, task_id: int, path: Path) -> Task | None:
        try:
            st = path.stat()
            version = (st.st_ino, st.st_mtime_ns, st.st_size)
            hit = self._parsed.get(str(path))
            if hit is not None and hit[0] == version:
                return hit[1].model_copy()
            data = path.read_bytes()
            task = Task.model_validate_json(data)
        except FileNotFoundError:
            return None  # removed between listing and reading
        except (OSError, ValidationError, ValueError) as e:
            self._warn_once(path, f"skipping unreadable task file {path}: {_first_line(e)}")
            return None
        if task.id != task_id:
            self._warn_once(path, f"skipping task file {path}: it says id {task.id}")
            return None
        self._parsed[str(path)] = (version, task.model_copy())
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


HINT_MAX_AGE_S = 0.5
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
