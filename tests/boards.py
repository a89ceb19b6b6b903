"""Task board backends for the contract tests (`tests/test_board_contract.py`).

A backend is named by a picklable spec, `(kind, where)`, so that child processes in the
cross-process tests can open the same board. A new backend adds one branch to
`open_board` and one entry to `BACKENDS` (with whatever server its fixture needs).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from team.tasks import Board, TaskBoard, TaskError

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


# -- the children of the cross-process tests (here, not in the test module: each child
# imports the module its function lives in, and this one does not load pytest) ---------


def claim_each(spec: tuple, agent: str, n: int, ready: Any, start: Any, out: Any) -> None:
    board = open_board(spec)
    ready.put(agent)
    start.wait(10)
    won = []
    for i in range(1, n + 1):
        try:
            board.claim(i, agent)
            won.append(i)
        except TaskError:
            pass
    out.put((agent, won))


def claim_until_empty(spec: tuple, agent: str, ready: Any, start: Any, out: Any) -> None:
    board = open_board(spec)
    ready.put(agent)
    start.wait(10)
    won = []
    while (t := board.claim_next(agent)) is not None:
        won.append(t.id)
    out.put((agent, won))


def work_the_chain(spec: tuple, agent: str, n: int, ready: Any, start: Any, out: Any) -> None:
    """Claim whatever is claimable, complete it at once; until the whole chain is done."""
    board = open_board(spec)
    ready.put(agent)
    start.wait(10)
    claims = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        task = board.claim_next(agent)
        if task is None:
            if all(t.status == "completed" for t in board.list()):
                break
            time.sleep(0.002)
            continue
        claims.append((task.id, task.updated_at))
        board.complete(task.id, agent, f"done by {agent}")
    out.put((agent, claims))


def create_many(spec: tuple, agent: str, n: int, ready: Any, start: Any, out: Any) -> None:
    board = open_board(spec)
    ready.put(agent)
    start.wait(10)
    out.put((agent, [board.create(f"{agent} {i}", created_by=agent).id for i in range(n)]))
