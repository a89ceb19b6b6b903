"""`team import`: a `Session` written as one of our workspaces, for the study commands.

The workspace holds a team.toml (one agent per recorded agent), each agent's session log
written through `SessionLog` (so it is exactly what a live run would have written), and
`.team/import.json`: what the log recorded that our session records do not hold, for the
calibration (`team.sessions.calibration`): the format and source, each turn's time, the
recorded fixed prefix, the recorded compactions, the run's usage totals, and the report.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from team.agents.session.log import SessionLog
from team.compaction.records import AssistantTurn, UserTurn
from team.core.errors import UserError
from team.llm.base import Usage
from team.sessions.model import (
    AgentLog,
    CompactionMark,
    ImportReport,
    MicroClear,
    Session,
    Turn,
)
from team.workspace.config import render_config
from team.workspace.places import Workspace


def write_workspace(session: Session, root: Path, *, fsync: bool = True) -> Workspace:
    """Write `session` as a workspace at `root` (which must not hold a team already).

    Raises:
        UserError: `root` already has a team.toml or session logs.
    """
    ws = Workspace.at(root)
    if ws.config_path.exists() or ws.agents_root.exists():
        raise UserError(f"{ws.root}: already holds a team (import into an empty folder)")
    ws.root.mkdir(parents=True, exist_ok=True)
    agents = [(a.name, f"imported from {session.format}") for a in session.agents]
    model = next((a.model for a in session.agents if a.model.startswith("claude")), "sim")
    ws.config_path.write_text(render_config("imported", model, agents))
    for a in session.agents:
        log = SessionLog(ws.session_log(a.name), fsync=fsync)
        try:
            for t in a.turns:
                if t.role == "user":
                    log.append(UserTurn(tuple(t.blocks)))
                else:
                    log.append(AssistantTurn(t.message(), t.usage or Usage()))
        finally:
            log.close()
    meta = {
        "format": session.format,
        "source": session.source,
        "report": session.report.to_dict(),
        "totals": asdict(session.totals) if session.totals else None,
        "agents": {a.name: _agent_meta(a) for a in session.agents},
    }
    _events(session, ws)
    tmp = ws.import_record.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta, indent=1))
    os.replace(tmp, ws.import_record)
    return ws


def _events(session: Session, ws: Workspace) -> None:
    """The recorded calls and compactions as events, so `team stats` and `team report`
    show the recorded session itself (at the recorded times)."""
    from team.core.events import CompactionEvent, ModelCallEvent, SqliteEventLog

    events = SqliteEventLog(ws.events_db)
    try:
        for a in session.agents:
            for t in a.replies():
                u = t.usage or Usage()
                events.emit(
                    ModelCallEvent(
                        a.name,
                        "agent",
                        u.input_tokens,
                        u.output_tokens,
                        u.cache_read_tokens,
                        u.cache_write_tokens,
                        cache_ttl=a.cache_ttl,
                        ts=t.time or 0.0,
                    )
                )
            for c in a.compactions:
                when = a.turns[c.before].time if c.before < len(a.turns) else None
                layer = "manual" if c.trigger == "manual" else "auto"
                events.emit(
                    CompactionEvent(
                        a.name,
                        layer,
                        f"recorded ({c.trigger})",
                        c.pre_tokens or 0,
                        c.summary_chars // 4,
                        0,
                        0,
                        summary_chars=c.summary_chars,
                        ts=when or 0.0,
                    )
                )
    finally:
        events.close()


def _agent_meta(a: AgentLog) -> dict[str, Any]:
    return {
        "model": a.model,
        "cache_ttl": a.cache_ttl,
        "system_chars": len(a.system),
        "tools_chars": a.tools_chars,
        "times": [t.time for t in a.turns],
        "recorded_usage": [asdict(t.usage) if t.usage else None for t in a.turns],
        "compactions": [asdict(c) for c in a.compactions],
        "micro_clears": [asdict(c) for c in a.micro_clears],
    }


def read_import(ws: Workspace, session: Session) -> None:
    """Put back on `session` (read from an imported workspace's logs) what only
    import.json holds: times, the recorded usage of every call, compactions, totals."""
    path = ws.import_record
    if not path.is_file():
        return
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # a workspace is still replayable without its import record
    session.format = str(meta.get("format") or session.format)
    session.source = str(meta.get("source") or session.source)
    if meta.get("totals"):
        session.totals = Usage(**meta["totals"])
    report = meta.get("report") or {}
    session.report = ImportReport()
    for key in ("kept", "dropped", "renamed"):
        getattr(session.report, key).update(report.get(key) or {})
    session.report.repaired = list(report.get("repaired") or [])
    for a in session.agents:
        m = (meta.get("agents") or {}).get(a.name)
        if not m:
            continue
        a.model = m.get("model") or a.model
        a.cache_ttl = m.get("cache_ttl") or a.cache_ttl
        a.system = " " * int(m.get("system_chars") or 0)
        a.tools_chars = int(m.get("tools_chars") or 0)
        _put_back(a.turns, m.get("times") or [], m.get("recorded_usage") or [])
        a.compactions = [CompactionMark(**c) for c in m.get("compactions") or []]
        a.micro_clears = [
            MicroClear(c["before"], tuple(c["tool_ids"]), c.get("tokens_saved"), c.get("line", 0))
            for c in m.get("micro_clears") or []
        ]


def _put_back(turns: list[Turn], times: list[Any], usage: list[Any]) -> None:
    if len(times) != len(turns):
        return  # the logs changed since the import: keep what they say
    for t, when, u in zip(turns, times, usage, strict=True):
        t.time = when
        t.usage = Usage(**u) if u else None
