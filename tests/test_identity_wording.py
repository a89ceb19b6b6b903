"""The identity prose has one writer: reword it there and the simulator, replay and the
experiment still work, because they read the agent's facts, never the words.

`team.agents.words.identity.WORDING` is the one place the words of the system prompt's
identity lines and of the identity block live; every test here swaps it for different
words and drives the real runtime (the demo team, lead and goal included), `team
experiment`'s library function and a replay of the recorded run.
"""

from __future__ import annotations

import json

import pytest

from team.agents.runtime.supervisor import Runtime
from team.agents.words import identity
from team.agents.words.identity import Wording
from team.cli.demo import TASKS, prepare_demo
from team.core.events import SqliteEventLog
from team.llm.sim import SimModel
from team.study.experiment import render, replay_experiment, run_experiment, strategy
from team.study.workload import Workload
from team.tasks import TaskBoard

REWORDED = Wording(
    who="Agent {name} ({role}) of {team}.",
    mate="{name}/{role}",
    teammates="Colleagues: {mates}",
    task="T{id}={subject}",
    block="[[whoami]] {who} | {teammates} | tasks: {tasks} [[/whoami]]",
    none="-",
)


@pytest.fixture(scope="module")
def reworded():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(identity, "WORDING", REWORDED)
        yield


@pytest.fixture(scope="module")
def demo_run(reworded, tmp_path_factory):
    """The demo team (a lead splitting a goal, three agents) run to idle, reworded."""
    ws = prepare_demo(tmp_path_factory.mktemp("reworded") / "demo", threshold=3000)
    events = SqliteEventLog(ws.events_db)
    runtime = Runtime(ws, ws.load_config(), SimModel(seed=1), events, fsync=False)
    try:
        runtime.start()
        assert runtime.wait(until_idle=True, idle_grace=0.5, timeout=120), "never idle"
    finally:
        runtime.close()
        events.close()
    return ws


def records(ws, agent):
    return [json.loads(ln) for ln in ws.session_log(agent).read_text().splitlines() if ln]


def test_the_sim_team_finishes_its_tasks_under_other_words(demo_run):
    ws = demo_run
    tasks = TaskBoard(ws.tasks_dir).list()
    assert len(tasks) > len(TASKS), "the lead split the goal into more tasks"
    assert all(t.status == "completed" for t in tasks), [(t.id, t.status) for t in tasks]
    names = ws.load_config().names()
    firsts, told = [], []
    for name in names:
        log = ws.session_log(name).read_text()
        assert "You are '" not in log, "the old words are gone"
        for rec in records(ws, name):
            if rec["t"] == "compaction":
                firsts.append(rec["first"]["content"][0]["text"])
            if rec["t"] == "assistant":
                told += [
                    b["input"]["to"]
                    for b in rec["message"]["content"]
                    if b["type"] == "tool_use" and b["name"] == "send_message"
                ]
    assert firsts and all(f.startswith("[[whoami]] Agent ") for f in firsts)
    # teammates come from the facts: the sim still tells them what it did, and the lead
    # hands the parts of the goal to them
    assert set(told) & set(names), told
    lead = ws.load_config().team.lead
    made = [t for t in tasks if t.created_by == lead]
    assert made and {t.owner for t in made} - {lead}, [(t.id, t.owner) for t in made]


def test_replay_finds_the_tasks_of_a_run_recorded_under_other_words(demo_run):
    ws = demo_run
    tasks = TaskBoard(ws.tasks_dir).list()
    exp = replay_experiment(ws.root, threshold=3000, strategies=(strategy("reference"),))
    (out,) = exp.outcomes
    assert out.tasks_total >= len(tasks) and out.tasks_completed == out.tasks_total


def test_the_experiment_table_under_other_words(reworded):
    workload = Workload(agents=2, tasks_per_agent=2, seed=3)
    chosen = (strategy("reference"), strategy("default"))
    exp = run_experiment(workload, threshold=6000, strategies=chosen, timeout=120)
    for o in exp.outcomes:
        assert o.tasks_total == 4 and o.tasks_completed == 4, o.strategy
    table = render(exp)
    assert "reference" in table and "default" in table
