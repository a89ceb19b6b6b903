"""The loop behaviours `team status` and budgets rely on, with a scripted model, real
inboxes, a real board and a real session log; and budgets through `team up`."""

from __future__ import annotations

import json
import threading
import time

from conftest import add_task, run_team

from team.agents.console.activity import Activity
from team.agents.runtime.supervisor import Runtime
from team.core.conversation import ToolUseBlock
from team.core.events import FanoutSink, MemorySink
from team.llm.base import Usage
from team.llm.scripted import ScriptedModel, reply
from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage
from team.workspace.config import render_config
from team.workspace.places import Workspace


def workspace(tmp_path, extra: str = "") -> Workspace:
    ws = Workspace.at(tmp_path)
    text = render_config("t", "sim", [("alice", "coder"), ("bob", "tester")])
    ws.config_path.write_text(text + extra)
    return ws


def deliver(ws, to, content, sender="user"):
    MaildirMailbox(ws.inbox_dir(to)).deliver(MailMessage(sender=sender, to=to, content=content))


def test_the_idle_tool_ends_the_turn_without_another_call(tmp_path):
    ws = workspace(tmp_path)
    model = ScriptedModel(
        [reply("nothing to do", ToolUseBlock("toolu_1", "idle", {})), reply("thanks, on it")]
    )
    deliver(ws, "alice", "hello")
    rt = Runtime(ws, ws.load_config(), model, MemorySink(), poll_s=0.05)
    agent = rt.build_agent("alice")
    agent.run(until_idle=True)
    assert len(model.requests) == 1  # no full-context call to answer "Going idle."
    # new input wakes it: the idle result and the new message go in one valid request
    deliver(ws, "alice", "now please review #3", sender="bob")
    agent = rt.build_agent("alice")  # resumed from its session log, as after a restart
    agent.run(until_idle=True)
    last = model.requests[-1].messages[-1]
    assert last.tool_results()[0].content == "Going idle."
    assert "now please review #3" in last.text()


def test_status_shows_the_tool_running_now(tmp_path):
    ws = workspace(tmp_path)
    go = threading.Event()
    slow = "until [ -e gate ]; do sleep 0.02; done; echo done"  # runs until the test lets go
    bash = ToolUseBlock("toolu_1", "bash", {"command": slow})
    model = ScriptedModel([reply(bash), reply("done")])
    deliver(ws, "alice", "run the slow thing")
    rt = Runtime(ws, ws.load_config(), model, MemorySink(), poll_s=0.05)
    agent = rt.build_agent("alice")
    t = threading.Thread(target=lambda: (agent.run(until_idle=True), go.set()))
    t.start()
    seen = set()
    deadline = time.monotonic() + 60
    while not go.is_set() and time.monotonic() < deadline:
        seen.add(agent.status.current)
        if f"bash: {slow}" in seen:
            (ws.root / "gate").touch()
        time.sleep(0.02)
    t.join(timeout=30)
    assert f"bash: {slow}" in seen
    assert agent.status.current is None
    assert "done" in model.requests[-1].messages[-1].tool_results()[0].content  # it ran


def test_an_agent_stops_at_its_budget_after_its_step_and_tells_the_user(tmp_path):
    # alice may spend $0.05; each call costs 10,000 output tokens at $15/M = $0.15
    ws = workspace(tmp_path)
    cfg = ws.config_path.read_text().replace(
        'name = "alice"\nrole = "coder"', 'name = "alice"\nrole = "coder"\nbudget_usd = 0.05'
    )
    ws.config_path.write_text(cfg)
    config = ws.load_config()
    costly = Usage(output_tokens=10_000)
    bash = ToolUseBlock("toolu_1", "bash", {"command": "echo step one"})
    model = ScriptedModel([reply(bash, usage=costly)], default=reply("more", usage=costly))
    activity = Activity("claude-sonnet-4-5")
    sink = FanoutSink(MemorySink(), activity)
    rt = Runtime(ws, config, model, sink, poll_s=0.05, activity=activity)
    deliver(ws, "alice", "start")
    agent = rt.build_agent("alice")
    agent.run()  # returns by itself: the budget ends the thread
    assert len(model.requests) == 1  # the step finished (its tool ran), then no more calls
    assert agent.status.state == "budget reached"
    [note] = MaildirMailbox(ws.inbox_dir("user")).pending()
    assert note.sender == "alice" and "budget of $0.05 is spent" in note.content
    deliver(ws, "alice", "more work")
    rt.build_agent("alice").run()
    assert len(model.requests) == 1  # it takes no more work
    assert rt.status()["agents"]["alice"]["spent_usd"] >= 0.15


def test_team_budget_through_team_up_and_status(tmp_path):
    ws = workspace(tmp_path)
    text = ws.config_path.read_text().replace(
        "max_tokens = 8000", "max_tokens = 8000\nbudget_usd = 0.01"
    )
    ws.config_path.write_text(text)
    (ws.root / "src").mkdir()
    (ws.root / "src" / "a.py").write_text("def f():\n    return 1  # TODO\n")
    for i in range(4):
        add_task(ws.root, f"Find every TODO in the project (round {i})")
    up = run_team("up", "--until-idle", "--idle-grace", "0.5", "--dir", str(ws.root), timeout=120)
    assert up.returncode == 0, up.stderr
    assert "budget: the team's budget of $0.01 is spent" in up.stdout
    status = json.loads(run_team("status", "--json", "--dir", str(ws.root)).stdout)
    assert status["team_spend"]["spent_usd"] >= 0.01
    assert status["team_spend"]["budget_usd"] == 0.01
    assert all(a["state"] == "down (budget)" for a in status["agents"].values())
    notes = json.loads(run_team("inbox", "user", "--json", "--dir", str(ws.root)).stdout)
    assert {n["from"] for n in notes} == {"alice", "bob"}
    tasks = json.loads(run_team("tasks", "--json", "--dir", str(ws.root)).stdout)
    assert any(t["status"] != "completed" for t in tasks)  # work left when the money ran out
    # the next run starts from what was spent: nothing more is called
    again = run_team(
        "up", "--until-idle", "--idle-grace", "0.5", "--dir", str(ws.root), timeout=120
    )
    assert "model calls: 0 agent" in again.stdout


def test_list_tasks_stays_the_same_size_however_many_tasks_are_done(tmp_path):
    from team.agents.tools.toolbox import Toolbox
    from team.tasks import TaskBoard
    from team.teamwork import Crew

    ws = workspace(tmp_path)
    board = TaskBoard(ws.tasks_dir)
    for i in range(60):
        t = board.create(f"old task {i}", owner="alice")
        board.claim(t.id, "alice")
        board.complete(t.id, "alice", "done")
    open_ones = [board.create(f"open task {i}").id for i in range(3)]
    box = Toolbox(Crew(ws, ws.load_config(), board), "alice")
    listed = json.loads(box.run("list_tasks", {}).content)
    ids = [t["id"] for t in listed if "id" in t]
    assert set(open_ones) <= set(ids)
    assert sorted(i for i in ids if i not in open_ones) == list(range(51, 61))  # newest 10
    assert "list_tasks{finished: 50}" in listed[-1]["note"]  # and how to see more
    more = json.loads(box.run("list_tasks", {"finished": 50}).content)
    more_ids = [t["id"] for t in more if "id" in t]
    assert sorted(i for i in more_ids if i not in open_ones) == list(range(11, 61))
    cli = json.loads(run_team("tasks", "--json", "--dir", str(ws.root)).stdout)
    assert len(cli) == 63  # the person still sees the whole board


def test_status_task_follows_claims_and_completions_within_a_turn(tmp_path):
    # one turn, three tasks: the status (and `team status`, the web page) names the one
    # being worked on now, not the one the turn started with
    from team.tasks import TaskBoard

    ws = workspace(tmp_path)
    board = TaskBoard(ws.tasks_dir)
    for subject in ("first", "second"):
        board.create(subject)
    seen: list[int | None] = []
    agent = None

    def step(uses):
        def answer(request):
            seen.append(agent.status.task)
            return reply(*uses)

        return answer

    use = lambda i, name, **kw: ToolUseBlock(f"toolu_{i}", name, kw)  # noqa: E731
    model = ScriptedModel(
        [
            step([use(1, "claim_task", task_id=1)]),
            step([use(2, "complete_task", task_id=1, result="done")]),
            step([use(3, "claim_task", task_id=2)]),
            step(["working on #2"]),
        ]
    )
    deliver(ws, "alice", "please take the tasks")
    rt = Runtime(ws, ws.load_config(), model, MemorySink(), poll_s=0.05)
    agent = rt.build_agent("alice")
    agent.status.task = None
    agent.take_inbox()
    agent.turn()
    assert seen == [None, 1, None, 2]
