"""Our own session logs (`.team/agents/<agent>/session.jsonl`) and workspaces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from team.conversation import Message, block_from_dict
from team.sessions.model import (
    AgentLog,
    CompactionMark,
    ImportReport,
    LogError,
    RecordedUsage,
    Session,
    Turn,
)

FORMAT = "team"
KINDS = ("user", "assistant", "compaction", "note")


def looks_like(lines: list[tuple[int, dict[str, Any]]]) -> bool:
    return bool(lines) and all(o.get("t") in KINDS for _, o in lines[:20])


def agent_log(
    name: str, path: Path, lines: list[tuple[int, dict[str, Any]]], report: ImportReport
) -> AgentLog:
    agent = AgentLog(name)
    for n, o in lines:
        kind = o.get("t")
        try:
            if kind == "user":
                blocks = [block_from_dict(b) for b in o["blocks"]]
                last = agent.turns[-1] if agent.turns else None
                if last is not None and last.role == "user":
                    last.blocks.extend(blocks)
                else:
                    agent.turns.append(Turn("user", blocks, n, o.get("at")))
            elif kind == "assistant":
                msg = Message.from_dict(o["message"])
                u = o.get("usage") or {}
                usage = RecordedUsage(
                    int(u.get("input_tokens", 0)),
                    int(u.get("cache_read_tokens", 0)),
                    int(u.get("cache_write_tokens", 0)),
                    int(u.get("output_tokens", 0)),
                )
                agent.turns.append(Turn("assistant", list(msg.content), n, o.get("at"), usage))
            elif kind == "compaction":
                first = Message.from_dict(o["first"])
                agent.compactions.append(
                    CompactionMark(
                        len(agent.turns), str(o.get("layer", "")), None, first.chars(), n
                    )
                )
                report.kept["compactions"] += 1
            elif kind not in KINDS:
                raise LogError(path, n, "not a session record")
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, LogError):
                raise
            raise LogError(path, n, f"not a session record ({e})") from None
    report.kept["replies"] += len(agent.replies())
    return agent


def read(path: Path, lines: list[tuple[int, dict[str, Any]]], report: ImportReport) -> Session:
    name = path.parent.name if path.parent.parent.name == "agents" else "main"
    agent = agent_log(name, path, lines, report)
    report.kept["agents"] = 1
    return Session(str(path), FORMAT, [agent], report)
