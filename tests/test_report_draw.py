"""The report's drawing, on a real events database: restarts break the line, markers
take their agent's colour, and the cost bar is priced from the one price table."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest

from team.core.events import AgentEvent, CompactionEvent, ModelCallEvent, SqliteEventLog
from team.llm.prices import dollars
from team.study.report import AGENT_COLORS, _draw_context, cost_parts
from team.study.stats import load

matplotlib.use("Agg")


def _call(agent: str, ts: float, context: int) -> ModelCallEvent:
    return ModelCallEvent(
        agent, "agent", input_tokens=context, output_tokens=100, cache_read_tokens=50, ts=ts
    )


@pytest.fixture
def rows(tmp_path: Path):
    log = SqliteEventLog(tmp_path / "events.db")
    t = 1_700_000_000.0
    for agent in ("alice", "bob"):
        log.emit(AgentEvent(agent, "started", ts=t))
    for i in range(5):
        log.emit(_call("alice", t + 1 + i, 1000 + 500 * i))
        log.emit(_call("bob", t + 1.5 + i, 800 + 100 * i))
    log.emit(CompactionEvent("alice", "auto", "threshold", 3000, 900, 9, 2, ts=t + 4.2))
    log.emit(CompactionEvent("bob", "micro", "view", 1200, 1000, 9, 9, ts=t + 4.7))
    # the team is stopped and started again an hour later: alice starts afresh
    log.emit(AgentEvent("alice", "stopped", ts=t + 6))
    log.emit(AgentEvent("alice", "started", ts=t + 3600))
    for i in range(3):
        log.emit(_call("alice", t + 3601 + i, 700 + 200 * i))
    log.close()
    return load(tmp_path / "events.db")


def test_no_line_across_a_restart_and_markers_in_their_agents_colour(rows):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        _draw_context(ax, rows, ["alice", "bob"], rows.start())
        lines = {}
        for line in ax.get_lines():
            lines.setdefault(line.get_color(), []).append(len(line.get_xdata()))
        alice, bob = AGENT_COLORS[0], AGENT_COLORS[1]
        assert sorted(lines[alice]) == [3, 5]  # two runs, two lines, nothing joins them
        assert lines[bob] == [5]
        faces = {}
        for coll in ax.collections:
            rgba = coll.get_facecolors()
            faces[coll.get_label()] = [matplotlib.colors.to_hex(c) for c in rgba]
        assert faces["auto compaction"] == [alice]
        assert faces["micro compaction"] == [bob]
    finally:
        plt.close(fig)


def test_cost_bar_prices_output_at_the_output_price(rows):
    model = "claude-sonnet-4-5"
    parts = cost_parts(rows, model)
    assert sum(parts.values()) == pytest.approx(sum(dollars(r, model) for r in rows.model_calls))
    out_tokens = sum(r["output_tokens"] for r in rows.model_calls)
    in_tokens = sum(r["input_tokens"] for r in rows.model_calls)
    # Sonnet output costs 5x its input: the bar must say so (it used to count them 1:1)
    assert parts["output"] / out_tokens == pytest.approx(5 * parts["input"] / in_tokens)
