"""The audit trail: every command and file write the agents made, read from the events.

The rows are `AuditEvent`s (team.core.events) in `.team/events.db`; `team audit` prints them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from team.core.events import AuditEvent, reading, table_names


def read_audit(db: Path, agent: str | None = None) -> list[dict[str, Any]]:
    """The audit rows, oldest first (only `agent`'s when given), without writing the db.

    Raises:
        UserError: no events database there, or one that cannot be read.
    """
    with reading(db) as conn:
        if AuditEvent.table not in table_names(conn):  # from before the audit trail: none recorded
            return []
        where, args = ("WHERE agent = ?", (agent,)) if agent else ("", ())
        rows = conn.execute(
            f"SELECT * FROM {AuditEvent.table} {where} ORDER BY ts, id", args
        ).fetchall()
    out = [dict(r) for r in rows]
    for row in out:
        row.pop("id", None)
    return settled(out)


def settled(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with each command's "started" row folded into the outcome that follows it.

    An agent runs one tool at a time, so the outcome of a command is the next row of the
    same agent, tool and target. A "started" row with none after it is a command that
    never finished (the process was killed, or is running it now) and stays.
    """
    kept: list[dict[str, Any] | None] = []
    started: dict[str, int] = {}  # agent -> index of its open "started" row in kept
    for row in rows:
        i = started.pop(row["agent"], None)
        opened = kept[i] if i is not None else None
        if (
            opened is not None
            and row["outcome"] != "started"
            and (row["tool"], row["target"]) == (opened["tool"], opened["target"])
        ):
            kept[i] = None
        if row["outcome"] == "started":
            started[row["agent"]] = len(kept)
        kept.append(row)
    return [r for r in kept if r is not None]


def table(rows: list[dict[str, Any]], width: int | None) -> list[str]:
    """The rows as a table in `width` columns: time, agent, tool, outcome (with the exit
    code), duration, bytes, and the target (command or path), cut to fit (`--json` has
    it whole)."""
    from team.agents.console.columns import REQUIRED, Column, fit

    columns = (
        Column("time", keep=REQUIRED),
        Column("agent", keep=800),
        Column("tool", keep=700),
        Column("outcome", keep=REQUIRED),
        Column("took", keep=300, right=True),
        Column("bytes", keep=200, right=True),
        Column("target", keep=900, flex=True, least=24),
    )
    cells = []
    for row in rows:
        outcome = row["outcome"]
        if row["tool"] == "bash" and row["exit_code"] is not None:
            outcome = f"{outcome}({row['exit_code']})"
        cells.append(
            (
                time.strftime("%H:%M:%S", time.localtime(row["ts"])),
                row["agent"],
                row["tool"],
                outcome,
                f"{row['duration_s']:.2f}s",
                f"{row['bytes']:,}",
                row["target"],
            )
        )
    fitted = fit(columns, cells, width)
    if fitted.dropped:
        fitted.lines.append(f"(not shown: {', '.join(fitted.dropped)}; team audit --json has all)")
    return fitted.lines
