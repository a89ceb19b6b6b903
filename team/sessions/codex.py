"""OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Each line is `{"timestamp", "type", "payload"}`. `response_item` lines are what the model
saw and said: messages, reasoning, function calls and their outputs; a reply spans
several of them. `event_msg` lines of type `token_count` follow each model call with its
usage (`last_token_usage`; OpenAI counts cached tokens inside `input_tokens`). Other
`event_msg` lines repeat the conversation for the UI and are skipped. A `compacted` line
is Codex's own compaction.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from team.core.conversation import Block, TextBlock, ToolResultBlock, ToolUseBlock
from team.llm.base import Usage
from team.sessions.blocks import image_text, name_results, thinking_text, tool_arguments, tool_name
from team.sessions.model import AgentLog, CompactionMark, ImportReport, Session, Turn
from team.sessions.source import as_int, epoch

FORMAT = "codex"
KINDS = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")


def looks_like(lines: list[tuple[int, dict[str, Any]]]) -> bool:
    return any(o.get("type") in KINDS and "payload" in o for _, o in lines[:20])


def read(path: Path, lines: list[tuple[int, dict[str, Any]]], report: ImportReport) -> Session:
    agent = AgentLog("main")
    requests: set[str] = set()  # one per call: Codex writes its token_count twice
    open_reply = False  # the last turn is a reply whose usage has not arrived yet
    for n, o in lines:
        kind, p = o.get("type"), o.get("payload")
        if not isinstance(p, dict):
            continue
        when = epoch(o.get("timestamp"))
        if kind == "session_meta":
            base = p.get("base_instructions")
            text = base.get("text") if isinstance(base, dict) else p.get("instructions")
            if isinstance(text, str):
                agent.system += text
        elif kind == "turn_context":
            agent.model = str(p.get("model") or agent.model)
        elif kind == "compacted":
            summary = str(p.get("message") or "")
            agent.compactions.append(
                CompactionMark(len(agent.turns), "auto", None, len(summary), n, summary)
            )
            report.kept["compactions"] += 1
        elif kind == "event_msg":
            info = p.get("info") if p.get("type") == "token_count" else None
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            if not isinstance(last, dict) or not _usage(last).input_total:
                continue  # no count, or a zero one (a rate-limit notice): no request
            # the running total names the call (Codex writes each count twice); without
            # one, the count and the reply it follows do
            reply = _last_reply(agent.turns)
            total = info.get("total_token_usage")
            key = total if isinstance(total, dict) else [reply, last]
            requests.add(json.dumps(key, sort_keys=True))
            if open_reply and reply >= 0:  # the reply's, even when its output came first
                agent.turns[reply].usage = _usage(last)
                open_reply = False
        elif kind == "response_item":
            role, blocks = _item(p, report)
            if role == "system":
                agent.system += "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
                continue
            if not blocks:
                continue
            last = agent.turns[-1] if agent.turns else None
            if last is not None and last.role == role and (role == "user" or open_reply):
                last.blocks.extend(blocks)
            else:
                agent.turns.append(Turn(role, blocks, n, when))
            if role == "assistant":
                open_reply = True
        else:
            report.dropped["unknown lines"] += 1
    for t in agent.turns:  # results before any text in a user turn, as the API wants
        if t.role == "user":
            t.blocks = [b for b in t.blocks if isinstance(b, ToolResultBlock)] + [
                b for b in t.blocks if not isinstance(b, ToolResultBlock)
            ]
    name_results(agent.turns)
    report.kept["replies"] += len(agent.replies())
    report.kept["agents"] = 1
    report.requests_recorded = len(requests)
    return Session(str(path), FORMAT, [agent], report)


def _last_reply(turns: list[Turn]) -> int:
    """The index of the last reply among `turns`, or -1."""
    return next((i for i in range(len(turns) - 1, -1, -1) if turns[i].role == "assistant"), -1)


def _item(p: dict[str, Any], report: ImportReport) -> tuple[str, list[Block]]:
    kind = p.get("type")
    if kind == "message":
        role = p.get("role")
        blocks: list[Block] = []
        for c in p.get("content") or []:
            if not isinstance(c, dict):
                continue
            if c.get("type") in ("input_text", "output_text", "text"):
                blocks.append(TextBlock(str(c.get("text", ""))))
            elif c.get("type") == "input_image":
                blocks.append(TextBlock(image_text({"data": ""}, report.kept)))
        if role in ("developer", "system"):
            return "system", blocks
        return ("assistant" if role == "assistant" else "user"), blocks
    if kind == "reasoning":
        parts = [s.get("text", "") for s in p.get("summary") or [] if isinstance(s, dict)]
        parts += [c.get("text", "") for c in p.get("content") or [] if isinstance(c, dict)]
        text = thinking_text("\n".join(str(x) for x in parts), report.kept)
        return "assistant", [TextBlock(text)] if text else []
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        call_id = str(p.get("call_id") or p.get("id") or "")
        if kind == "local_shell_call":
            command = (p.get("action") or {}).get("command") or []
            name, args = "bash", {"command": " ".join(map(str, command))}
        elif kind == "custom_tool_call":
            name, args = str(p.get("name", "")), {"input": str(p.get("input", ""))}
        else:
            name, args = str(p.get("name", "")), tool_arguments(p.get("arguments"))
        return "assistant", [ToolUseBlock(call_id, tool_name(name, report.renamed), args)]
    if kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        return "user", [ToolResultBlock(str(p.get("call_id", "")), _output(p.get("output")))]
    report.dropped[f"{kind} items"] += 1
    return "user", []


def _output(raw: Any) -> str:
    """A call's output: plain text, or JSON `{"output": ..., "metadata": ...}`."""
    if isinstance(raw, dict):
        return str(raw.get("output", raw.get("content", json.dumps(raw))))
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        if isinstance(value, dict) and "output" in value:
            return str(value["output"])
    return "" if raw is None else str(raw)


def _usage(u: dict[str, Any]) -> Usage:
    cached = as_int(u.get("cached_input_tokens"))
    return Usage(
        input_tokens=max(0, as_int(u.get("input_tokens")) - cached),
        cache_read_tokens=cached,
        output_tokens=as_int(u.get("output_tokens")) + as_int(u.get("reasoning_output_tokens")),
    )
