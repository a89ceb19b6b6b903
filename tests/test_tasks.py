"""The file backend of the task board: records on disk. The contract is in test_board_contract."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from team.tasks import TaskBoard, TaskError, view


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


def test_ids_are_not_reused_after_a_file_goes_bad(board: TaskBoard) -> None:
    board.create("a")
    board.create("b")
    (board.root / "2.json").write_text("not json")
    assert board.create("c").id == 3


def test_malformed_files_are_skipped_with_a_warning(
    board: TaskBoard, caplog: pytest.LogCaptureFixture
) -> None:
    board.create("good")
    board.create("will break")
    (board.root / "2.json").write_text('{"id": 2, "subj')
    (board.root / "3.json").write_text('{"id": 3}')  # valid JSON, not a task
    (board.root / "notes.txt").write_text("not a task file at all")
    # as the next command sees it (a running board sees hand edits within RESCAN_S)
    board = TaskBoard(board.root)
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


def test_a_running_board_sees_every_write_of_another_at_once(tmp_path: Path, monkeypatch) -> None:
    """Readers keep the records in memory and follow the journal; a write by another
    board (another process) is seen by the next read, across journal rotations too."""
    monkeypatch.setattr(view, "JOURNAL_MAX_BYTES", 16)  # rotate every few writes
    monkeypatch.setattr(view, "RESCAN_S", 1e9)  # the journal alone, never the periodic scan
    reader = TaskBoard(tmp_path / "tasks")
    writer = TaskBoard(tmp_path / "tasks")
    assert reader.list() == []
    for i in range(12):
        t = writer.create(f"task {i}", owner="alice" if i % 2 else None)
        assert reader.list() == writer.list()
        if i % 3 == 0:
            writer.claim(t.id, t.owner or "bob")
            writer.complete(t.id, t.owner or "bob")
        assert reader.list() == writer.list()
        assert reader.unclaimed() == writer.unclaimed()
        assert reader.open_for("alice") == writer.open_for("alice")
    gone = writer.create("never announced")
    assert reader.get(gone.id) == gone
    writer.discard(gone.id)
    assert gone.id not in [t.id for t in reader.list()]
    assert reader.all_done() is False
    for t in writer.list():
        if not t.finished:
            writer.claim(t.id, t.owner or "bob")
            writer.complete(t.id, t.owner or "bob")
    assert reader.all_done() is True and reader.list() == writer.list()
    assert len((tmp_path / "tasks" / view.JOURNAL).read_bytes()) <= 16 + 8


def test_a_write_keeps_a_hand_edit_made_a_moment_before(tmp_path: Path, monkeypatch) -> None:
    """A writer decides on the files under the lock, not on the records it holds: an
    edit the journal never heard of is kept, not overwritten with what was there before."""
    monkeypatch.setattr(view, "RESCAN_S", 1e9)
    board = TaskBoard(tmp_path / "tasks")
    t = board.create("the old subject")
    assert board.list()[0].subject == "the old subject"  # now held in memory
    path = board.root / f"{t.id}.json"
    data = json.loads(path.read_text())
    data["subject"] = "the subject as edited by hand"
    path.write_text(json.dumps(data))
    board.claim(t.id, "alice")
    on_disk = json.loads(path.read_text())
    assert on_disk["subject"] == "the subject as edited by hand" and on_disk["owner"] == "alice"


def test_a_journal_lost_and_made_again_is_not_mistaken_for_the_old_one(
    tmp_path: Path, monkeypatch
) -> None:
    """A failed append (a full disk) deletes the journal; the next one can get the same
    inode and size. A reader must still see the writes behind it."""
    monkeypatch.setattr(view, "RESCAN_S", 1e9)
    reader = TaskBoard(tmp_path / "tasks")
    writer = TaskBoard(tmp_path / "tasks")
    t = writer.create("a")
    assert reader.get(t.id).owner is None and reader.unclaimed() == [t]
    journal = writer.root / view.JOURNAL
    size = journal.stat().st_size
    writer.claim(t.id, "bob")
    # what a lost append leaves: a journal of the old length and (often) the old inode
    journal.unlink()
    journal.write_bytes(b"9\n" * (size // 2))
    assert reader.unclaimed() == []
    assert reader.list()[0].owner == "bob"


def test_garbage_in_the_journal_is_not_an_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(view, "RESCAN_S", 1e9)
    reader = TaskBoard(tmp_path / "tasks")
    writer = TaskBoard(tmp_path / "tasks")
    writer.create("a")
    assert len(reader.list()) == 1
    with (writer.root / view.JOURNAL).open("ab") as f:
        f.write(b"\x00\x00 not an id\n")
    writer.create("b")
    assert [t.subject for t in reader.list()] == ["a", "b"]


def _finish(board: TaskBoard, subject: str, *, by: TaskBoard | None = None) -> None:
    """A task created on `board`, claimed and completed by alice through `by`."""
    t = board.create(subject)
    (by or board).claim(t.id, "alice")
    (by or board).complete(t.id, "alice")


def _reopen_by_hand(path: Path) -> None:
    """Edit a finished task's file back to open, as a person would: no journal line."""
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "status": "pending", "owner": None}))


def _newest_finished(board: TaskBoard, n: int) -> list:
    done = sorted((t for t in board.list() if t.finished), key=lambda t: (t.updated_at, t.id))
    return sorted(done[-n:], key=lambda t: t.id)


def test_a_running_board_does_not_hold_the_finished_tasks(tmp_path: Path, monkeypatch) -> None:
    """A process that runs for hours holds the unfinished tasks and a few finished ones,
    not every task the team ever finished; another process (the CLI) writing the board
    meanwhile is seen as before, including reopening old work and hand edits."""
    running = TaskBoard(tmp_path / "tasks")
    cli = TaskBoard(tmp_path / "tasks")
    total = view.KEEP_FINISHED * 3
    for i in range(total):
        _finish(cli, f"task {i}", by=running)
        assert running.unclaimed() == []
    waiting = cli.create("waits on the oldest", blocked_by=[1])
    assert running.unfinished() == [waiting] and waiting.status == "pending"
    assert running.claim_next("bob").id == waiting.id  # its finished blocker is read from disk
    assert running._view.held() <= view.KEEP_FINISHED + 2
    assert running.recently_finished(20) == _newest_finished(cli, 20)

    cli.reopen(total)  # the newest finished task, and an old one
    cli.reopen(2)
    assert [t.id for t in running.unfinished()] == [2, total, waiting.id]
    assert running.recently_finished(20) == _newest_finished(cli, 20)  # the next newest
    assert running.recently_finished(total) == _newest_finished(cli, total)  # from disk
    running.claim(2, "alice")
    running.complete(2, "alice")
    assert running.recently_finished(1) == [cli.get(2)]

    monkeypatch.setattr(view, "RESCAN_S", 0.0)  # a hand edit, seen at the next rescan
    _reopen_by_hand(tmp_path / "tasks" / "7.json")
    assert 7 in [t.id for t in running.unclaimed()]
    assert running._view.held() <= view.KEEP_FINISHED + 4


def test_a_running_board_keeps_nothing_per_old_finished_file(tmp_path: Path, monkeypatch) -> None:
    """Rescanning the folder does not mean remembering every finished file: once a file
    is older than the previous scan, the view drops what it kept of it and skips it by
    its ctime. Hand edits and removals of old files are still seen."""
    monkeypatch.setattr(view, "RESCAN_S", 0.0)  # every read lists the folder
    monkeypatch.setattr(view, "SETTLED_NS", 0)  # no slack: the filesystem's clock is read
    running = TaskBoard(tmp_path / "tasks")
    cli = TaskBoard(tmp_path / "tasks")
    total = view.KEEP_FINISHED * 3
    for i in range(total):
        _finish(cli, f"task {i}")
    waiting = cli.create("waits on the oldest", blocked_by=[1])
    assert running.unclaimed() == [waiting]  # the first scan reads every file
    assert running.unclaimed() == [waiting]  # a scan that began after every file changed
    assert len(running._view._versions) <= view.KEEP_FINISHED + 2

    _reopen_by_hand(tmp_path / "tasks" / "7.json")  # neither held nor remembered
    (tmp_path / "tasks" / "1.json").unlink()  # the blocker, held
    assert [t.id for t in running.unclaimed()] == [7]  # a missing blocker blocks
    assert running.create("new").id == total + 2  # the highest id, without the versions


def test_a_blocker_reopened_by_hand_is_an_open_task_after_the_new_one_goes(
    tmp_path: Path, monkeypatch
) -> None:
    """A finished task the view no longer holds, reopened by hand (no journal line), then
    named as a blocker by a new task: once that task is cancelled, the reopened one is
    still open work, not forgotten as a finished file the view saw already."""
    monkeypatch.setattr(view, "KEEP_FINISHED", 1)
    monkeypatch.setattr(view, "SETTLED_NS", 0)
    monkeypatch.setattr(view, "RESCAN_S", 1e9)  # the journal first
    running = TaskBoard(tmp_path / "tasks")
    cli = TaskBoard(tmp_path / "tasks")
    for subject in ("first", "second"):
        _finish(cli, subject)
    assert running.unclaimed() == []  # holds #2 only of the finished
    _reopen_by_hand(tmp_path / "tasks" / "1.json")
    waiting = cli.create("after the first", blocked_by=[1])
    assert [t.id for t in running.unclaimed()] == [1]  # #1 read as #3's blocker
    cli.cancel(waiting.id)
    monkeypatch.setattr(view, "RESCAN_S", 0.0)
    for _ in range(3):  # rescans, each one after the last
        assert [t.id for t in running.unclaimed()] == [1]


def test_finished_tasks_blocking_open_ones_still_count(board: TaskBoard) -> None:
    first = board.create("first")
    second = board.create("second", blocked_by=[first.id])
    assert board.unclaimed() == [first]
    board.claim(first.id, "alice")
    board.complete(first.id, "alice")
    assert [t.id for t in board.unclaimed()] == [second.id]  # its blocker is finished
    board.claim(second.id, "bob")
    board.fail(second.id, "bob", "no")
    third = board.create("third", blocked_by=[second.id])
    assert board.get(third.id).status == "blocked"
    assert board.all_done() is True  # stuck behind a failed task: nothing can run it


def test_create_never_overwrites_a_task_file_made_by_hand(board: TaskBoard, monkeypatch) -> None:
    """Writers decide on the files: a task file the journal never heard of keeps its id."""
    monkeypatch.setattr(view, "RESCAN_S", 1e9)
    t = board.create("a")
    made = {**t.model_dump(), "id": t.id + 1, "subject": "made by hand"}
    (board.root / f"{t.id + 1}.json").write_text(json.dumps(made))
    assert board.create("b").id == t.id + 2
    assert board.get(t.id + 1).subject == "made by hand"
