"""`team assign` and `team tasks`, driven as a user drives them: in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_team

from team.tasks import TaskBoard


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
    return write_team(tmp_path)


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
    tb = TaskBoard(ws / ".team" / "tasks")
    for i in range(11):  # #10 and #11 sort before #2 as text
        tb.create(f"job {i + 1}", owner="alice" if i % 2 else None)
    r = team("tasks", "--json", cwd=ws)
    assert r.returncode == 0, r.stderr
    records = json.loads(r.stdout)
    assert [t["id"] for t in records] == list(range(1, 12))
    assert records[9]["subject"] == "job 10"
    wanted = "id subject description status owner blocked_by result created_at completed_at"
    assert set(wanted.split()) <= set(records[0])
    assert records[0]["owner"] is None and records[1]["owner"] == "alice"


def test_tasks_table_and_dir_option(ws: Path, tmp_path: Path) -> None:
    team("assign", "bob", "run the tests", cwd=ws)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = team("tasks", "--dir", str(ws), cwd=elsewhere)
    assert r.returncode == 0, r.stderr
    header, rule, row = r.stdout.strip().splitlines()
    assert header.split() == ["id", "status", "owner", "blocked_by", "subject", "result"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert row.split()[:4] == ["#1", "pending", "bob", "-"]
    assert "run the tests" in row
    # a folder without team.toml is a mistake, not an empty board
    nowhere = team("tasks", cwd=elsewhere)
    assert nowhere.returncode == 1 and "team.toml: no such file" in nowhere.stderr
    (elsewhere / "team.toml").write_text((ws / "team.toml").read_text())
    empty = team("tasks", cwd=elsewhere)
    assert empty.returncode == 0 and empty.stdout.strip() == "no tasks"


# -- dependencies, descriptions, and managing tasks -----------------------------------------


def board(ws: Path) -> list[dict]:
    """The board as `team tasks --json` prints it (that command has its own test)."""
    return [t.model_dump() for t in TaskBoard(ws / ".team" / "tasks").list()]


def one_line_error(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_blocked_task_is_delivered_only_once_it_unblocks(ws: Path) -> None:
    assert team("assign", "alice", "design the schema", cwd=ws).returncode == 0
    r = team("assign", "bob", "write the api", "--blocked-by", "1", cwd=ws)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "task #2 -> bob (blocked by #1); bob is told when it unblocks"
    assert inbox(ws, "bob") == []
    records = board(ws)
    assert (records[1]["status"], records[1]["blocked_by"]) == ("blocked", [1])
    tb = TaskBoard(ws / ".team" / "tasks")
    tb.claim(1, "alice")
    tb.complete(1, "alice", "schema.sql written")
    # the agent side tells owners when it completes a task; here only the board changed
    assert board(ws)[1]["status"] == "pending"
    rows = team("tasks", cwd=ws).stdout.splitlines()
    assert rows[2].split()[:4] == ["#1", "completed", "alice", "-"]
    assert rows[2].endswith("schema.sql written")
    assert rows[3].split()[:4] == ["#2", "pending", "bob", "#1"]


def test_description_from_an_option_or_stdin(ws: Path) -> None:
    r = team("assign", "--any", "fix it", "--description", "in parse.py, line 3", cwd=ws)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "team", "assign", "alice", "long one", "--description", "-"],
        cwd=ws,
        input="line one\nline two\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    records = board(ws)
    assert [t["description"] for t in records] == ["in parse.py, line 3", "line one\nline two\n"]
    [msg] = inbox(ws, "alice")
    assert msg["content"].startswith("long one") and "line two" in msg["content"]
    show = team("task", "show", "2", cwd=ws)
    assert show.returncode == 0 and "line one" in show.stdout and "alice" in show.stdout


def test_times_are_unix_seconds(ws: Path) -> None:
    import time

    before = time.time()
    team("assign", "--any", "x", cwd=ws)
    [t] = board(ws)
    assert before - 5 <= t["created_at"] <= time.time() + 5
    assert t["completed_at"] is None


def test_cancel_reassign_reopen_tell_the_owners(ws: Path) -> None:
    team("assign", "alice", "refactor", cwd=ws)
    r = team("task", "reassign", "1", "bob", cwd=ws)
    assert (r.returncode, r.stdout.strip()) == (0, "task #1 -> bob (was alice)"), r.stderr
    assert board(ws)[0]["owner"] == "bob"
    [_, note] = inbox(ws, "alice")
    assert note["type"] == "revoked" and "reassigned to bob" in note["content"]
    [task_msg] = inbox(ws, "bob")
    assert (task_msg["type"], task_msg["task_id"]) == ("task", 1)
    r = team("task", "cancel", "1", cwd=ws)
    assert (r.returncode, r.stdout.strip()) == (0, "task #1 cancelled"), r.stderr
    assert "cancelled" in inbox(ws, "bob")[-1]["content"]
    assert board(ws)[0]["status"] == "cancelled"
    r = team("task", "reopen", "1", cwd=ws)
    assert r.returncode == 0 and board(ws)[0]["status"] == "pending"
    assert inbox(ws, "bob")[-1]["type"] == "task"


def test_block_reassign_cancel_say_what_they_did_and_tell_only_who_must_act(ws: Path) -> None:
    team("assign", "alice", "design the schema", cwd=ws)
    team("assign", "bob", "write the api", "--blocked-by", "1", cwd=ws)
    assert inbox(ws, "bob") == []
    r = team("task", "block", "2", "--by", "", cwd=ws)
    assert (r.returncode, r.stdout.strip()) == (0, "task #2 is pending, blocked by nothing")
    [told] = inbox(ws, "bob")  # it no longer waits: its owner hears of it now
    assert (told["type"], told["task_id"]) == ("task", 2)
    r = team("task", "block", "2", "--by", "1", cwd=ws)
    assert r.stdout.strip() == "task #2 is blocked, blocked by #1" and len(inbox(ws, "bob")) == 1
    r = team("task", "reassign", "2", "bob", cwd=ws)
    assert (r.returncode, r.stdout.strip()) == (0, "task #2 is already bob's")
    assert len(inbox(ws, "bob")) == 1
    r = team("task", "cancel", "1", cwd=ws)
    assert r.stdout.strip() == "task #1 cancelled; #2 wait on it and stay blocked"
    assert board(ws)[1]["status"] == "blocked"


def test_bad_input_is_one_line_and_changes_nothing(ws: Path) -> None:
    tb = TaskBoard(ws / ".team" / "tasks")
    tb.create("a", owner="alice")
    tb.create("b", owner="bob", blocked_by=[1])
    before = board(ws)
    mail = (inbox(ws, "alice"), inbox(ws, "bob"))
    one_line_error(team("assign", "alice", "c", "--blocked-by", "1,7", cwd=ws), "#7")
    one_line_error(team("assign", "alice", "c", "--blocked-by", "1,x", cwd=ws), "'x'")
    one_line_error(team("task", "block", "1", "--by", "2", cwd=ws), "cycle", "#1 -> #2 -> #1")
    one_line_error(team("task", "reassign", "1", "dave", cwd=ws), "dave")
    one_line_error(team("task", "reassign", "1", "user", cwd=ws), "user")
    for cmd in ("show", "cancel", "reopen"):
        one_line_error(team("task", cmd, "9", cwd=ws), "no task #9")
    one_line_error(team("task", "reassign", "9", "bob", cwd=ws), "no task #9")
    one_line_error(team("task", "reopen", "1", cwd=ws), "not finished")
    assert board(ws) == before
    assert (inbox(ws, "alice"), inbox(ws, "bob")) == mail
