"""The audit trail: every command and file write the agents made, read from the events.

The rows are `AuditEvent`s (team.core.events) in `.team/events.db`; `team audit` prints them.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from team.core.errors import UserError
from team.core.events import AuditEvent


def read_audit(db: Path, agent: str | None = None) -> list[dict[str, Any]]:
    """The audit rows, oldest first (only `agent`'s when given), without writing the db.

    Raises:
        UserError: no events database there, or one that cannot be read.
    """
    if not db.is_file():
        raise UserError(f"no events recorded yet: {db} does not exist (run `team up` first)")
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as e:
        raise UserError(f"cannot open {db}: {e}") from e
    conn.row_factory = sqlite3.Row
    table = AuditEvent.table
    try:
        present = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)
        ).fetchone()
        if not present:  # a database from before the audit trail: nothing recorded
            return []
        where, args = ("WHERE agent = ?", (agent,)) if agent else ("", ())
        rows = conn.execute(f"SELECT * FROM {table} {where} ORDER BY ts, id", args).fetchall()
        out = [dict(r) for r in rows]
        for row in out:
            row.pop("id", None)
        return out
    except sqlite3.Error as e:
        raise UserError(f"cannot read {db}: {e}") from e
    finally:
        conn.close()


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
