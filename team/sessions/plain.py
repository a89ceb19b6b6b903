"""A plain Messages-API request: `{"system": ..., "tools": [...], "messages": [...]}`.

The shape most tools can export, and the one to write by hand. `system` may be a string
or a list of text blocks; each message's `content` a string or a list of blocks. A
message may carry its call's `usage` (as the API returned it) and a `timestamp`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from team.llm.base import Usage
from team.sessions.blocks import anthropic_blocks, name_results
from team.sessions.model import AgentLog, ImportReport, LogError, Session, Turn
from team.sessions.source import as_int, epoch

FORMAT = "messages-api"


def looks_like(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("messages"), list)
        and all(isinstance(m, dict) and "role" in m for m in doc["messages"][:20])
    )


def read(path: Path, doc: dict[str, Any], report: ImportReport) -> Session:
    agent = AgentLog("main", model=str(doc.get("model") or ""))
    system = doc.get("system")
    if isinstance(system, list):
        system = "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    agent.system = system if isinstance(system, str) else ""
    tools = doc.get("tools")
    agent.tools_chars = len(json.dumps(tools)) if isinstance(tools, list) else 0
    for i, m in enumerate(doc["messages"]):
        role = m.get("role")
        if role not in ("user", "assistant"):
            raise LogError(path, None, f"messages[{i}]: unknown role {role!r}")
        try:
            blocks = anthropic_blocks(m.get("content"), report.kept, report.renamed)
        except ValueError as e:
            raise LogError(path, None, f"messages[{i}]: {e}") from None
        u = m.get("usage")
        usage = None
        if isinstance(u, dict):
            usage = Usage(
                input_tokens=as_int(u.get("input_tokens")),
                cache_read_tokens=as_int(u.get("cache_read_input_tokens")),
                cache_write_tokens=as_int(u.get("cache_creation_input_tokens")),
                output_tokens=as_int(u.get("output_tokens")),
            )
        agent.turns.append(Turn(role, blocks, i + 1, epoch(m.get("timestamp")), usage))
    name_results(agent.turns)
    report.kept["replies"] += len(agent.replies())
    report.kept["agents"] = 1
    return Session(str(path), FORMAT, [agent], report)
