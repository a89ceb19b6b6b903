"""One run's row of the `team experiment` table, from its events and session logs.

Shared by the live runs (`team.study.experiment`) and the replays (`team.study.replay`),
so both rows mean the same numbers as `team stats`.
"""

from __future__ import annotations

from dataclasses import dataclass

from team.agents.session.log import read_records
from team.compaction.records import UserTurn
from team.core.conversation import ToolResultBlock
from team.study.stats import Rows, compute, context_tokens
from team.workspace.places import Workspace


@dataclass
class Outcome:
    """One strategy's row of the table."""

    strategy: str
    billed_input: float  # base-price input tokens, summaries included
    total_tokens: int  # input + cache read + cache write + output, every call
    cache_write_tokens: int
    peak_context: int  # the largest context one agent call saw and produced
    compactions: dict[str, int]  # successful compactions by layer
    summary_share: float | None  # summary calls' share of (billed input + output)
    retention: float | None  # mean retention over auto and manual compactions
    tasks_completed: int
    tasks_total: int
    agent_calls: int
    tool_output_chars: int = 0  # what the tools returned: equal rows did equal work
    cache_read_tokens: int = 0  # 0 for a recorded row, whose log does not split it
    seconds: float = 0.0
    workspace: str | None = None  # kept run folder, if asked for


def tool_output_chars(ws: Workspace, agents: list[str]) -> int:
    """Characters of every tool result in the agents' session logs (the full stored text).

    The sim decides from what it sees, so a strategy that hides results too early changes
    what the agent does (it reads other files, writes shorter notes): this is the check.
    """
    total = 0
    for agent in agents:
        path = ws.session_log(agent)
        if not path.is_file():
            continue
        for rec in read_records(path):
            if isinstance(rec, UserTurn):
                results = [b for b in rec.blocks if isinstance(b, ToolResultBlock)]
                total += sum(len(b.content) for b in results)
    return total


def outcome(
    name: str, rows: Rows, tasks_completed: int, tasks_total: int, tool_output: int = 0
) -> Outcome:
    """The row for one run, from its event rows (the same numbers as `team stats`)."""
    team = compute(rows).team
    agent_rows = [r for r in rows.model_calls if r.get("purpose") == "agent"]
    return Outcome(
        strategy=name,
        billed_input=team.billed_input,
        total_tokens=team.input_tokens
        + team.cache_read_tokens
        + team.cache_write_tokens
        + team.output_tokens,
        cache_write_tokens=team.cache_write_tokens,
        cache_read_tokens=team.cache_read_tokens,
        peak_context=max((context_tokens(r) for r in agent_rows), default=0),
        compactions={layer: ls.ok for layer, ls in team.compactions.items()},
        summary_share=team.summary_share,
        retention=team.mean_retention,
        tasks_completed=tasks_completed,
        tasks_total=tasks_total,
        agent_calls=team.agent_calls,
        tool_output_chars=tool_output,
    )
