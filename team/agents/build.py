"""The one place an agent is put together: `team up`, `team experiment` and replay.

Everything an agent needs is decided here, before the agent exists, so nothing is
patched afterwards: the system prompt and tool specs are built first because the
compactor counts them into its estimate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from team.agents.context import Context
from team.agents.intake import Intake
from team.agents.loop import Agent
from team.agents.replies import Tools
from team.agents.seat import Control, Link, Seat
from team.agents.session.log import SessionLog
from team.agents.session.results import Results
from team.agents.state import Budget
from team.agents.tools.mcp_tools import McpTools
from team.agents.tools.toolbox import Toolbox, tool_specs
from team.agents.words.identity import agent_facts, system_prompt
from team.backends.base import FilesBackend
from team.compaction.auto import reach_line, threshold_for
from team.compaction.compactor import AutoGate, Compactor
from team.compaction.transcripts import TranscriptStore
from team.core.events import EventSink
from team.llm.base import Model, Prefix, ToolSpec, chars_to_tokens
from team.mailbox.base import Inboxes, Waker
from team.mcp.pool import McpPool
from team.tasks.model import Board
from team.teamwork import Courier, Crew, Teamwork
from team.workspace import worktrees
from team.workspace.config import CompactionConfig, TeamConfig
from team.workspace.places import Workspace


@dataclass
class Parts:
    """What a team shares between its agents (and across an agent's restarts)."""

    ws: Workspace
    config: TeamConfig
    model: Model
    sink: EventSink
    board: Board
    stop: threading.Event = field(default_factory=threading.Event)
    inboxes: Inboxes | None = None  # default: the Maildir inboxes under .team/inbox/
    """The team's inboxes: a `team.backends.base` backend."""
    fsync: bool = True
    poll_s: float = 0.5
    started_at: float = field(default_factory=time.time)
    budget: Budget | None = None
    """Why an agent may spend no more (`console.activity.budget_check`); None: no cap."""
    courier: Courier | None = None
    """How coordination notices go out (a Redis node's outbox); None: delivered at once."""
    mcp: McpPool | None = None
    """The team's MCP servers (one session each, shared by the agents); None: none."""

    def __post_init__(self) -> None:
        if self.inboxes is None:
            self.inboxes = FilesBackend(self.ws)


def build_agent(
    parts: Parts,
    name: str,
    *,
    compaction: CompactionConfig | None = None,
    gate: AutoGate | None = None,
    toolbox: Tools | None = None,
    waker: Waker | None = None,
    clock: Callable[[], float] | None = None,
    prefix_tokens: int | None = None,
) -> Agent:
    """Build agent `name` of `parts.config`, ready to `run()` (it resumes from its log).

    Args:
        compaction: the agent's settings (default: team.toml's for it).
        gate: the auto layer's failure state, to carry over a thread restart.
        toolbox: the tools (default: the real `Toolbox`; replay passes one that runs none).
        waker: how the idle agent waits for mail (default: its inbox's waker).
        clock: when the prompt cache expires (default: monotonic time; a replay passes
            the recorded times, so a pause in the recording finds the cache cold).
        prefix_tokens: what the model bills for the system prompt and tools, when that is
            not what their characters say (a replay billed at the recorded prefix).
    """
    config = parts.config
    cfg = config.agent(name)
    facts = agent_facts(cfg, config)
    # waits for each server's first start: its tools are part of the fixed prefix
    mcp = McpTools(parts.mcp, name, cfg.mcp, parts.sink) if parts.mcp is not None else None
    seat = Seat(cfg, config, agent_prefix(config, name, mcp.specs if mcp is not None else ()))
    root = worktrees.ensure(parts.ws, name) if config.team.isolation == "worktree" else None
    settings = compaction or config.compaction_for(name)
    compactor = Compactor(
        settings,
        parts.model,
        TranscriptStore(parts.ws.transcripts_dir(name), parts.ws.root),
        parts.sink,
        facts=facts,
        prefix=seat.prefix,
        prefix_tokens=prefix_tokens,
        gate=gate,
        clock=clock or time.monotonic,
    )
    assert parts.inboxes is not None
    crew = Crew(parts.ws, config, parts.board, parts.sink, parts.inboxes, parts.courier)
    results = Results(parts.ws.results_dir(name), settings.result_cap, fsync=parts.fsync)
    if toolbox is None:
        toolbox = Toolbox(crew, name, root=root, stop=parts.stop, mcp=mcp, results=results)
    session = SessionLog(parts.ws.session_log(name), fsync=parts.fsync)
    teamwork = Teamwork(crew)
    where = str(root or parts.ws.root)
    link = Link(
        Intake(name, parts.inboxes, session, parts.sink, parts.started_at, results),
        parts.board,
        waker or parts.inboxes.waker(name, parts.stop),
        on_idle=lambda: teamwork.going_idle(name, where),
    )
    return Agent(
        seat,
        parts.model,
        Context(session, compactor, results),
        toolbox,
        link,
        Control(parts.stop, parts.budget, parts.poll_s),
        parts.sink,
    )


def agent_prefix(config: TeamConfig, name: str, mcp_specs: Sequence[ToolSpec] = ()) -> Prefix:
    """What every request of agent `name` carries before its messages: its system prompt
    and its tools, its MCP servers' included (`team check` counts it against the
    threshold before anything runs)."""
    cfg = config.agent(name)
    specs = (*tool_specs(cfg, config), *mcp_specs)
    return Prefix(system_prompt(agent_facts(cfg, config), cfg.prompt), specs)


def reach_lines(config: TeamConfig, model: str | None = None) -> list[str]:
    """One line per agent whose fixed prefix is within reach of its auto threshold, with
    the bar auto-compaction will wait for (team.compaction.auto). `model`: the one the
    team runs on, when not team.toml's (a threshold may be a share of its window)."""
    lines = []
    for a in config.agents:
        threshold = threshold_for(
            config.compaction_for(a.name).threshold, model or config.team.model
        )
        tokens = chars_to_tokens(agent_prefix(config, a.name).chars())
        if (line := reach_line(a.name, tokens, threshold)) is not None:
            lines.append(line)
    return lines
