"""The activity fold behind `team status`: last action, last error, compactions by layer
(micro included) and spend, from real events; and the table that shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from team.agents.console.activity import Activity, spent_so_far
from team.agents.console.status_table import status_lines
from team.core.events import (
    AgentEvent,
    CompactionEvent,
    DeliveryEvent,
    ModelCallEvent,
    SqliteEventLog,
)
from team.llm.prices import dollars

MODEL = "claude-sonnet-4-5"


def _call(agent: str, **tokens) -> ModelCallEvent:
    return ModelCallEvent(agent, "agent", **tokens)


def test_activity_folds_what_status_shows() -> None:
    a = Activity(MODEL, spent={"alice": 1.5})
    calls = [_call("alice", input_tokens=1000, output_tokens=500, cache_read_tokens=20_000)] * 3
    for ev in calls:
        a.emit(ev)
    a.emit(CompactionEvent("alice", "micro", "view", 10, 5, 3, 3, results_cleared=2))
    a.emit(CompactionEvent("alice", "micro", "view", 10, 5, 3, 3, results_cleared=1))
    a.emit(CompactionEvent("alice", "auto", "threshold", 52_000, 1_900, 40, 2))
    a.emit(DeliveryEvent("alice", "bob", "m1", "received", "message"))
    a.emit(ModelCallEvent("alice", "agent", error="overloaded (529)"))
    a.emit(AgentEvent("alice", "claimed", "#3 Fix the parser"))
    snap = a.snapshot("alice")
    assert snap["compactions_by_layer"] == {"micro": 2, "auto": 1, "manual": 0}
    assert snap["last_action"] == "claimed: #3 Fix the parser"
    assert snap["last_error"] == "model call failed: overloaded (529)"
    assert snap["spent_usd"] == pytest.approx(1.5 + sum(dollars(c, MODEL) for c in calls))
    assert a.snapshot("bob")["spent_usd"] == 0


def test_spend_so_far_reads_the_event_log(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    log = SqliteEventLog(db)
    calls = [
        _call("alice", input_tokens=10_000, output_tokens=2_000),
        _call("bob", output_tokens=7),
    ]
    for ev in calls:
        log.emit(ev)
    log.emit(ModelCallEvent("alice", "agent", error="401"))  # no usage, no cost
    log.close()
    spent = spent_so_far(db, MODEL)
    assert spent["alice"] == pytest.approx(dollars(calls[0], MODEL))
    assert spent["bob"] == pytest.approx(dollars(calls[1], MODEL))
    assert spent_so_far(tmp_path / "missing.db", MODEL) == {}


def test_status_table_shows_doing_compactions_spend_and_errors() -> None:
    status = {
        "agents": {
            "alice": {
                "state": "working",
                "current": "bash: make test",
                "task": 3,
                "context_tokens": 12_345,
                "compactions_by_layer": {"auto": 1, "manual": 0, "micro": 7},
                "calls": 40,
                "pending": 2,
                "spent_usd": 1.25,
                "budget_usd": 5.0,
                "error": "model call failed: overloaded (529)",
            },
            "bob": {"state": "idle", "last_action": "completed: #2", "last_action_ts": 0.0},
        },
        "team_spend": {"spent_usd": 1.25, "budget_usd": 20.0},
    }
    out = "\n".join(status_lines(status, 120))
    assert "bash: make test" in out and "completed: #2" in out
    assert "1/0/7" in out and "$1.25/$5.00" in out
    assert "team spent $1.25/$20.00" in out
    assert "alice: model call failed: overloaded (529)" in out
