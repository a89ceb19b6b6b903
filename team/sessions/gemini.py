"""Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-*.json`).

One JSON object: `{"sessionId", "projectHash", "startTime", "messages": [...]}`. A
message of type `user` is the person; type `gemini` is a reply, with its `thoughts`, its
`toolCalls` (each carrying its own `result`, as `functionResponse` parts) and its
`tokens` (`input` counts the `cached` tokens too; `thoughts` are output). `info`, `error`
and `warning` messages are the CLI talking to the person, not the model.

Newer versions (0.40) write JSON Lines instead: the session's fields on the first line,
then one message a line as above, and `{"$set": {...}}` lines updating the session's
fields (`lastUpdated`). A message written again under the same `id` (its tool calls
finished) replaces the first copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from team.core.conversation import Block, TextBlock, ToolResultBlock, ToolUseBlock
from team.llm.base import Usage
from team.sessions.blocks import name_results, thinking_text, tool_name
from team.sessions.model import AgentLog, ImportReport, LogError, Session, Turn
from team.sessions.source import as_int, epoch

FORMAT = "gemini-cli"


def looks_like(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("messages"), list)
        and ("projectHash" in doc or "sessionId" in doc)
        and any(isinstance(m, dict) and m.get("type") == "gemini" for m in doc["messages"])
    )


def is_lines(lines: list[tuple[int, dict[str, Any]]]) -> bool:
    """The JSON Lines form: a `gemini` reply among the first lines, and none of Claude
    Code's links (whose lines carry a `sessionId` too)."""
    head = [o for _, o in lines[:50]]
    return any(o.get("type") == "gemini" for o in head) and not any("parentUuid" in o for o in head)


def read_lines(
    path: Path, lines: list[tuple[int, dict[str, Any]]], report: ImportReport
) -> Session:
    messages: dict[str, tuple[int, dict[str, Any]]] = {}  # by id, in first-written order
    for n, o in lines:
        if "$set" in o:
            report.dropped["session field updates ($set lines)"] += 1
        elif "type" in o:
            key = str(o.get("id") or f"line-{n}")
            if key in messages:
                report.normalised["messages written again (the last copy kept)"] += 1
            messages[key] = (n, o)
        elif "sessionId" in o or "projectHash" in o:
            continue  # the session's own fields
        else:
            report.dropped["lines of no known kind"] += 1
    return _read(path, list(messages.values()), report)


def read(path: Path, doc: dict[str, Any], report: ImportReport) -> Session:
    for i, m in enumerate(doc["messages"]):
        if not isinstance(m, dict):
            raise LogError(path, None, f"messages[{i}] is not an object")
    return _read(path, list(enumerate(doc["messages"], 1)), report)


def _read(path: Path, messages: list[tuple[int, dict[str, Any]]], report: ImportReport) -> Session:
    """`messages`: each with its line (JSON Lines) or its 1-based index (the document)."""
    agent = AgentLog("main")
    recorded = 0
    for i, m in messages:
        when = epoch(m.get("timestamp"))
        kind = m.get("type")
        if kind == "user":
            _append(agent, Turn("user", _text(m.get("content")), i, when))
        elif kind == "gemini":
            blocks: list[Block] = []
            thoughts = [
                f"{t.get('subject', '')}: {t.get('description', '')}"
                for t in _list(m.get("thoughts"))
                if isinstance(t, dict)
            ]
            if thoughts and (text := thinking_text("\n".join(thoughts), report.kept)):
                blocks.append(TextBlock(text))
            blocks += _text(m.get("content"))
            results: list[Block] = []
            for c in _list(m.get("toolCalls")):
                if not isinstance(c, dict):
                    continue
                call_id = str(c.get("id", ""))
                args = c.get("args")
                blocks.append(
                    ToolUseBlock(
                        call_id,
                        tool_name(str(c.get("name", "")), report.renamed),
                        args if isinstance(args, dict) else {},
                    )
                )
                results.append(
                    ToolResultBlock(
                        call_id, _result(c), "", str(c.get("status", "")).lower() == "error"
                    )
                )
            model = str(m.get("model") or "")
            agent.model = agent.model or model
            recorded += isinstance(m.get("tokens"), dict)
            _append(agent, Turn("assistant", blocks, i, when, _usage(m.get("tokens"))))
            if results:
                _append(agent, Turn("user", results, i, when))
        else:
            report.dropped[f"{kind} messages"] += 1
    name_results(agent.turns)
    report.kept["replies"] += len(agent.replies())
    report.kept["agents"] = 1
    report.requests_recorded = recorded
    return Session(str(path), FORMAT, [agent], report)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _append(agent: AgentLog, turn: Turn) -> None:
    turn.blocks = [b for b in turn.blocks if not (isinstance(b, TextBlock) and not b.text)]
    if turn.blocks or turn.usage:
        agent.turns.append(turn)


def _text(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [TextBlock(content)] if content else []
    if isinstance(content, list):  # parts: [{"text": ...}, ...]
        texts = [str(p.get("text", "")) for p in content if isinstance(p, dict)]
        return [TextBlock(t) for t in texts if t]
    return []


def _result(call: dict[str, Any]) -> str:
    out = []
    for r in _list(call.get("result")):
        fr = r.get("functionResponse") if isinstance(r, dict) else None
        resp = fr.get("response") if isinstance(fr, dict) else None
        if isinstance(resp, dict):
            value = resp.get("output", resp.get("error", resp))
            out.append(value if isinstance(value, str) else json.dumps(value))
    if out:
        return "\n".join(out)
    display = call.get("resultDisplay")
    return display if isinstance(display, str) else ""


def _usage(tokens: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None
    cached = as_int(tokens.get("cached"))
    return Usage(
        input_tokens=max(0, as_int(tokens.get("input")) - cached),
        cache_read_tokens=cached,
        output_tokens=as_int(tokens.get("output")) + as_int(tokens.get("thoughts")),
    )
