"""The words an agent is told live in one place each, and nothing reads them back.

The inbox envelope (`InboxMail.render`) and the board tools' results
(`team.tasks.wording`) are rewritten here, in that one place each; then a sim team works
its tasks, an agent resumes mail it took in before a crash, and the log is replayed, all
on the blocks' data alone. A module that parsed the old words would lose the mail or
the tasks and fail these checks.
"""

from __future__ import annotations

import pytest

from team.agents.runtime.supervisor import Runtime
from team.compaction.records import AssistantTurn, UserTurn
from team.core.conversation import InboxMail, TextBlock
from team.core.events import MemorySink
from team.llm.sim import SimModel
from team.study.replay import load_recording, replay_strategy
from team.tasks import TaskBoard, wording
from team.teamwork import Crew, Teamwork
from team.workspace.config import render_config
from team.workspace.places import Workspace

SUBJECTS = ["Survey the parser", "Write the lexer notes", "Check the README", "Time the tests"]


@pytest.fixture
def new_words(monkeypatch):
    """Other words for mail and for every board result the sim and replay depend on."""

    def render(self: InboxMail) -> str:
        about = f" about #{self.task}" if self.task is not None else ""
        return f"== MAIL {self.id} ({self.type}{about}) FROM {self.sender} ==\n{self.body}\n=="

    monkeypatch.setattr(InboxMail, "render", render)
    monkeypatch.setattr(wording, "claimed", lambda i, s, plan_note=False: f"Yours now: {s} [{i}]")
    monkeypatch.setattr(wording, "already_claimed", lambda i, s: f"Still yours: {s} [{i}]")
    monkeypatch.setattr(wording, "claimed_open", lambda i, s, d="": f"The board gave you [{i}]")
    monkeypatch.setattr(wording, "completed", lambda i, s, tail="": f"Done and dusted [{i}]{tail}")
    monkeypatch.setattr(wording, "already_completed", lambda i: f"Nothing to do [{i}]")
    monkeypatch.setattr(
        wording, "created", lambda i, s, owner=None, waits_on="": f"On the board [{i}]"
    )


def workspace(tmp_path) -> Workspace:
    ws = Workspace.at(tmp_path / "ws")
    ws.root.mkdir()
    agents = [("alice", "coder"), ("bob", "tester")]
    ws.config_path.write_text(render_config("words", "sim", agents, threshold=6000))
    return ws


def run_until_idle(ws: Workspace) -> None:
    runtime = Runtime(ws, ws.load_config(), SimModel(), MemorySink(), poll_s=0.05)
    runtime.start()
    try:
        assert runtime.wait(until_idle=True, idle_grace=0.5, timeout=120)
    finally:
        runtime.close()


def assign(ws: Workspace, owner: str | None, subject: str) -> int:
    crew = Crew(ws, ws.load_config(), TaskBoard(ws.tasks_dir))
    task, _ = Teamwork(crew).assign(subject, owner)
    return task.id


def test_a_team_finishes_its_tasks_and_replays_with_other_words(tmp_path, new_words):
    ws = workspace(tmp_path)
    for i, subject in enumerate(SUBJECTS):
        assign(ws, ("alice", "bob", None)[i % 3], subject)
    run_until_idle(ws)
    board = TaskBoard(ws.tasks_dir)
    assert [t.status for t in board.list()] == ["completed"] * len(SUBJECTS)
    # the new words are what the agents were told
    told = [
        b.text
        for r in _records(ws, "alice")
        if isinstance(r, UserTurn)
        for b in r.blocks
        if isinstance(b, TextBlock)
    ]
    assert any(t.startswith("== MAIL ") for t in told)
    assert not any('<message from="' in t for t in told)
    # replay folds the same records: the board it rebuilds from their data sees every
    # task an agent was given or claimed, and every completion
    recording = load_recording(ws.root)
    out = replay_strategy(recording, "default", {}, tmp_path / "replay")
    assert out.tasks_total == len(SUBJECTS)
    assert out.tasks_completed == len(SUBJECTS)


def test_mail_taken_in_before_a_crash_is_still_new_after_resume_with_other_words(
    tmp_path, new_words
):
    ws = workspace(tmp_path)
    task = assign(ws, "alice", "Survey the parser")
    runtime = Runtime(ws, ws.load_config(), SimModel(), MemorySink(), poll_s=0.05)
    agent = runtime.build_agent("alice")
    agent.resume()
    assert agent.take_inbox()  # recorded in the log; then the process dies
    agent.close()
    again = Runtime(ws, ws.load_config(), SimModel(), MemorySink(), poll_s=0.05)
    resumed = again.build_agent("alice")
    resumed.resume()
    facts = resumed.facts()
    assert [(m.type, m.task) for m in facts.new_mail] == [("task", task)]
    assert facts.tasks == ((task, "Survey the parser"),)
    # the task was told (the mail names it as data): no "you own these tasks" nudge
    last = resumed.context.messages[-1]
    assert [b.mail is not None for b in last.content if isinstance(b, TextBlock)] == [True]
    resumed.close()


def test_the_untold_task_nudge_still_comes_when_the_log_never_named_the_task(tmp_path, new_words):
    """A claim recorded on the board but not in the log (a crash in between): resume
    tells the agent, whatever the words."""
    ws = workspace(tmp_path)
    task = assign(ws, None, "Check the README")
    TaskBoard(ws.tasks_dir).claim(task, "alice")
    agent = Runtime(ws, ws.load_config(), SimModel(), MemorySink()).build_agent("alice")
    agent.resume()
    notes = [n for b in agent.context.messages[-1].content for n in b.tasks]
    assert [(n.id, n.event) for n in notes] == [(task, "open")]
    agent.run(until_idle=True)
    assert TaskBoard(ws.tasks_dir).get(task).status == "completed"
    replies = [r for r in _records(ws, "alice") if isinstance(r, AssistantTurn)]
    assert replies


def _records(ws: Workspace, agent: str):
    from team.agents.session.log import read_records

    return list(read_records(ws.session_log(agent)))
