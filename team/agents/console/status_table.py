"""The agents' table: `team status` and the live table of `team up` (columns.py fits it).

Apart from `team.agents.console.printer` (the event lines of a run), so that `team
status` loads neither the event types nor SQLite to draw it (issue 27).
"""

from __future__ import annotations

import time

from team.agents.console.columns import REQUIRED, Column, cut, fit, one_line, wrap


def ago(ts: float | None, now: float | None = None) -> str:
    """`12s ago`, `5m ago`, `3h ago`."""
    if ts is None:
        return ""
    s = max(0.0, (now or time.time()) - ts)
    if s < 90:
        return f"{s:.0f}s ago"
    if s < 5400:
        return f"{s / 60:.0f}m ago"
    return f"{s / 3600:.0f}h ago"


def _doing(st: dict, now: float) -> str:
    """The tool running now, else the last thing the agent did and when."""
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
