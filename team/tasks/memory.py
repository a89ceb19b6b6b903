"""A board held in memory: the `Board` protocol over a dict, for replay and one-off use.

Every change runs through the same rules as the boards on disk and on Redis
(`RuleBoard`); `put` stores a record as given, for a caller that rebuilds a board from a
log rather than acting on it (`team.study.replay`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from team.tasks import rules
from team.tasks.model import Task, TaskError
from team.tasks.operations import Change, RuleBoard, apply_rule


class MemoryBoard(RuleBoard):
    """A `Board` whose records live in this process only. Safe to share between threads."""

    def __init__(self) -> None:
        self._tasks: dict[int, Task] = {}
        self._lock = threading.Lock()

    def put(self, task: Task) -> None:
        """Store `task` as it is (no rule applies): a board rebuilt from what a log shows."""
        with self._lock:
            self._tasks[task.id] = task

    def get(self, task_id: int) -> Task:
        with self._lock:
            task = self._tasks.get(task_id)
            if task is None:
                raise TaskError(f"no task #{task_id}")
            return rules.derive(task, self._tasks)

    def list(self) -> list[Task]:
        with self._lock:
            return rules.derive_all(dict(self._tasks))

    def unfinished(self) -> list[Task]:
        return [t for t in self.list() if not t.finished]

    def recently_finished(self, limit: int) -> list[Task]:
        done = sorted((t for t in self.list() if t.finished), key=lambda t: (t.updated_at, t.id))
        return sorted(done[-limit:] if limit > 0 else [], key=lambda t: t.id)

    def open_for(self, agent: str) -> list[Task]:
        with self._lock:
            return rules.open_for(dict(self._tasks), agent)

    def unclaimed(self) -> list[Task]:
        with self._lock:
            return rules.claimable(dict(self._tasks))

    def all_done(self) -> bool:
        with self._lock:
            return rules.all_done(dict(self._tasks))

    def create(
        self,
        subject: str,
        *,
        owner: str | None = None,
        description: str = "",
        created_by: str = "user",
        blocked_by: Sequence[int] = (),
    ) -> Task:
        if not subject.strip():
            raise TaskError("a task needs a subject (got empty text)")
        with self._lock:
            task = rules.new_task(
                self._tasks,
                subject,
                task_id=max(self._tasks, default=0) + 1,
                owner=owner,
                description=description,
                created_by=created_by,
                blocked_by=blocked_by,
                now=time.time(),
            )
            self._tasks[task.id] = task
            return rules.derive(task, self._tasks)

    def discard(self, task_id: int) -> None:
        with self._lock:
            self._tasks.pop(task_id, None)

    def _apply(self, change: Change) -> Task | None:
        with self._lock:
            return apply_rule(self._tasks, change, time.time(), self._store)

    def _store(self, task: Task) -> None:
        self._tasks[task.id] = task
