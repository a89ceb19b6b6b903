"""Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-*.json`).

One JSON object: `{"sessionId", "projectHash", "startTime", "messages": [...]}`. A
message of type `user` is the person; type `gemini` is a reply, with its `thoughts`, its
`toolCalls` (each carrying its own `result`, as `functionResponse` parts) and its
`tokens` (`input` counts the `cached` tokens too; `thoughts` are output). `info`, `error`
and `warning` messages are the CLI talking to the person, not the model.
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


def read(path: Path, doc: dict[str, Any], report: ImportReport) -> Session:
    agent = AgentLog("main")
    for i, m in enumerate(doc["messages"], 1):
        if not isinstance(m, dict):
            raise LogError(path, None, f"messages[{i - 1}] is not an object")
        when = epoch(m.get("timestamp"))
        kind = m.get("type")
        if kind == "user":
            _append(agent, Turn("user", _text(m.get("content")), i, when))
        elif kind == "gemini":
            blocks: list[Block] = []
            thoughts = [
                f"{t.get('subject', '')}: {t.get('description', '')}"
                for t in m.get("thoughts") or []
                if isinstance(t, dict)
            ]
            if thoughts and (text := thinking_text("\n".join(thoughts), report.kept)):
                blocks.append(TextBlock(text))
            blocks += _text(m.get("content"))
            results: list[Block] = []
            for c in m.get("toolCalls") or []:
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
            _append(agent, Turn("assistant", blocks, i, when, _usage(m.get("tokens"))))
            if results:
                _append(agent, Turn("user", results, i, when))
        else:
            report.dropped[f"{kind} messages"] += 1
    name_results(agent.turns)
    report.kept["replies"] += len(agent.replies())
    report.kept["agents"] = 1
    return Session(str(path), FORMAT, [agent], report)


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
    for r in call.get("result") or []:
        resp = (r.get("functionResponse") or {}).get("response") if isinstance(r, dict) else None
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
