"""The Redis board keeps finished tasks apart, so what every reader fetches after a change,
and what every write reads in its transaction, does not grow with the board's history
(a real redis-server; the behaviour both backends share is in test_board_contract.py)."""

from __future__ import annotations

import redis

from team.backends.redis_board import RedisBoard
from team.backends.redis_link import RedisLink


def _board(url: str) -> tuple[RedisBoard, redis.Redis, RedisLink]:
    link = RedisLink(url, "hist")
    return RedisBoard(link), redis.Redis.from_url(url, decode_responses=True), link


def test_finished_tasks_leave_the_hash_every_change_reads(redis_url: str) -> None:
    board, r, link = _board(redis_url)
    for i in range(60):
        board.create(f"task {i}")
    for i in range(1, 56):
        board.claim(i, "alice")
        board.complete(i, "alice", result=f"done {i}")
    board.create("after the old one", blocked_by=[3])

    assert r.hlen(link.key("tasks")) == 6  # 56..60 and the new one: all a write reads
    assert r.hlen(link.key("tasks", "done")) == 55
    assert [t.id for t in board.unfinished()] == [56, 57, 58, 59, 60, 61]
    assert board.get(61).status == "pending"  # its blocker, long finished, is completed
    assert board.get(3).result == "done 3"
    assert [t.id for t in board.recently_finished(3)] == [53, 54, 55]
    assert len(board.list()) == 61

    board.reopen(3)  # back among the unfinished, and out of the finished ones
    assert r.hexists(link.key("tasks"), "3") and not r.hexists(link.key("tasks", "done"), "3")
    assert [t.id for t in board.recently_finished(2)] == [54, 55]
    assert board.get(61).status == "blocked"


def test_a_board_written_before_the_split_is_moved_by_its_next_write(redis_url: str) -> None:
    board, r, link = _board(redis_url)
    for i in range(5):
        board.create(f"task {i}")
    for i in (1, 2):
        board.claim(i, "alice")
        board.complete(i, "alice")
    # as the board used to store them: every record, finished or not, in one hash
    for field, data in r.hgetall(link.key("tasks", "done")).items():
        r.hset(link.key("tasks"), field, data)
    r.delete(link.key("tasks", "done"), link.key("tasks", "done", "order"))
    r.incr(link.key("tasks", "version"))

    assert [t.id for t in board.unfinished()] == [3, 4, 5]
    assert [t.id for t in board.recently_finished(5)] == [1, 2]
    assert [t.status for t in board.list()] == ["completed"] * 2 + ["pending"] * 3

    board.claim(3, "bob")
    assert sorted(r.hkeys(link.key("tasks"))) == ["3", "4", "5"]
    assert sorted(r.hkeys(link.key("tasks", "done"))) == ["1", "2"]
    assert [t.id for t in board.recently_finished(5)] == [1, 2]
