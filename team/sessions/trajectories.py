"""SWE-agent (`*.traj`) and mini-swe-agent (`*.traj.json`) trajectories.

Both keep the chat they sent the model, in OpenAI's format: SWE-agent under `history`
(with `trajectory` steps of thought / action / observation as well), mini-swe-agent under
`messages` (or the file is that list alone, as mini-swe-agent's own test data is).
Agents with function calling record `tool_calls` and `tool` messages; the others put one
shell command in each reply (a fenced block: ```bash, or ```mswea_bash_command in newer
mini-swe-agent) and the next user message is its output, so that command becomes a
`bash` call here and the output its result (a micro compaction can then clear it, as it
would for an agent with tools).

Usage: mini-swe-agent keeps each call's `usage` in `extra.response` (an OpenAI-style
message may carry its own `usage`); SWE-agent only the run's `tokens_sent` /
`tokens_received` in `info.model_stats`. Both count the run's model calls there
(`api_calls`): the requests the log records, of which each reply read is one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from team.core.conversation import Block, TextBlock, ToolResultBlock, ToolUseBlock
from team.llm.base import Usage
from team.sessions.blocks import name_results, thinking_text, tool_arguments, tool_name
from team.sessions.model import AgentLog, ImportReport, Session, Turn
from team.sessions.source import as_int, epoch

# mini-swe-agent's contract with its model: exactly one ```bash block per reply.
_BASH_BLOCK = re.compile(r"```(?:bash|sh|mswea_bash_command)?[ \t]*\n(.*?)\n?```", re.S)


def is_swe_agent(doc: Any) -> bool:
    return isinstance(doc, dict) and (
        isinstance(doc.get("history"), list) or isinstance(doc.get("trajectory"), list)
    )


def is_mini(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("messages"), list)
        and ("trajectory_format" in doc or isinstance(doc.get("info"), dict))
    )


def is_chat(doc: Any) -> bool:
    """A bare list of OpenAI-style chat messages: a `system` or `tool` role, or
    `tool_calls`, which the Messages API's own form does not have."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(m, dict) and "role" in m for m in doc)
        and any(m["role"] in ("system", "tool") or "tool_calls" in m for m in doc)
    )


def read_swe_agent(path: Path, doc: dict[str, Any], report: ImportReport) -> Session:
    history = doc.get("history")
    if not isinstance(history, list) or not history:
        history = _steps_as_chat(doc.get("trajectory") or [])
    agent = _chat("main", history, report)
    stats = (doc.get("info") or {}).get("model_stats") or {}
    totals = None
    if as_int(stats.get("tokens_sent")):
        totals = Usage(
            input_tokens=as_int(stats.get("tokens_sent")),
            output_tokens=as_int(stats.get("tokens_received")),
        )
    report.kept["agents"] = 1
    report.requests_recorded = _api_calls(doc, agent)
    return Session(str(path), "swe-agent", [agent], report, totals)


def read_mini(path: Path, doc: dict[str, Any] | list[Any], report: ImportReport) -> Session:
    """`doc`: the trajectory (`{"info", "messages", "trajectory_format"}`) or its
    messages alone."""
    messages = doc if isinstance(doc, list) else doc["messages"]
    agent = _chat("main", messages, report)
    report.kept["agents"] = 1
    report.requests_recorded = _api_calls(doc, agent)
    return Session(str(path), "mini-swe-agent", [agent], report)


def _api_calls(doc: Any, agent: AgentLog) -> int | None:
    """The model calls the log says it made: `info.model_stats.api_calls`, else its
    replies with usage; None when it says neither."""
    info = doc.get("info") if isinstance(doc, dict) else None
    stats = (info.get("model_stats") if isinstance(info, dict) else None) or {}
    calls = as_int(stats.get("api_calls")) if isinstance(stats, dict) else 0
    return calls or sum(1 for t in agent.replies() if t.usage is not None) or None


def _steps_as_chat(steps: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for s in steps:
        if isinstance(s, dict):
            out.append(
                {
                    "role": "assistant",
                    "content": s.get("response") or s.get("thought", ""),
                    "action": s.get("action"),
                }
            )
            out.append({"role": "user", "content": s.get("observation", "")})
    return out


def _chat(name: str, messages: list[Any], report: ImportReport) -> AgentLog:
    agent = AgentLog(name)
    pending: str | None = None  # id of the shell command whose output comes next
    for i, m in enumerate(messages, 1):
        if not isinstance(m, dict):
            report.dropped["entries that are not messages"] += 1
            continue
        role, text = m.get("role"), _content(m.get("content"))
        extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
        response = extra.get("response") if isinstance(extra.get("response"), dict) else {}
        when = epoch(extra.get("timestamp")) or epoch(response.get("created"))
        if role == "system":
            agent.system += text
            continue
        if role == "assistant":
            blocks: list[Block] = []
            reasoning = m.get("reasoning_content")
            if reasoning and (t := thinking_text(str(reasoning), report.kept)):
                blocks.append(TextBlock(t))
            if text:
                blocks.append(TextBlock(text))
            calls = m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else []
            calls = [c for c in calls if isinstance(c, dict)]
            for c in calls:
                fn = c.get("function") if isinstance(c.get("function"), dict) else {}
                blocks.append(
                    ToolUseBlock(
                        str(c.get("id", "")),
                        tool_name(str(fn.get("name", "")), report.renamed),
                        tool_arguments(fn.get("arguments")),
                    )
                )
            pending = None
            if not calls:
                command = m.get("action") if isinstance(m.get("action"), str) else None
                if command is None and len(found := _BASH_BLOCK.findall(text)) == 1:
                    command = found[0]
                if command and command.strip():
                    pending = f"call_{i}"
                    blocks.append(ToolUseBlock(pending, "bash", {"command": command}))
            agent.turns.append(Turn("assistant", blocks, i, when, _usage(m, response)))
            continue
        if role == "tool":
            ids = m.get("tool_call_ids")
            ids = ids if isinstance(ids, list) and ids else [m.get("tool_call_id")]
            blocks = [ToolResultBlock(str(ids[0] or ""), text)]
        elif pending is not None:
            blocks = [ToolResultBlock(pending, text)]
        else:
            blocks = [TextBlock(text)]
        pending = None
        last = agent.turns[-1] if agent.turns else None
        if last is not None and last.role == "user":
            last.blocks.extend(blocks)
        else:
            agent.turns.append(Turn("user", blocks, i, when))
    for t in agent.turns:
        if t.role == "user":
            t.blocks = [b for b in t.blocks if isinstance(b, ToolResultBlock)] + [
                b for b in t.blocks if not isinstance(b, ToolResultBlock)
            ]
    name_results(agent.turns)
    report.kept["replies"] += len(agent.replies())
    return agent


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(c.get("text", "")) for c in content if isinstance(c, dict) and "text" in c
        )
    return ""


def _usage(message: dict[str, Any], response: dict[str, Any]) -> Usage | None:
    u = response.get("usage")
    u = u if isinstance(u, dict) else message.get("usage")
    if not isinstance(u, dict):
        return None
    details = u.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    read = as_int(u.get("cache_read_input_tokens")) or as_int(details.get("cached_tokens"))
    write = as_int(u.get("cache_creation_input_tokens"))
    prompt = as_int(u.get("prompt_tokens"))
    # litellm's prompt_tokens includes the cached part for both providers
    return Usage(
        input_tokens=max(0, prompt - read - write),
        output_tokens=as_int(u.get("completion_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
