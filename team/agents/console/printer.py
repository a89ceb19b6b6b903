"""What `team up` prints: plain event lines (no TTY), a live table (TTY), and the run summary."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import TextIO

from team.agents.console.columns import REQUIRED, Column, cut, fit, one_line, wrap
from team.core.events import AgentEvent, CompactionEvent, DeliveryEvent, Event, ModelCallEvent


class RunCounter:
    """An `EventSink` that tallies one run for the closing summary."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.tokens: Counter[str] = Counter()
        self.compactions: Counter[str] = Counter()
        self.failed_compactions = 0
        self.messages = 0
        self.call_errors = 0
        self.crashes = 0

    def emit(self, event: Event) -> None:
        with self._lock:
            if isinstance(event, ModelCallEvent):
                if event.error:
                    self.call_errors += 1
                    return
                self.calls[event.purpose] += 1
                self.tokens["input"] += event.input_tokens
                self.tokens["output"] += event.output_tokens
                self.tokens["cache read"] += event.cache_read_tokens
                self.tokens["cache write"] += event.cache_write_tokens
            elif isinstance(event, CompactionEvent):
                if event.success:
                    self.compactions[event.layer] += 1
                else:
                    self.failed_compactions += 1
            elif isinstance(event, DeliveryEvent):
                if event.kind == "received" and event.msg_type != "shutdown_request":
                    self.messages += 1
            elif isinstance(event, AgentEvent) and event.kind == "crashed":
                self.crashes += 1

    def summary(self, tasks_done: int, tasks_total: int, elapsed: float) -> str:
        t = self.tokens
        layers = ", ".join(f"{k} {self.compactions[k]}" for k in ("micro", "auto", "manual"))
        lines = [
            f"run finished in {elapsed:.1f}s",
            f"  tasks:       {tasks_done} of {tasks_total} completed",
            f"  messages:    {self.messages} delivered",
            f"  model calls: {self.calls['agent']} agent, {self.calls['summary']} summary"
            + (f", {self.call_errors} failed" if self.call_errors else ""),
            f"  compactions: {layers}"
            + (f" ({self.failed_compactions} failed)" if self.failed_compactions else ""),
            f"  tokens:      {t['input']:,} input, {t['output']:,} output, "
            f"{t['cache read']:,} cache read, {t['cache write']:,} cache write",
        ]
        if self.crashes:
            lines.append(f"  agent crashes (restarted): {self.crashes}")
        return "\n".join(lines)


class EventPrinter:
    """An `EventSink` that prints one plain line per notable event (for logs and pipes)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        line = self.format(event)
        if line:
            stamp = time.strftime("%H:%M:%S", time.localtime(event.ts))
            with self._lock:
                print(f"{stamp} {event.agent:<12} {line}", file=self.out, flush=True)

    @staticmethod
    def format(event: Event) -> str | None:
        if isinstance(event, CompactionEvent):
            if not event.success:
                return f"compaction {event.layer} FAILED: {event.error}"
            if event.layer == "micro":
                n = event.results_cleared
                return (
                    f"micro: {n} old tool result{'s' if n != 1 else ''} cleared "
                    f"({event.tokens_before:,} -> {event.tokens_after:,} tokens)"
                )
            return (
                f"compaction {event.layer}: {event.tokens_before:,} -> "
                f"{event.tokens_after:,} tokens, transcript {event.transcript}"
            )
        if isinstance(event, DeliveryEvent) and event.kind == "received":
            return f"<- {event.msg_type} from {event.sender}"
        # a failed model call is shown by the loop's warning (with its retry), not twice
        if isinstance(event, AgentEvent):
            return f"{event.kind}{': ' + event.detail if event.detail else ''}"
        return None


def events_line(health: dict) -> str:
    """`team status`'s line on an events.db outage (`SqliteEventLog.health`)."""
    dropped = health.get("dropped", 0)
    lost = f", {dropped:,} dropped" if dropped else ""
    if health.get("failing_since"):
        since = time.strftime("%H:%M:%S", time.localtime(health["failing_since"]))
        return (
            f"events: NOT recorded since {since} ({health.get('error')}): "
            f"{health.get('held', 0):,} held in memory{lost}"
        )
    n = health.get("outages", 1)
    return f"events: recorded again after {n} outage{'s' if n != 1 else ''}{lost}"


def _doing(st: dict, now: float) -> str:
    """The tool running now, else the last thing the agent did and when."""
    from team.agents.console.activity import ago

    if st.get("current"):
        return st["current"]
    if st.get("last_action"):
        return f"{st['last_action']} ({ago(st.get('last_action_ts'), now)})"
    return "-"


def _compactions(st: dict) -> str:
    by = st.get("compactions_by_layer")
    if not by:  # a status from before the activity fold: auto and manual only
        return str(st.get("compactions", 0))
    return f"{by.get('auto', 0)}/{by.get('manual', 0)}/{by.get('micro', 0)}"


def _spend(st: dict) -> str:
    spent = st.get("spent_usd")
    if spent is None:
        return "-"
    from team.llm.prices import usd

    budget = st.get("budget_usd")
    return usd(spent) + (f"/{usd(budget)}" if budget else "")


STATUS_COLUMNS = (
    Column("agent", keep=REQUIRED),
    Column("state", keep=900, flex=True, least=16),
    Column("doing", keep=500, flex=True, least=10),
    Column("task", keep=400, right=True),
    Column("context", keep=300, right=True),
    Column("compactions", keep=200, right=True),
    Column("calls", keep=100, right=True),
    Column("inbox", keep=350, right=True),
    Column("spent", keep=250, right=True),
)
WORKTREE_COLUMNS = (Column("branch", keep=150), Column("uncommitted", keep=120, right=True))


def status_lines(status: dict, width: int | None, title: str = "") -> list[str]:
    """The agents' table (for the live display and `team status`), fitted to `width`
    (None: every column, nothing cut), then the notes and each agent's last error.

    The table says what an agent is doing, the lines under it what last went wrong.
    """
    from team.agents.console.activity import ago

    now = time.time()
    agents = status.get("agents", {})
    worktree = any("branch" in st for st in agents.values())  # isolation = "worktree"
    columns = STATUS_COLUMNS + (WORKTREE_COLUMNS if worktree else ())
    rows = []
    errors = []
    paused = []
    for name, st in agents.items():
        extra = [st.get("branch") or "-", str(st.get("changes", 0))] if worktree else []
        rows.append(
            [
                name,
                str(st.get("state", "?")),
                _doing(st, now),
                f"#{st['task']}" if st.get("task") else "-",
                f"{st.get('context_tokens', 0):,}",
                _compactions(st),
                str(st.get("calls", 0)),
                str(st.get("pending", 0)),
                _spend(st),
                *extra,
            ]
        )
        error = st.get("error") or st.get("last_error")
        if error:
            when = ago(st.get("last_error_ts"), now) if st.get("last_error_ts") else ""
            errors.append(f"{name}: {cut(one_line(error), 300)}" + (f" ({when})" if when else ""))
        if st.get("crashes"):
            errors.append(f"{name}: crashed {st['crashes']} time(s), restarted")
        if st.get("auto_paused"):
            paused.append(
                f"{name}: auto-compaction paused: {cut(one_line(st['auto_paused']), 200)}"
            )
    table = fit(columns, rows, width)
    notes = []
    if table.dropped:
        notes.append(f"not shown: {', '.join(table.dropped)} (team status --wide shows them)")
    if any(st.get("compactions_by_layer") for st in agents.values()) and (
        "compactions" not in table.dropped
    ):
        notes.append("compactions: auto/manual/micro")
    team = status.get("team_spend")
    if team:
        notes.append(f"team spent {_spend(team)}")
    lines = [title] if title else []
    lines += table.lines
    for note in notes:
        lines += wrap(note, width)
    lines += [ln for note in paused for ln in wrap(note, width)]
    if errors:
        lines.append("last errors:")
        for e in errors:
            lines += wrap(e, width, indent="  ")
    return lines
