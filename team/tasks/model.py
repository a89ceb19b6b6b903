"""The task record, its statuses, and the `Board` protocol every backend implements.

See docs/design.md ("Task board"). The rules that move a task from one status to another
live in `team.tasks.rules` as pure functions over records, so every backend (files,
Redis) applies exactly the same ones; a backend only supplies storage and atomicity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from team.core.errors import UserError

TaskStatus = Literal["pending", "in_progress", "blocked", "completed", "failed", "cancelled"]
"""`blocked` is derived, never stored: a pending task whose blockers are not all completed."""
FINISHED: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
PlanState = Literal["submitted", "approved", "rejected"]


class Task(BaseModel):
    """One task record: what `team tasks --json` prints and `list_tasks` returns."""

    # frozen: a board shares its records between readers, so none may change in place.
    # pydantic-core keeps the strings it parses from JSON in one process-wide cache of
    # ~16,000 entries; the values here (subjects, results, times) are nearly all new, so
    # caching them only fills it over a long run. Field names repeat: those are kept.
    model_config = ConfigDict(extra="ignore", frozen=True, cache_strings="keys")

    id: int
    subject: str
    description: str = ""
    status: TaskStatus = "pending"
    owner: str | None = None
    """The agent it is assigned to or claimed by; None while the task is open."""
    blocked_by: list[int] = Field(default_factory=list)
    """Tasks that must be completed before this one can be claimed."""
    result: str | None = None
    """What the owner said when completing (or failing) it."""
    created_by: str = "user"
    created_at: float
    """Unix seconds."""
    updated_at: float
    completed_at: float | None = None
    """Unix seconds; set when the task is completed, cleared when it is reopened."""
    plan: str | None = None
    """The owner's plan, when its agent works under plan approval."""
    plan_state: PlanState | None = None
    plan_feedback: str | None = None
    """Why the plan was rejected (or a note with the approval)."""

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class TaskError(UserError):
    """A task operation that cannot be done: unknown id, owned by another, blocked, a cycle."""


class Board(Protocol):
    """The operations the agent loop, the tools and the CLI use. One process or many.

    Every writing operation is atomic across threads and processes: two agents racing
    for one task have one winner, and a claim is checked against its blockers' status
    at the moment it is made. Every returned `Task` carries its derived status.
    """

    def get(self, task_id: int) -> Task: ...
    def list(self) -> list[Task]:
        """Every task, by id. Its cost grows with the board's history: for the CLI."""
        ...

    def unfinished(self) -> list[Task]:
        """Every task not finished (pending, blocked, in progress), by id."""
        ...

    def recently_finished(self, limit: int) -> list[Task]:
        """The `limit` finished tasks updated last (ties: the higher id), by id."""
        ...

    def open_for(self, agent: str) -> list[Task]: ...
    def unclaimed(self) -> list[Task]: ...
    def all_done(self) -> bool: ...

    def create(
        self,
        subject: str,
        *,
        owner: str | None = None,
        description: str = "",
        created_by: str = "user",
        blocked_by: Sequence[int] = (),
    ) -> Task: ...
    def claim(self, task_id: int, agent: str) -> Task: ...
    def claim_next(self, agent: str) -> Task | None: ...
    def complete(self, task_id: int, agent: str, result: str | None = None) -> Task: ...
    def fail(self, task_id: int, agent: str, result: str | None = None) -> Task: ...
    def release(self, task_id: int, agent: str) -> Task: ...
    def cancel(self, task_id: int) -> Task: ...
    def reassign(self, task_id: int, owner: str | None) -> Task: ...
    def reopen(self, task_id: int) -> Task: ...
    def set_blocked_by(self, task_id: int, blocked_by: Sequence[int]) -> Task: ...
    def submit_plan(self, task_id: int, agent: str, plan: str) -> Task: ...
    def review_plan(self, task_id: int, approve: bool, feedback: str | None = None) -> Task: ...
    def discard(self, task_id: int) -> None: ...
