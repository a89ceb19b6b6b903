"""`team assign` and `team tasks`, driven as a user drives them: in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def team(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "team", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    r = team("init", "--agents", "alice:coder,bob:tester", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return tmp_path


def inbox(ws: Path, agent: str) -> list[dict]:
    new = ws / ".team" / "inbox" / agent / "new"
    return [json.loads(p.read_text()) for p in sorted(new.glob("*"))] if new.exists() else []


def test_assign_to_an_agent_creates_a_task_and_delivers_it(ws: Path) -> None:
    r = team("assign", "alice", "write the parser", cwd=ws)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "task #1 -> alice"
    task = json.loads((ws / ".team" / "tasks" / "1.json").read_text())
    assert (task["subject"], task["owner"], task["status"]) == (
        "write the parser",
        "alice",
        "pending",
    )
    [msg] = inbox(ws, "alice")
    assert (msg["type"], msg["task_id"], msg["from"], msg["content"]) == (
        "task",
        1,
        "user",
        "write the parser",
    )
    assert inbox(ws, "bob") == []


def test_assign_any_leaves_an_open_task_and_sends_nothing(ws: Path) -> None:
    r = team("assign", "--any", "review the docs", cwd=ws)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "task #1 (open)"
    task = json.loads((ws / ".team" / "tasks" / "1.json").read_text())
    assert (task["owner"], task["status"]) == (None, "pending")
    assert not (ws / ".team" / "inbox").exists() or all(
        inbox(ws, a) == [] for a in ("alice", "bob")
    )


def test_assign_unknown_agent_is_one_line_and_creates_nothing(ws: Path) -> None:
    r = team("assign", "dave", "anything", cwd=ws)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "dave" in lines[0] and "alice" in lines[0]
    assert "Traceback" not in r.stderr
    tasks_dir = ws / ".team" / "tasks"
    assert not tasks_dir.exists() or not list(tasks_dir.glob("*.json"))
    assert not (ws / ".team" / "inbox" / "dave").exists()


def test_assign_to_user_is_refused(ws: Path) -> None:
    r = team("assign", "user", "do it yourself", cwd=ws)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert not list((ws / ".team" / "tasks").glob("*.json"))


def test_assign_without_a_team_toml_is_a_clear_error(tmp_path: Path) -> None:
    r = team("assign", "--any", "x", cwd=tmp_path)
    assert r.returncode == 1
    assert "team.toml" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".team").exists()


def test_assign_usage_errors_exit_2(ws: Path) -> None:
    assert team("assign", "alice", cwd=ws).returncode == 2  # no TEXT
    assert team("assign", "--any", "alice", "text", cwd=ws).returncode == 2


def test_tasks_json_lists_the_board_in_numeric_order(ws: Path) -> None:
    for i in range(11):
        target = ["alice"] if i % 2 else ["--any"]
        assert team("assign", *target, f"job {i + 1}", cwd=ws).returncode == 0
    r = team("tasks", "--json", cwd=ws)
    assert r.returncode == 0, r.stderr
    records = json.loads(r.stdout)
    assert [t["id"] for t in records] == list(range(1, 12))
    assert records[9]["subject"] == "job 10"
    assert {"id", "subject", "status", "owner", "created_at", "result"} <= set(records[0])
    assert records[0]["owner"] is None and records[1]["owner"] == "alice"


def test_tasks_table_and_dir_option(ws: Path, tmp_path: Path) -> None:
    team("assign", "bob", "run the tests", cwd=ws)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = team("tasks", "--dir", str(ws), cwd=elsewhere)
    assert r.returncode == 0, r.stderr
    header, row = r.stdout.strip().splitlines()
    assert header.split() == ["ID", "STATUS", "OWNER", "SUBJECT"]
    assert row.split()[:3] == ["#1", "pending", "bob"]
    assert row.endswith("run the tests")
    # a folder without team.toml is a mistake, not an empty board
    nowhere = team("tasks", cwd=elsewhere)
    assert nowhere.returncode == 1 and "team.toml: no such file" in nowhere.stderr
    (elsewhere / "team.toml").write_text((ws / "team.toml").read_text())
    empty = team("tasks", cwd=elsewhere)
    assert empty.returncode == 0 and empty.stdout.strip() == "no tasks"
