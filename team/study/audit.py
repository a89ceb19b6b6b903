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
    return out


def render_row(row: dict[str, Any], width: int = 100) -> str:
    """One line: time, agent, tool, outcome (with the exit code), duration, bytes, target."""
    clock = time.strftime("%H:%M:%S", time.localtime(row["ts"]))
    outcome = row["outcome"]
    if row["tool"] == "bash" and row["exit_code"] is not None:
        outcome = f"{outcome}({row['exit_code']})"
    target = " ".join(str(row["target"]).split())  # one line, whatever the command was
    if len(target) > width:
        target = target[: width - 3] + "..."
    took = f"{row['duration_s']:.2f}s"
    return (
        f"{clock} {row['agent']:<10} {row['tool']:<10} {outcome:<12} {took:>7} "
        f"{row['bytes']:>9}B  {target}"
    )
