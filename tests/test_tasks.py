"""The file backend of the task board: records on disk. The contract is in test_board_contract."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from team.tasks import TaskBoard, TaskError


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
