"""What an agent thread is doing (for `team status`), and how a step can end early."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass


class Shutdown(Exception):
    """The agent was asked to stop; raised at a step boundary."""


class StepFailed(Exception):
    """The model call failed and was waited out; the history is unchanged and the turn ends."""


class AgentFailed(Exception):
    """Retrying cannot help (a permanent model error): the agent stops, saying why."""


class BudgetReached(Exception):
    """The agent's or the team's budget is spent: it finishes its step and stops."""


Budget = Callable[[str], str | None]
"""Given an agent's name, why it may not spend more (None while it may)."""


@dataclass
class AgentState:
    """What `team status` shows, updated by the agent thread."""

    state: str = "starting"  # starting, idle, working, waiting, failed: <why>, stopped
    context_tokens: int = 0
    compactions: int = 0
    calls: int = 0
    task: int | None = None
    error: str | None = None
    """The last error, one line (kept after the agent recovers)."""
    waiting: str | None = None
    """Why the agent waits before retrying (with `retry_at`), while it does."""
    retry_at: float | None = None
    current: str | None = None
    """The tool running now, with the gist of its input."""
    auto_paused: str | None = None
    """Why auto-compaction is paused for this agent, while it is."""

    def snapshot(self, now: float | None = None) -> dict:
        """The status as `team status` shows it: a wait says its reason and time left."""
        out = asdict(self)
        if self.state == "waiting" and self.retry_at is not None:
            left = max(0, round(self.retry_at - (time.time() if now is None else now)))
            out["state"] = f"waiting: {self.waiting}, retry in {left}s"
        return out
