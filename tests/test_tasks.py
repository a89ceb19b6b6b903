"""The task board: records on disk, claim rules, and claims racing across processes."""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from team.tasks import Task, TaskBoard, TaskError


@pytest.fixture
def board(tmp_path: Path) -> TaskBoard:
    return TaskBoard(tmp_path / ".team" / "tasks")


def test_create_writes_one_json_file_per_task(board: TaskBoard) -> None:
    t = board.create("write the parser", description="in team/parse.py", created_by="alice")
    assert t.id == 1 and t.status == "pending" and t.owner is None
    data = json.loads((board.root / "1.json").read_text())
    assert data["subject"] == "write the parser"
    assert data["description"] == "in team/parse.py"
    assert data["created_by"] == "alice"
    assert board.get(1) == t


def test_ids_are_numeric_and_list_sorts_numerically(board: TaskBoard) -> None:
    for i in range(12):
        board.create(f"task {i + 1}")
    assert [t.id for t in board.list()] == list(range(1, 13))  # 10 after 2, not after 1
    assert board.get(10).subject == "task 10"


def test_ids_are_not_reused_after_a_file_goes_bad(board: TaskBoard) -> None:
    board.create("a")
    board.create("b")
    (board.root / "2.json").write_text("not json")
    assert board.create("c").id == 3


def test_unknown_task_is_a_clear_error(board: TaskBoard) -> None:
    with pytest.raises(TaskError, match=r"^no task #7$"):
        board.get(7)
    with pytest.raises(TaskError, match="no task #7"):
        board.claim(7, "alice")


def test_empty_subject_is_refused(board: TaskBoard) -> None:
    with pytest.raises(TaskError):
        board.create("   ")
    assert board.list() == []


def test_claim_open_task(board: TaskBoard) -> None:
    board.create("open one")
    t = board.claim(1, "alice")
    assert (t.status, t.owner) == ("in_progress", "alice")
    assert board.get(1).owner == "alice"  # on disk, not just returned
    assert board.claim(1, "alice") == t  # repeating a claim is harmless


def test_claim_owned_by_another_names_the_owner(board: TaskBoard) -> None:
    board.create("bob's job", owner="bob")
    with pytest.raises(TaskError, match="owned by bob"):
        board.claim(1, "alice")
    assert board.claim(1, "bob").status == "in_progress"
    with pytest.raises(TaskError, match="owned by bob"):
        board.claim(1, "alice")


def test_claim_completed_is_refused(board: TaskBoard) -> None:
    board.create("x")
    board.claim(1, "alice")
    board.complete(1, "alice", "done")
    with pytest.raises(TaskError, match="already completed"):
        board.claim(1, "alice")


def test_complete_only_by_owner_and_idempotent(board: TaskBoard) -> None:
    board.create("x")
    with pytest.raises(TaskError, match="claim it first"):
        board.complete(1, "alice")
    board.claim(1, "alice")
    with pytest.raises(TaskError, match="owned by alice"):
        board.complete(1, "bob")
    t = board.complete(1, "alice", "shipped")
    assert (t.status, t.result) == ("completed", "shipped")
    assert board.complete(1, "alice") == t  # again: same record, result kept
    with pytest.raises(TaskError, match="completed by alice"):
        board.complete(1, "bob")


def test_views_open_for_unclaimed_all_done(board: TaskBoard) -> None:
    assert board.all_done()  # an empty board has nothing open
    board.create("for alice", owner="alice")
    board.create("open")
    board.create("also open")
    assert [t.id for t in board.open_for("alice")] == [1]
    assert [t.id for t in board.unclaimed()] == [2, 3]
    assert board.claim_next("bob").id == 2  # the oldest open task
    assert [t.id for t in board.open_for("bob")] == [2]
    assert not board.all_done()
    board.complete(1, "alice")
    board.complete(2, "bob")
    assert board.claim_next("carol").id == 3
    assert board.claim_next("carol") is None
    board.complete(3, "carol")
    assert board.all_done()
    assert board.open_for("alice") == []


def test_malformed_files_are_skipped_with_a_warning(
    board: TaskBoard, caplog: pytest.LogCaptureFixture
) -> None:
    board.create("good")
    board.create("will break")
    (board.root / "2.json").write_text('{"id": 2, "subj')
    (board.root / "3.json").write_text('{"id": 3}')  # valid JSON, not a task
    (board.root / "notes.txt").write_text("not a task file at all")
    with caplog.at_level(logging.WARNING, logger="team.tasks"):
        assert [t.id for t in board.list()] == [1]
    assert "2.json" in caplog.text and "3.json" in caplog.text
    assert board.all_done() is False
    with pytest.raises(TaskError, match="unreadable"):
        board.get(2)


def test_a_board_that_does_not_exist_yet_is_empty(tmp_path: Path) -> None:
    board = TaskBoard(tmp_path / "nowhere")
    assert board.list() == [] and board.unclaimed() == []
    assert not (tmp_path / "nowhere").exists()  # reading creates nothing


def test_threads_racing_for_one_task_have_one_winner(board: TaskBoard) -> None:
    for _ in range(10):
        board.create("contested")
    wins: dict[int, list[str]] = {i: [] for i in range(1, 11)}
    start = threading.Barrier(6)

    def racer(name: str) -> None:
        mine = TaskBoard(board.root)  # separate boards: the lock must not be per-object
        start.wait(timeout=10)
        for i in range(1, 11):
            try:
                mine.claim(i, name)
                wins[i].append(name)
            except TaskError:
                pass

    threads = [threading.Thread(target=racer, args=(f"a{n}",)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for i, winners in wins.items():
        assert len(winners) == 1, (i, winners)
        assert board.get(i).owner == winners[0]


# -- across processes: real processes, real flock -----------------------------------------


def _claim_each(root: str, agent: str, n: int, ready: Any, start: Any, out: Any) -> None:
    board = TaskBoard(Path(root))
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


def _claim_until_empty(root: str, agent: str, ready: Any, start: Any, out: Any) -> None:
    board = TaskBoard(Path(root))
    ready.put(agent)
    start.wait(10)
    won = []
    while (t := board.claim_next(agent)) is not None:
        won.append(t.id)
    out.put((agent, won))


def _create_many(root: str, agent: str, n: int, ready: Any, start: Any, out: Any) -> None:
    board = TaskBoard(Path(root))
    ready.put(agent)
    start.wait(10)
    out.put((agent, [board.create(f"{agent} {i}", created_by=agent).id for i in range(n)]))


def _race(target: Callable[..., None], args_for: list[tuple]) -> dict[str, list[int]]:
    ctx = mp.get_context("spawn")  # a clean interpreter each: no lock state inherited
    ready, start, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, ready, start, out)) for a in args_for]
    for p in procs:
        p.start()
    for _ in procs:  # release them together only once every one has imported and is waiting
        ready.get(timeout=60)
    start.set()
    results = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    return results


def test_processes_racing_to_claim_have_exactly_one_winner_per_task(board: TaskBoard) -> None:
    n = 25
    for i in range(n):
        board.create(f"contested {i}")
    results = _race(_claim_each, [(str(board.root), f"p{k}", n) for k in range(4)])
    owners: dict[int, str] = {}
    for agent, won in results.items():
        for i in won:
            assert i not in owners, f"task #{i} won by {owners[i]} and {agent}"
            owners[i] = agent
    assert sorted(owners) == list(range(1, n + 1))
    assert {t.id: t.owner for t in board.list()} == owners


def test_claim_next_across_processes_hands_out_each_task_once(board: TaskBoard) -> None:
    n = 30
    for i in range(n):
        board.create(f"job {i}")
    results = _race(_claim_until_empty, [(str(board.root), f"w{k}") for k in range(4)])
    handed = sorted(i for won in results.values() for i in won)
    assert handed == list(range(1, n + 1))
    assert board.unclaimed() == []
    assert all(t.status == "in_progress" for t in board.list())


def test_processes_creating_at_once_get_distinct_ids(board: TaskBoard) -> None:
    results = _race(_create_many, [(str(board.root), f"c{k}", 10) for k in range(3)])
    ids = sorted(i for made in results.values() for i in made)
    assert ids == list(range(1, 31))
    assert len(board.list()) == 30
    for agent, made in results.items():
        assert all(board.get(i).created_by == agent for i in made)


def test_task_records_round_trip_as_json(board: TaskBoard) -> None:
    t = board.create("x", owner="alice")
    assert Task.model_validate(json.loads(json.dumps(t.model_dump()))) == t
