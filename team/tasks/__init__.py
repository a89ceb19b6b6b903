"""The task board (docs/design.md, "Task board"): records, rules, and the file backend."""

from team.tasks.files import TaskBoard
from team.tasks.model import FINISHED, Board, Task, TaskError, TaskStatus

__all__ = ["FINISHED", "Board", "Task", "TaskBoard", "TaskError", "TaskStatus"]
