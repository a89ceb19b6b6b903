"""Does a board operation cost more once the team has finished a lot of work?

Run: .venv/bin/python bench/bench_board.py [FEW] [MANY]   (defaults 100 3000)

For each backend (files, and Redis on a redis-server this script starts), a board with
FEW finished tasks and one with MANY, and on each the operations a running team makes:
a claim-and-complete cycle (two writes), `unfinished()` right after another node's
write (a reader that must fetch again), and `open_for`. Printed: ms per operation, and
MANY over FEW in the same run (the target: about 1.0, a cost that does not grow).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from redis_server import RedisServer

from team.backends.redis_board import RedisBoard
from team.backends.redis_link import RedisLink
from team.tasks import Board, TaskBoard

OPEN = 8  # unfinished tasks on the board, as a running team keeps it
OPS = 150


def filled(board: Board, finished: int) -> Board:
    for i in range(finished):
        t = board.create(f"old task {i}")
        board.claim(t.id, "old")
        board.complete(t.id, "old")
    for i in range(OPEN):
        board.create(f"open task {i}")
    return board


def ms_per(op: Callable[[int], None]) -> float:
    start = time.perf_counter()
    for i in range(OPS):
        op(i)
    return (time.perf_counter() - start) / OPS * 1000


def measure(board: Board, other: Board) -> dict[str, float]:
    def cycle(i: int) -> None:
        t = board.create(f"new task {i}")
        board.claim(t.id, "a")
        board.complete(t.id, "a")

    def fresh_read(i: int) -> None:
        other.create(f"from another node {i}")  # moves the board on: the reader refetches
        board.unfinished()

    def open_for(i: int) -> None:
        board.open_for("a")

    return {
        "create+claim+complete": ms_per(cycle),
        "write+unfinished": ms_per(fresh_read),
        "open_for": ms_per(open_for),
    }


def main() -> None:
    few, many = ([int(a) for a in sys.argv[1:3]] + [100, 3000][len(sys.argv[1:3]) :])[:2]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        server = RedisServer(base / "redis").start()
        try:
            results: dict[str, dict[int, dict[str, float]]] = {}
            for n in (few, many):
                d = base / f"files{n}"
                results.setdefault("files", {})[n] = measure(filled(TaskBoard(d), n), TaskBoard(d))
                link = RedisLink(server.url, f"bench{n}")
                results.setdefault("redis", {})[n] = measure(
                    filled(RedisBoard(link), n), RedisBoard(RedisLink(server.url, f"bench{n}"))
                )
        finally:
            server.stop()
    print(f"board operations with {few:,} and {many:,} finished tasks ({OPEN} open), ms/op")
    print(f"{'backend':8} {'operation':24} {few:>10,} {many:>10,} {'ratio':>7}")
    for backend, by_n in results.items():
        for op in by_n[few]:
            a, b = by_n[few][op], by_n[many][op]
            print(f"{backend:8} {op:24} {a:>10.2f} {b:>10.2f} {b / a:>7.2f}")


if __name__ == "__main__":
    main()
