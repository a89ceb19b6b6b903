"""The task board contract: what every backend must do, tested on each of them.

Parametrised over `tests/boards.py::BACKENDS`; the cross-process tests open the board in
fresh interpreters from its spec, so they race through the backend's real atomicity.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from collections.abc import Callable
from pathlib import Path

import boards
import pytest
from boards import BACKENDS, open_board

from team.tasks import Board, Task, TaskError


@pytest.fixture(params=BACKENDS)
def board_spec(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "files":
        return ("files", str(tmp_path / ".team" / "tasks"))
    if request.param == "redis":  # a real redis-server, wiped for each test
        return ("redis", request.getfixturevalue("redis_url"))
    raise ValueError(request.param)


@pytest.fixture
def board(board_spec: tuple[str, str]) -> Board:
    return open_board(board_spec)


# -- records and ids ----------------------------------------------------------------------


def test_create_returns_the_stored_record(board: Board) -> None:
    t = board.create("write the parser", description="in team/parse.py", created_by="alice")
    assert (t.id, t.status, t.owner, t.blocked_by, t.result) == (1, "pending", None, [], None)
    assert t.description == "in team/parse.py" and t.created_by == "alice"
    assert t.completed_at is None and t.created_at <= time.time()
    assert board.get(1) == t


def test_ids_are_numeric_and_list_sorts_numerically(board: Board) -> None:
    for i in range(12):
        board.create(f"task {i + 1}")
    assert [t.id for t in board.list()] == list(range(1, 13))  # 10 after 2, not after 1
    assert board.get(10).subject == "task 10"


def test_unknown_task_is_a_clear_error(board: Board) -> None:
    with pytest.raises(TaskError, match=r"^no task #7$"):
        board.get(7)
    for op in (
        lambda: board.claim(7, "alice"),
        lambda: board.complete(7, "alice"),
        lambda: board.cancel(7),
        lambda: board.reassign(7, "bob"),
        lambda: board.reopen(7),
    ):
        with pytest.raises(TaskError, match="no task #7"):
            op()
    assert board.list() == []


def test_empty_subject_is_refused(board: Board) -> None:
    with pytest.raises(TaskError):
        board.create("   ")
    assert board.list() == []


def test_task_records_round_trip_as_json(board: Board) -> None:
    t = board.create("x", owner="alice")
    assert Task.model_validate_json(t.model_dump_json()) == t


# -- claiming and completing -------------------------------------------------------------


def test_claim_open_task(board: Board) -> None:
    board.create("open one")
    t = board.claim(1, "alice")
    assert (t.status, t.owner) == ("in_progress", "alice")
    assert board.get(1).owner == "alice"
    assert board.claim(1, "alice") == t  # repeating a claim is harmless


def test_claim_owned_by_another_names_the_owner(board: Board) -> None:
    board.create("bob's job", owner="bob")
    with pytest.raises(TaskError, match="owned by bob"):
        board.claim(1, "alice")
    assert board.claim(1, "bob").status == "in_progress"


def test_complete_only_by_owner_and_idempotent(board: Board) -> None:
    board.create("x")
    with pytest.raises(TaskError, match="claim it first"):
        board.complete(1, "alice")
    board.claim(1, "alice")
    with pytest.raises(TaskError, match="owned by alice"):
        board.complete(1, "bob")
    t = board.complete(1, "alice", "shipped")
    assert (t.status, t.result) == ("completed", "shipped")
    assert t.completed_at is not None and t.completed_at >= t.created_at
    assert board.complete(1, "alice") == t  # again: same record, result kept
    with pytest.raises(TaskError, match="already completed"):
        board.claim(1, "bob")


def test_fail_keeps_the_reason_and_refuses_claims_until_reopened(board: Board) -> None:
    board.create("flaky")
    board.claim(1, "alice")
    t = board.fail(1, "alice", "the server is down")
    assert (t.status, t.result, t.completed_at) == ("failed", "the server is down", None)
    with pytest.raises(TaskError, match="failed"):
        board.claim(1, "bob")
    with pytest.raises(TaskError, match="already failed"):
        board.complete(1, "alice")
    t = board.reopen(1)
    assert (t.status, t.result, t.owner) == ("pending", None, "alice")
    assert board.claim(1, "alice").status == "in_progress"


def test_release_gives_the_task_back_to_pending(board: Board) -> None:
    board.create("x", owner="alice")
    board.claim(1, "alice")
    assert board.release(1, "alice").status == "pending"
    with pytest.raises(TaskError, match="not yours"):
        board.release(1, "bob")


def test_views_open_for_unclaimed_all_done(board: Board) -> None:
    assert board.all_done()  # an empty board has nothing open
    board.create("for alice", owner="alice")
    board.create("open")
    board.create("also open")
    assert [t.id for t in board.open_for("alice")] == [1]
    assert [t.id for t in board.unclaimed()] == [2, 3]
    assert board.claim_next("bob").id == 2  # the oldest open task
    assert not board.all_done()
    board.complete(1, "alice")
    board.complete(2, "bob")
    assert board.claim_next("carol").id == 3
    assert board.claim_next("carol") is None
    board.complete(3, "carol")
    assert board.all_done()
    assert board.open_for("alice") == []


def test_unfinished_and_the_newest_finished(board: Board) -> None:
    """What a running team asks instead of every task: the unfinished ones, and the few
    finished ones updated last (so neither answer grows with the board's history)."""
    for i in range(6):
        board.create(f"task {i}")
    board.create("waits on #1", blocked_by=[1])
    for i in (3, 1, 5):  # finished in this order
        board.claim(i, "alice")
        board.complete(i, "alice")
    board.cancel(2)
    unfinished = board.unfinished()
    assert [t.id for t in unfinished] == [4, 6, 7]
    assert unfinished[-1].status == "pending"  # derived: its blocker is completed
    assert [t.id for t in board.recently_finished(2)] == [2, 5]  # the last two, by id
    assert [t.id for t in board.recently_finished(10)] == [1, 2, 3, 5]
    assert board.recently_finished(0) == []
    assert board.recently_finished(10) == [t for t in board.list() if t.finished]
    board.reopen(2)
    assert [t.id for t in board.recently_finished(2)] == [1, 5]
    assert [t.id for t in board.unfinished()] == [2, 4, 6, 7]


# -- dependencies ---------------------------------------------------------------------------


def test_a_task_is_blocked_until_every_blocker_completes(board: Board) -> None:
    board.create("schema")
    board.create("migrations")
    t = board.create("api", blocked_by=[1, 2])
    assert (t.status, t.blocked_by) == ("blocked", [1, 2])
    with pytest.raises(TaskError, match=r"blocked by #1, #2"):
        board.claim(3, "alice")
    assert [u.id for u in board.unclaimed()] == [1, 2]  # claim_next skips blocked work
    board.claim(1, "bob")
    board.complete(1, "bob")
    assert board.get(3).status == "blocked"
    with pytest.raises(TaskError, match=r"blocked by #2\b"):
        board.claim(3, "alice")
    board.claim(2, "carol")
    board.complete(2, "carol")
    assert board.get(3).status == "pending"
    assert board.claim_next("alice").id == 3


def test_blocked_is_derived_and_reopening_a_blocker_blocks_again(board: Board) -> None:
    board.create("a")
    board.create("b", blocked_by=[1], owner="alice")
    board.claim(1, "bob")
    board.complete(1, "bob")
    assert board.get(2).status == "pending"
    board.reopen(1)
    assert board.get(2).status == "blocked"
    assert [t.status for t in board.open_for("alice")] == ["blocked"]


def test_unknown_blockers_are_refused_and_nothing_is_created(board: Board) -> None:
    board.create("a")
    with pytest.raises(TaskError, match=r"no task #5"):
        board.create("b", blocked_by=[1, 5])
    assert [t.id for t in board.list()] == [1]
    assert board.create("c").id == 2  # the refused one took no id


def test_cycles_are_refused_and_nothing_changes(board: Board) -> None:
    board.create("a")
    board.create("b", blocked_by=[1])
    board.create("c", blocked_by=[2])
    before = board.list()
    with pytest.raises(TaskError, match=r"cycle.*#1 -> #3 -> #2 -> #1"):
        board.set_blocked_by(1, [3])
    with pytest.raises(TaskError, match=r"cycle.*#2 -> #2"):
        board.set_blocked_by(2, [2])
    assert board.list() == before
    assert board.set_blocked_by(3, [1, 2]).blocked_by == [1, 2]  # a diamond is fine


def test_all_done_ignores_tasks_stuck_behind_a_failure(board: Board) -> None:
    board.create("build")
    board.create("deploy", blocked_by=[1])
    board.claim(1, "alice")
    assert not board.all_done()
    board.fail(1, "alice", "compiler crashed")
    assert board.get(2).status == "blocked"
    assert board.all_done()  # nothing can run; waiting would stall the team forever
    board.reopen(1)
    assert not board.all_done()


def test_cancel_reassign_reopen(board: Board) -> None:
    board.create("x", owner="alice")
    board.claim(1, "alice")
    t = board.reassign(1, "bob")
    assert (t.owner, t.status) == ("bob", "pending")  # bob starts it afresh
    with pytest.raises(TaskError, match="owned by bob"):
        board.complete(1, "alice")
    assert board.cancel(1).status == "cancelled"
    assert board.cancel(1).status == "cancelled"  # harmless twice
    with pytest.raises(TaskError, match="cancelled"):
        board.claim(1, "bob")
    with pytest.raises(TaskError, match="reopen it first"):
        board.reassign(1, "carol")
    assert board.reopen(1).status == "pending"
    with pytest.raises(TaskError, match="not finished"):
        board.reopen(1)
    board.claim(1, "bob")
    board.complete(1, "bob", "done")
    with pytest.raises(TaskError, match="already completed"):
        board.cancel(1)


def test_plans_are_submitted_by_the_owner_and_reviewed_once(board: Board) -> None:
    board.create("risky change", owner="alice")
    with pytest.raises(TaskError, match="claim it first"):
        board.submit_plan(1, "alice", "step 1")
    board.claim(1, "alice")
    t = board.submit_plan(1, "alice", "1. read 2. change")
    assert (t.plan, t.plan_state) == ("1. read 2. change", "submitted")
    with pytest.raises(TaskError, match="say why"):
        board.review_plan(1, approve=False)
    t = board.review_plan(1, approve=False, feedback="too broad")
    assert (t.plan_state, t.plan_feedback) == ("rejected", "too broad")
    with pytest.raises(TaskError, match="no plan waiting"):
        board.review_plan(1, approve=True)
    board.submit_plan(1, "alice", "1. read only parse.py")
    assert board.review_plan(1, approve=True).plan_state == "approved"


# -- threads and processes --------------------------------------------------------------


def test_threads_racing_for_one_task_have_one_winner(board_spec: tuple[str, str]) -> None:
    board = open_board(board_spec)
    for _ in range(10):
        board.create("contested")
    wins: dict[int, list[str]] = {i: [] for i in range(1, 11)}
    start = threading.Barrier(6)

    def racer(name: str) -> None:
        mine = open_board(board_spec)  # separate boards: the lock must not be per-object
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


def _race(target: Callable[..., None], args_for: list[tuple]) -> dict[str, list]:
    ctx = mp.get_context("spawn")  # a clean interpreter each: no lock state inherited
    ready, start, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, ready, start, out)) for a in args_for]
    for p in procs:
        p.start()
    for _ in procs:  # release them together only once every one has imported and is waiting
        ready.get(timeout=60)
    start.set()
    results = dict(out.get(timeout=90) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    return results


def test_processes_racing_to_claim_have_exactly_one_winner_per_task(
    board_spec: tuple[str, str],
) -> None:
    board, n = open_board(board_spec), 25
    for i in range(n):
        board.create(f"contested {i}")
    results = _race(boards.claim_each, [(board_spec, f"p{k}", n) for k in range(4)])
    owners: dict[int, str] = {}
    for agent, won in results.items():
        for i in won:
            assert i not in owners, f"task #{i} won by {owners[i]} and {agent}"
            owners[i] = agent
    assert sorted(owners) == list(range(1, n + 1))
    assert {t.id: t.owner for t in board.list()} == owners


def test_claim_next_across_processes_hands_out_each_task_once(
    board_spec: tuple[str, str],
) -> None:
    board, n = open_board(board_spec), 30
    for i in range(n):
        board.create(f"job {i}")
    results = _race(boards.claim_until_empty, [(board_spec, f"w{k}") for k in range(4)])
    handed = sorted(i for won in results.values() for i in won)
    assert handed == list(range(1, n + 1))
    assert board.unclaimed() == []


def test_across_processes_a_claim_never_runs_ahead_of_its_blocker(
    board_spec: tuple[str, str],
) -> None:
    # a chain 1 <- 2 <- ... <- 12, plus #13 waiting on the whole chain's middle and end
    board, n = open_board(board_spec), 12
    board.create("step 1")
    for i in range(2, n + 1):
        board.create(f"step {i}", blocked_by=[i - 1])
    board.create("fan-in", blocked_by=[6, n])
    results = _race(boards.work_the_chain, [(board_spec, f"w{k}", n) for k in range(4)])
    claimed_at = {i: at for claims in results.values() for i, at in claims}
    assert sorted(claimed_at) == list(range(1, n + 2))  # each claimed exactly once
    done = {t.id: t for t in board.list()}
    assert all(t.status == "completed" for t in done.values())
    for t in done.values():
        for b in t.blocked_by:
            assert claimed_at[t.id] >= done[b].completed_at, f"#{t.id} claimed before #{b} done"


def test_processes_creating_at_once_get_distinct_ids(board_spec: tuple[str, str]) -> None:
    results = _race(boards.create_many, [(board_spec, f"c{k}", 10) for k in range(3)])
    board = open_board(board_spec)
    ids = sorted(i for made in results.values() for i in made)
    assert ids == list(range(1, 31))
    for agent, made in results.items():
        assert all(board.get(i).created_by == agent for i in made)
