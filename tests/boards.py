"""Task board backends for the contract tests (`tests/test_board_contract.py`).

A backend is named by a picklable spec, `(kind, where)`, so that child processes in the
cross-process tests can open the same board. A new backend adds one branch to
`open_board` and one entry to `BACKENDS` (with whatever server its fixture needs).
"""

from __future__ import annotations

from pathlib import Path

from team.tasks import Board, TaskBoard

BACKENDS = ["files", "redis"]


def open_board(spec: tuple[str, str]) -> Board:
    kind, where = spec
    if kind == "files":
        return TaskBoard(Path(where))
    if kind == "redis":  # where: the URL of the test's redis-server
        from team.backends.redis_board import RedisBoard
        from team.backends.redis_link import RedisLink

        return RedisBoard(RedisLink(where, "boards"))
    raise ValueError(f"unknown board backend {kind!r}")
