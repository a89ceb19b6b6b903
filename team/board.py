"""The task-board seam: what agents, their tools and the runtime need from a board.

The protocol itself is `team.tasks.model.Board` (one definition, so backends cannot
drift): `TaskBoard` (team.tasks, one JSON file per task) is the one on disk; a board on
another store implements the same protocol and passes `tests/test_board_contract.py`.
"""

from __future__ import annotations

from team.tasks.model import Board

__all__ = ["Board"]
