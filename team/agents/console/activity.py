"""What each agent did last, its last error, its compactions and what it has spent.

An `EventSink` that folds the run's events as they happen, so `team status` and the live
table show them at a cost that does not grow with the run (no query over the history).
Spend starts from what the event log already holds for this workspace (one query when
the team starts), so budgets hold across restarts.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from team.core.events import (
    AgentEvent,
    CompactionEvent,
    DeliveryEvent,
    Event,
    ModelCallEvent,
    connect_read_only,
)
from team.llm import prices

QUIET_KINDS = frozenset({"started", "stopped", "restarted", "resumed"})
"""Agent events that are not something the agent did."""
ERROR_KINDS = frozenset({"crashed", "error", "warning", "failed"})


@dataclass
class AgentActivity:
    last_action: str | None = None
    last_action_ts: float | None = None
    last_error: str | None = None
    last_error_ts: float | None = None
    compactions_by_layer: dict[str, int] = field(
        default_factory=lambda: {"micro": 0, "auto": 0, "manual": 0}
    )
    spent_usd: float = 0.0


def _one_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Activity:
    """Folds events per agent; `snapshot(agent)` is what the status shows.

    Args:
        model: the model id calls are priced at (team.llm.prices).
        spent: dollars each agent had spent before this run (see `spent_so_far`).
    """

    def __init__(self, model: str, spent: dict[str, float] | None = None) -> None:
        self.model = model
        self._lock = threading.Lock()
        self._agents: dict[str, AgentActivity] = {}
        for name, usd in (spent or {}).items():
            self._get(name).spent_usd = usd

    def _get(self, agent: str) -> AgentActivity:
        a = self._agents.get(agent)
        if a is None:
            a = self._agents[agent] = AgentActivity()
        return a

    def emit(self, event: Event) -> None:
        with self._lock:
            a = self._get(event.agent)
            if isinstance(event, ModelCallEvent):
                if event.error:
                    self._error(a, f"model call failed: {event.error}", event.ts)
                else:
                    a.spent_usd += prices.dollars(event, self.model)
            elif isinstance(event, CompactionEvent):
                if event.success:
                    a.compactions_by_layer[event.layer] = (
                        a.compactions_by_layer.get(event.layer, 0) + 1
                    )
                    if event.layer != "micro":
                        self._action(a, f"{event.layer} compaction", event.ts)
                else:
                    self._error(a, f"{event.layer} compaction failed: {event.error}", event.ts)
            elif isinstance(event, DeliveryEvent) and event.kind == "received":
                self._action(a, f"took {event.msg_type} from {event.sender}", event.ts)
            elif isinstance(event, AgentEvent):
                text = f"{event.kind}{': ' + event.detail if event.detail else ''}"
                if event.kind in ERROR_KINDS:
                    self._error(a, text, event.ts)
                elif event.kind not in QUIET_KINDS:
                    self._action(a, text, event.ts)

    @staticmethod
    def _action(a: AgentActivity, text: str, ts: float) -> None:
        a.last_action, a.last_action_ts = _one_line(text), ts

    @staticmethod
    def _error(a: AgentActivity, text: str, ts: float) -> None:
        a.last_error, a.last_error_ts = _one_line(text), ts

    def spent(self, agent: str) -> float:
        with self._lock:
            return self._get(agent).spent_usd

    def team_spent(self) -> float:
        with self._lock:
            return sum(a.spent_usd for a in self._agents.values())

    def snapshot(self, agent: str) -> dict:
        """The agent's fields for the status: last action and error, compactions, spend."""
        with self._lock:
            d = asdict(self._get(agent))
        d["compactions_total"] = sum(d["compactions_by_layer"].values())
        return d


def spent_so_far(db: Path, model: str) -> dict[str, float]:
    """Dollars per agent in an events database (one grouped query; {} if there is none)."""
    if not db.is_file():
        return {}
    try:
        conn = connect_read_only(db)
        try:
            columns = {r[1] for r in conn.execute("PRAGMA table_info(model_calls)")}
            ttl = "cache_ttl" if "cache_ttl" in columns else "NULL"  # older databases: 5m
            rows = conn.execute(
                f"SELECT agent, {ttl}, SUM(input_tokens), SUM(output_tokens),"
                " SUM(cache_read_tokens), SUM(cache_write_tokens) FROM model_calls"
                f" WHERE error IS NULL GROUP BY agent, {ttl}"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return {}
    keys = ("cache_ttl", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    spent: dict[str, float] = {}
    for agent, *sums in rows:
        usage = dict(zip(keys, sums, strict=True))
        spent[agent] = spent.get(agent, 0.0) + prices.dollars(usage, model)
    return spent


def budget_check(activity: Activity, config) -> Callable[[str], str | None]:
    """The loop's budget question for a team: why `agent` may spend no more, or None.

    `[team] budget_usd` caps everyone's spend together, an agent's `budget_usd` its own
    (summary calls made for it included). Spend is at list price (team.llm.prices).
    """

    def check(agent: str) -> str | None:
        own = config.agent(agent).budget_usd
        spent = activity.spent(agent)
        if own is not None and spent >= own:
            return f"its budget of ${own:,.2f} is spent (${spent:,.2f})"
        team = config.team.budget_usd
        if team is not None and (total := activity.team_spent()) >= team:
            return f"the team's budget of ${team:,.2f} is spent (${total:,.2f})"
        return None

    return check
