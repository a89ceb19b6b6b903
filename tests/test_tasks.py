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
