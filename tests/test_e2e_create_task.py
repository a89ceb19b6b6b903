"""An agent puts work on the board (`create_task`) and teammates do it: `team up` in a
subprocess, the real `anthropic` SDK, the local Messages API in `tests/fakeapi.py`.

The model here is a small scripted one, one tool call per reply as real models mostly
make them; it decides from the request alone (who it is, its mail, its earlier calls).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import run_team
from fakeapi import FakeMessagesAPI
from teamrun import session_records, start_up

from team.mailbox.maildir import MaildirMailbox
from team.tasks import TaskBoard
from team.workspace.places import Workspace

pytestmark = pytest.mark.slow

TOML = """\
[team]
name = "crew"
model = "claude-sonnet-4-5"
lead = "alice"

[[agents]]
name = "alice"
role = "lead"

[[agents]]
name = "bob"
role = "coder"

[[agents]]
name = "carol"
role = "reviewer"
"""
MAIL = re.compile(r'<message from="([^"]*)" type="([^"]*)" id="[^"]*"(?: task="(\d+)")?>')
CREATED = re.compile(r"created task #(\d+)")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        b.get("text", "") if b.get("type") == "text" else _text(b.get("content", ""))
        for b in content
    )


class Crew:
    """The three agents' model: alice splits the goal, bob writes, carol reviews."""

    def __init__(self) -> None:
        self.created: list[int] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        system = _text(body.get("system") or "")
        me = re.search(r"You are '([a-z]+)'", system)[1]
        if not body.get("tools") or body.get("tool_choice", {}).get("type") == "none":
            return say(f"Summary: {me} has been working.")  # a compaction's summary
        calls = [
            b
            for m in body["messages"]
            if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        ]
        results = {
            b["tool_use_id"]: _text(b.get("content", ""))
            for m in body["messages"]
            if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        }
        mail = [
            (sender, kind, int(task) if task else None)
            for m in body["messages"]
            if m["role"] == "user"
            for sender, kind, task in MAIL.findall(_text(m["content"]))
        ]
        return getattr(self, me)(calls, results, mail)

    def alice(self, calls, results, mail) -> dict[str, Any]:
        made = [
            int(m[1])
            for c in calls
            if c["name"] == "create_task" and (m := CREATED.search(results.get(c["id"], "")))
        ]
        if not any(kind == "goal" for _, kind, _ in mail):
            return say("Waiting for a goal.")
        if not made:
            return use(
                "create_task",
                subject="Write CHANGES.md listing what changed",
                description="One line per module.",
                owner="bob",
            )
        if len(made) == 1:
            return use(
                "create_task",
                subject="Review CHANGES.md",
                owner="carol",
                blocked_by=[made[0]],
            )
        self.created = made
        return say(f"Tasks #{made[0]} and #{made[1]} are on the board.")

    def bob(self, calls, results, mail) -> dict[str, Any]:
        return self.worker(calls, mail, "write_file", {"path": "CHANGES.md", "content": "- x\n"})

    def carol(self, calls, results, mail) -> dict[str, Any]:
        return self.worker(calls, mail, "read_file", {"path": "CHANGES.md"})

    def worker(self, calls, mail, tool: str, args: dict) -> dict[str, Any]:
        tasks = [task for _, kind, task in mail if kind == "task" and task is not None]
        done = {c["input"].get("task_id") for c in calls if c["name"] == "complete_task"}
        todo = [t for t in tasks if t not in done]
        if not todo:
            return say("Nothing for me to do.")
        task = todo[0]
        claimed = any(c["name"] == "claim_task" and c["input"]["task_id"] == task for c in calls)
        if not claimed:
            return use("claim_task", task_id=task)
        if not any(c["name"] == tool for c in calls):
            return use(tool, **args)
        return use("complete_task", task_id=task, result=f"{tool} done")


def say(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}


def use(name: str, **input: Any) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "name": name, "input": input}]}


def test_an_agent_creates_tasks_and_its_teammates_do_them(tmp_path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "team.toml").write_text(TOML)
    ws = Workspace.at(root)
    r = run_team("goal", "Document the release", "--dir", str(root))
    assert r.returncode == 0, r.stderr
    crew = Crew()
    with FakeMessagesAPI(crew) as api:
        env = {"ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": api.url}
        proc = start_up(ws, env, "--timeout", "120")
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert api.rejections == [], [c.error for c in api.rejections]
    assert "Traceback" not in err

    # the board: alice's two tasks, done by their owners, #2 after #1
    tasks = {t.id: t for t in TaskBoard(ws.tasks_dir).list()}
    assert sorted(tasks) == [1, 2] == crew.created
    write, review = tasks[1], tasks[2]
    assert (write.created_by, write.owner, write.status) == ("alice", "bob", "completed")
    assert (review.created_by, review.owner, review.status) == ("alice", "carol", "completed")
    assert review.blocked_by == [1]
    assert write.result == "write_file done" and review.result == "read_file done"
    assert write.completed_at <= review.completed_at
    assert (root / "CHANGES.md").read_text() == "- x\n"

    # the inboxes: each owner heard of its task once, from alice; carol only on unblocking
    def processed(agent: str):
        box = MaildirMailbox(ws.inbox_dir(agent))
        assert box.pending() == [], f"{agent} left mail unread"
        return [m for m in box.processed() if not m.type.startswith("shutdown")]

    bob_mail = processed("bob")
    assert [(m.type, m.sender, m.task_id) for m in bob_mail] == [("task", "alice", 1)]
    assert bob_mail[0].content.startswith("Write CHANGES.md listing what changed")
    carol_mail = processed("carol")
    assert [(m.type, m.sender, m.task_id) for m in carol_mail] == [("task", "bob", 2)]
    assert carol_mail[0].content.startswith("Task #2 is unblocked (#1 is completed)")
    assert carol_mail[0].timestamp >= write.completed_at
    # the lead hears of both completions (and the goal it was given)
    lead = processed("alice")
    assert lead[0].type == "goal"
    notices = [m.content for m in lead if m.type == "notice"]
    assert any(n.startswith("bob completed task #1 (Write CHANGES.md") for n in notices), notices
    assert any("Unblocked: #2" in n for n in notices), notices
    assert any(n.startswith("carol completed task #2 (Review CHANGES.md)") for n in notices)

    # what create_task told the model, as alice's log recorded it
    said = json.dumps(session_records(ws, "alice"))
    assert "created task #1 (for bob)" in said
    assert "created task #2 (for carol, blocked by #1)" in said
