"""The task-board seam: what agents, their tools and the runtime need from a board.

`TaskBoard` (team.tasks, one JSON file per task) is the one on disk; a board on another
store implements the same protocol. Task records are `team.tasks.Task`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from team.tasks import Task


class Board(Protocol):
    """A shared task board. Safe to use from many agent threads at once."""

    def list(self) -> list[Task]:
        """Every task, by id."""
        ...

    def get(self, task_id: int) -> Task: ...

    def open_for(self, agent: str) -> list[Task]:
        """Tasks `agent` owns that are not completed."""
        ...

    def create(
        self,
        subject: str,
        *,
        owner: str | None = None,
        description: str = "",
        created_by: str = "user",
    ) -> Task: ...

    def claim(self, task_id: int, agent: str) -> Task: ...

    def claim_next(self, agent: str) -> Task | None:
        """Atomically claim the oldest open task; None if there is none."""
        ...

    def complete(self, task_id: int, agent: str, result: str | None = None) -> Task: ...

    def all_done(self) -> bool: ...
