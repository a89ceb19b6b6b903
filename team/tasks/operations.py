"""The board's changes, written once for every backend (docs/design.md, "Task board and
coordination").

Each change is one rule of `team.tasks.rules` run through the backend's atomic
read-apply-store: `RuleBoard` spells the operations, a backend supplies `_apply` (its
atomic section: a file lock, a Redis `WATCH`/`MULTI`) and calls `apply_rule` inside it.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, Sequence

from team.tasks import rules
from team.tasks.model import Task

Change = Callable[[rules.Tasks, float], Task | None]
"""A rule bound to its arguments: (the stored records, now) -> the record to store, or
None for nothing to do."""


def apply_rule(
    tasks: rules.Tasks, change: Change, now: float, store: Callable[[Task], None]
) -> Task | None:
    """Run `change` on the records loaded in the atomic section; `store` what it returns
    if that differs from what is stored (a repeated claim writes nothing). Returns the
    task as users see it (its status derived), or None."""
    task = change(tasks, now)
    if task is None:
        return None
    if task != tasks.get(task.id):
        store(task)
    return rules.derive(task, ChainMap({task.id: task}, tasks))  # type: ignore[arg-type]


class RuleBoard:
    """The `Board` operations that are one rule each; a backend provides `_apply`,
    `unclaimed`, and what differs (reading, `create`, `discard`)."""

    def _apply(self, change: Change) -> Task | None:
        """Load the records, `apply_rule`, store: atomically against every other writer."""
        raise NotImplementedError

    def unclaimed(self) -> list[Task]:
        raise NotImplementedError

    def claim(self, task_id: int, agent: str) -> Task:
        """Take a task: pending, unblocked and unowned (or assigned to `agent`) -> in progress.

        Claiming a task the agent already has in progress returns it unchanged, so a
        claim repeated after a crash is harmless.

        Raises:
            TaskError: unknown id, blocked, owned by another agent, or finished.
        """
        return self._apply(lambda t, now: rules.claim(t, task_id, agent, now))

    def claim_next(self, agent: str) -> Task | None:
        """Atomically claim the oldest claimable task for `agent`; None if there is none."""
        if not self.unclaimed():  # the common case when idle: no lock, no transaction
            return None

        def change(tasks: rules.Tasks, now: float) -> Task | None:
            open_tasks = rules.claimable(tasks)
            return rules.claim(tasks, open_tasks[0].id, agent, now) if open_tasks else None

        return self._apply(change)

    def complete(self, task_id: int, agent: str, result: str | None = None) -> Task:
        """Mark a task completed. Only its owner may; repeating it is harmless.

        Raises:
            TaskError: unknown id, not owned by `agent`, blocked, or finished otherwise.
        """
        return self._apply(lambda t, now: rules.finish(t, task_id, agent, "completed", result, now))

    def fail(self, task_id: int, agent: str, result: str | None = None) -> Task:
        """The owner gives up on a task; `result` says why. Tasks behind it stay blocked."""
        return self._apply(lambda t, now: rules.finish(t, task_id, agent, "failed", result, now))

    def release(self, task_id: int, agent: str) -> Task:
        """The owner stops working on a task without finishing it (pending again)."""
        return self._apply(lambda t, now: rules.release(t, task_id, agent, now))

    def cancel(self, task_id: int) -> Task:
        """Nobody is to work on it any more (the user's call)."""
        return self._apply(lambda t, now: rules.cancel(t, task_id, now))

    def reassign(self, task_id: int, owner: str | None) -> Task:
        """Give an unfinished task to `owner` (None: open); it starts over as pending."""
        return self._apply(lambda t, now: rules.reassign(t, task_id, owner, now))

    def reopen(self, task_id: int) -> Task:
        """A completed, failed or cancelled task becomes pending again, result cleared."""
        return self._apply(lambda t, now: rules.reopen(t, task_id, now))

    def set_blocked_by(self, task_id: int, blocked_by: Sequence[int]) -> Task:
        """Replace what a task waits on. Unknown ids and cycles are refused."""
        return self._apply(lambda t, now: rules.set_blocked_by(t, task_id, blocked_by, now))

    def submit_plan(self, task_id: int, agent: str, plan: str) -> Task:
        """The owner's plan for its in-progress task, waiting for review."""
        return self._apply(lambda t, now: rules.submit_plan(t, task_id, agent, plan, now))

    def review_plan(self, task_id: int, approve: bool, feedback: str | None = None) -> Task:
        """Approve or (with a reason) reject the plan waiting on a task."""
        return self._apply(lambda t, now: rules.review_plan(t, task_id, approve, feedback, now))


class Stored(Mapping[int, Task]):
    """The records a rule sees: iterating gives the unfinished tasks and their blockers
    (all that claimable, open and stuck questions range over); looking up any other id
    reads it from the store (a finished task named as a blocker, or being reopened). So
    a write costs the same however many tasks the team has finished, on either backend."""

    def __init__(self, hot: dict[int, Task], read: Callable[[int], Task | None]) -> None:
        self._hot = hot
        self._read = read
        self._more: dict[int, Task | None] = {}

    def __getitem__(self, task_id: int) -> Task:
        task = self._hot.get(task_id)
        if task is None:
            if task_id not in self._more:
                self._more[task_id] = self._read(task_id) if isinstance(task_id, int) else None
            task = self._more[task_id]
        if task is None:
            raise KeyError(task_id)
        return task

    def __contains__(self, task_id: object) -> bool:
        try:
            self[task_id]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[int]:
        return iter(self._hot)

    def __len__(self) -> int:
        return len(self._hot)
