"""The small bundles an `Agent` is made of: who it is, its link to the team, when it stops."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from team.agents.intake import Intake
from team.agents.state import Budget
from team.llm.base import Prefix
from team.mailbox.base import Waker
from team.tasks.model import Board
from team.workspace.config import AgentConfig, TeamConfig


@dataclass(frozen=True)
class Seat:
    """Who the agent is, and the fixed part of every request it sends."""

    config: AgentConfig
    team: TeamConfig
    prefix: Prefix

    @property
    def name(self) -> str:
        return self.config.name


@dataclass
class Link:
    """The agent's side of its team: its mail (intake), the board, how it waits for
    work, and what runs when it is about to go idle (the teammate_idle hook, the lead's
    notice; a reason it returns keeps the agent working)."""

    intake: Intake
    board: Board
    waker: Waker
    on_idle: Callable[[], str | None] | None = None


@dataclass
class Control:
    """When the agent stops: the team's hard stop, its budget, how often it looks when idle."""

    stop: threading.Event
    budget: Budget | None = None
    poll_s: float = 0.5
