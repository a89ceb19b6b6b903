"""`team task reassign` and `team task cancel` while the team runs (`team up --model sim`
in a subprocess, real files): the owner is told, stops working on the task, and the new
owner does it.

The run is held at the right moments by the simulator itself: it runs a command a user
message asks for ("run `...`"), and the commands here wait for a file the test creates.
So alice is reliably in the middle of her task when it is taken from her, however busy
the machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import add_task, run_team
from teamrun import session_records, start_up, wait_for

from team.mailbox.maildir import MaildirMailbox
from team.tasks import TaskBoard
from team.workspace.places import Workspace

pytestmark = pytest.mark.slow

TOML = """\
[team]
name = "t"
model = "sim"

[[agents]]
name = "alice"
role = "coder"
plan_approval = true

[[agents]]
name = "bob"
role = "coder"
"""


def team(ws: Workspace, *args: str) -> str:
    r = run_team(*args, "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    return r.stdout


def hold(ws: Workspace, name: str) -> str:
    """A message that makes the sim run a command that waits for `gate/<name>.go`."""
    gate = f"gate/{name}"
    return f"Please run `touch {gate}.in; until [ -e {gate}.go ]; do sleep 0.05; done`"


def calls_after(records: list[dict], marker: str) -> list[dict]:
    """alice's tool calls recorded after the user record that carried `marker`."""
    at = next(i for i, r in enumerate(records) if r["t"] == "user" and marker in json.dumps(r))
    return [
        b
        for r in records[at + 1 :]
        if r["t"] == "assistant"
        for b in r["message"]["content"]
        if b["type"] == "tool_use"
    ]


def test_reassign_and_cancel_while_the_team_runs(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "gate").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "parse.py").write_text("def parse(text):\n    return text.split()\n")
    (root / "team.toml").write_text(TOML)
    ws = Workspace.at(root)
    board = TaskBoard(ws.tasks_dir)
    add_task(root, "Survey the parser in src/parse.py", owner="alice")
    add_task(root, "Write a changelog entry", owner="alice")
    proc = start_up(ws, {}, "--timeout", "150", grace="1")
    try:
        # alice claims #1 and waits for her plan's review; a first command holds her
        wait_for(lambda: board.get(1).plan_state == "submitted", what="alice's plan for #1")
        team(ws, "send", "alice", hold(ws, "one"))
        wait_for(lambda: (root / "gate/one.in").exists(), what="alice to run the first hold")
        # the approval and a second hold reach her together: she goes to work on #1,
        # the hold first, and is mid-task when #1 is handed to bob
        team(ws, "approve", "1")
        team(ws, "send", "alice", hold(ws, "two"))
        (root / "gate/one.go").touch()
        wait_for(lambda: (root / "gate/two.in").exists(), what="alice to start on #1")
        assert board.get(1).owner == "alice" and board.get(1).status == "in_progress"
        out = team(ws, "task", "reassign", "1", "bob")
        assert out.strip() == "task #1 -> bob (was alice)"
        (root / "gate/two.go").touch()
        # alice drops #1 and turns to #2; cancelled while she waits for that plan's review
        wait_for(lambda: board.get(2).plan_state == "submitted", what="alice's plan for #2")
        assert team(ws, "task", "cancel", "2").strip() == "task #2 cancelled"
        _, err = proc.communicate(timeout=120)  # --until-idle: nothing is left to do
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err

    one, two = board.get(1), board.get(2)
    assert (one.status, one.owner) == ("completed", "bob") and one.result
    assert (two.status, two.owner) == ("cancelled", "alice")

    # the owners heard: alice both times, bob got #1 as a task of his own
    alice_mail = MaildirMailbox(ws.inbox_dir("alice"))
    assert alice_mail.pending() == []
    revoked = [(m.task_id, m.content) for m in alice_mail.processed() if m.type == "revoked"]
    assert [t for t, _ in revoked] == [1, 2]
    assert "reassigned to bob: stop working on it" in revoked[0][1]
    assert "was cancelled by user: stop working on it" in revoked[1][1]
    bob_mail = MaildirMailbox(ws.inbox_dir("bob")).processed()
    assert [(m.type, m.sender, m.task_id) for m in bob_mail if m.type == "task"] == [
        ("task", "user", 1)
    ]

    # alice was working on #1 when it went (she surveyed after the approval) ...
    records = session_records(ws, "alice")
    before = calls_after(records, "is approved: go ahead")
    assert any(c["name"] == "bash" and c["input"]["command"].startswith("ls") for c in before)
    # ... and after each notice she did nothing more for that task
    for task, content in revoked:
        later = calls_after(records, content)
        assert all(c["input"].get("task_id") != task for c in later), later
        assert not any(f"task-{task}" in json.dumps(c["input"]) for c in later), later
    assert not (root / "notes/alice-task-1.md").exists()
    assert (root / "notes/bob-task-1.md").exists()
