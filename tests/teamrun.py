"""Run a real team (`team up` in a subprocess) and check what it left on disk."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from conftest import add_task

from team.cli.demo import AGENTS, seed_project
from team.core.conversation import Message
from team.mailbox.maildir import MaildirMailbox
from team.tasks import TaskBoard
from team.workspace.config import render_config
from team.workspace.places import Workspace


def make_workspace(
    root: Path, model: str, threshold: int = 3000, micro_policy: str = "eager"
) -> Workspace:
    """A demo project; micro clears eagerly so that short runs exercise every layer."""
    root.mkdir(parents=True, exist_ok=True)
    text = render_config("e2e", model, AGENTS, threshold=threshold)
    text = text.replace("[compaction]\n", f'[compaction]\nmicro_policy = "{micro_policy}"\n')
    (root / "team.toml").write_text(text)
    seed_project(root)
    return Workspace.at(root)


IDLE_GRACE = "0.3"
"""How long a test team stays idle before `--until-idle` stops it. A team is idle only
with no pending mail, no agent at work and no task left for a running agent, so work put
in before the start needs no longer. Work sent during the run must land while the team is
held busy (tests/test_e2e_anthropic.py::HeldResponder); a test that cannot hold it gives
a longer `grace`."""


def start_up(ws: Workspace, env: dict, *args: str, grace: str = IDLE_GRACE) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "team",
            "up",
            "--until-idle",
            "--idle-grace",
            grace,
            *args,
            "--dir",
            str(ws.root),
        ],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def assign(ws: Workspace, owner: str, text: str) -> None:
    """`team assign OWNER TEXT` (`--any` for an open task), in process: the runs here are
    about the team; test_tasks_cli.py and test_up_cli.py run the command itself."""
    add_task(ws.root, text, owner=None if owner == "--any" else owner)


def session_records(ws: Workspace, agent: str) -> list[dict]:
    path = ws.session_log(agent)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_every_task_completed(ws: Workspace) -> None:
    tasks = TaskBoard(ws.tasks_dir).list()
    assert tasks and all(t.status == "completed" for t in tasks), [
        (t.id, t.status, t.owner) for t in tasks
    ]


def check_messages_exactly_once(ws: Workspace, names: list[str]) -> int:
    """Every message that reached an inbox was taken in exactly once, and none is pending."""
    total = 0
    for name in names:
        box = MaildirMailbox(ws.inbox_dir(name))
        assert box.pending() == [], f"{name} has unprocessed mail"
        taken = [i for rec in session_records(ws, name) for i in rec.get("inbox", [])]
        assert len(taken) == len(set(taken)), f"{name} took a message in twice"
        delivered = {m.id for m in box.processed() if not m.type.startswith("shutdown")}
        assert delivered <= set(taken), f"{name} lost {delivered - set(taken)}"
        total += len(delivered)
    return total


def check_identity_after_every_compaction(ws: Workspace, names: list[str]) -> int:
    n = 0
    for name in names:
        role = dict(AGENTS)[name]
        for rec in session_records(ws, name):
            if rec["t"] == "compaction":
                n += 1
                first = Message.from_dict(rec["first"]).text()
                assert first.startswith(f"<identity>You are '{name}', role: {role}"), first[:200]
    return n


def check_transcripts_hold_full_text(ws: Workspace, names: list[str]) -> int:
    files = 0
    for name in names:
        for path in sorted(ws.transcripts_dir(name).glob("*.jsonl")):
            files += 1
            for line in path.read_text().splitlines():
                for block in json.loads(line)["content"]:
                    if block["type"] == "tool_result":
                        assert not block["content"].startswith("[Previous: used"), path
    return files


def events(ws: Workspace, sql: str) -> list[tuple]:
    conn = sqlite3.connect(ws.events_db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()
