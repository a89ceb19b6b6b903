"""Our own session logs (`.team/agents/<agent>/session.jsonl`) and workspaces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from team.compaction.records import KINDS, AssistantTurn, Compaction, UserTurn, record_from_dict
from team.sessions.model import (
    AgentLog,
    CompactionMark,
    ImportReport,
    LogError,
    Session,
    Turn,
)
from team.workspace.places import Workspace

FORMAT = "team"


def looks_like(lines: list[tuple[int, dict[str, Any]]]) -> bool:
    return bool(lines) and all(o.get("t") in KINDS for _, o in lines[:20])


def agent_log(
    name: str, path: Path, lines: list[tuple[int, dict[str, Any]]], report: ImportReport
) -> AgentLog:
    agent = AgentLog(name)
    for n, o in lines:
        try:
            rec = record_from_dict(o)
        except (KeyError, TypeError, ValueError) as e:
            raise LogError(path, n, f"not a session record ({e})") from None
        if isinstance(rec, UserTurn):
            last = agent.turns[-1] if agent.turns else None
            if last is not None and last.role == "user":
                last.blocks.extend(rec.blocks)
            else:
                agent.turns.append(Turn("user", list(rec.blocks), n, o.get("at")))
        elif isinstance(rec, AssistantTurn):
            turn = Turn("assistant", list(rec.message.content), n, o.get("at"), rec.usage)
            agent.turns.append(turn)
        elif isinstance(rec, Compaction):
            agent.compactions.append(
                CompactionMark(len(agent.turns), rec.layer, None, rec.first.chars(), n)
            )
            report.kept["compactions"] += 1
    report.kept["replies"] += len(agent.replies())
    return agent


def read(path: Path, lines: list[tuple[int, dict[str, Any]]], report: ImportReport) -> Session:
    place = Workspace.of_agent_file(path)
    name = place[1] if place is not None else "main"
    agent = agent_log(name, path, lines, report)
    report.kept["agents"] = 1
    return Session(str(path), FORMAT, [agent], report)
