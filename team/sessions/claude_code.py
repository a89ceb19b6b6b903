"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`).

The file is not a list of messages but a forest of lines linked by `parentUuid`:
- each content block of a reply is its own line, and the lines of one reply share
  `message.id`; parallel tool calls and their results branch off each other;
- "redo from here" leaves the abandoned branch in the file;
- a resume copies the conversation under a new root, so reading lines in order doubles it;
- Claude Code's own compaction starts a new root, a `compact_boundary` system line whose
  `logicalParentUuid` points back at the last line before it, followed by the summary
  (a user line with `isCompactSummary`);
- subagents are sidechains (`isSidechain`, grouped by `agentId`), inline in older logs
  and in `<session>/subagents/agent-*.jsonl` in newer ones.

The conversation is the path from the last line back to its root, across compaction
boundaries, plus the lines that hang off that path but belong to it: the other blocks of
the same replies and the results of its tool calls. Everything else is dropped, counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from team.core.conversation import ToolResultBlock, ToolUseBlock
from team.llm.base import Usage
from team.sessions.blocks import anthropic_blocks, name_results
from team.sessions.model import (
    AgentLog,
    CompactionMark,
    ImportReport,
    LogError,
    Session,
    Turn,
)
from team.sessions.source import as_int, epoch, json_lines, read_text

Line = tuple[int, dict[str, Any]]
FORMAT = "claude-code"


def looks_like(lines: list[Line]) -> bool:
    return any(
        o.get("type") in ("user", "assistant") and "message" in o and "parentUuid" in o
        for _, o in lines[:50]
    )


def read(path: Path, lines: list[Line], report: ImportReport) -> Session:
    main = [(n, o) for n, o in lines if not o.get("isSidechain")]
    side = [(n, o) for n, o in lines if o.get("isSidechain")]
    agents = []
    if any(_is_message(o) for _, o in main):
        agents.append(_conversation("main", main, report, path))
    else:  # a subagent's own file: every line is a sidechain
        main, side = side, []
        agents.append(_conversation("main", main, report, path))
    for i, (agent_id, group) in enumerate(_sidechains(side), 1):
        agents.append(_conversation(_sub_name(agent_id, i), group, report, path))
    sub_dir = path.parent / path.stem / "subagents"
    if sub_dir.is_dir():
        for i, sub in enumerate(sorted(sub_dir.glob("agent-*.jsonl")), len(agents)):
            sub_lines = json_lines(sub, read_text(sub), repair=True, report=report)
            agent_id = sub.stem.removeprefix("agent-")
            agents.append(_conversation(_sub_name(agent_id, i), sub_lines, report, sub))
    agents = [a for a in agents if a.turns]
    report.kept["agents"] = len(agents)
    return Session(str(path), FORMAT, agents, report)


def _sub_name(agent_id: str, i: int) -> str:
    safe = "".join(c for c in agent_id.lower() if c.isalnum())[:8]
    return f"sub-{safe or i}"


def _is_message(o: dict[str, Any]) -> bool:
    return o.get("type") in ("user", "assistant") and isinstance(o.get("message"), dict)


def _sidechains(side: list[Line]) -> list[tuple[str, list[Line]]]:
    """Sidechain lines by subagent: by `agentId`, else by the root each line hangs from."""
    groups: dict[str, list[Line]] = {}
    root: dict[str, str] = {}
    for n, o in side:
        uid, parent = str(o.get("uuid", "")), o.get("parentUuid")
        key = o.get("agentId") or root.get(str(parent)) or uid or str(n)
        root[uid] = key
        groups.setdefault(str(key), []).append((n, o))
    return list(groups.items())


def _conversation(name: str, lines: list[Line], report: ImportReport, path: Path) -> AgentLog:
    by_uuid = {str(o["uuid"]): (n, o) for n, o in lines if o.get("uuid")}
    messages = [(n, o) for n, o in lines if _is_message(o) and not _synthetic(o)]
    agent = AgentLog(name)
    if not messages:
        return agent
    on_path = _final_path(messages[-1][1], by_uuid, report)
    tree = _roots(by_uuid)
    trees = {tree[u] for u in on_path}
    reply_ids = {_msg_id(by_uuid[u][1]) for u in on_path} - {None}
    call_ids: set[str] = set()
    pending_summary: int | None = None
    emitted: set[str] = set()
    for n, o in lines:
        uid = str(o.get("uuid", ""))
        if uid and uid in emitted:
            report.dropped["repeated lines"] += 1
            continue
        emitted.add(uid)
        included = uid in on_path
        if not included and tree.get(uid) in trees and _is_message(o):
            # off the path but part of it: another block of one of its replies, or the
            # result of one of its calls (parallel tool calls branch like this)
            included = _msg_id(o) in reply_ids or bool(_result_ids(o) & call_ids)
        if not included:
            if _is_message(o) or o.get("type") == "system":
                report.dropped["lines off the final path (branches, resumed copies)"] += 1
            continue
        if o.get("type") == "system":
            if o.get("subtype") == "compact_boundary":
                meta = o.get("compactMetadata") or o.get("compact_metadata") or {}
                pending_summary = len(agent.compactions)
                agent.compactions.append(
                    CompactionMark(
                        len(agent.turns),
                        str(meta.get("trigger", "auto")),
                        as_int(meta.get("preTokens", meta.get("pre_tokens"))) or None,
                        0,
                        n,
                    )
                )
            else:
                report.dropped["system lines"] += 1
            continue
        if _synthetic(o):
            report.dropped["synthetic replies (API errors, interruptions)"] += 1
            continue
        msg = o["message"]
        if o.get("isCompactSummary") and pending_summary is not None:
            mark = agent.compactions[pending_summary]
            summary = anthropic_blocks(msg.get("content"), report.kept, report.renamed)
            chars = sum(b.chars() for b in summary)
            agent.compactions[pending_summary] = CompactionMark(
                mark.before, mark.trigger, mark.pre_tokens, chars, mark.line
            )
            pending_summary = None
            report.kept["compaction summaries (on the compaction record)"] += 1
            continue
        try:
            blocks = anthropic_blocks(msg.get("content"), report.kept, report.renamed)
        except ValueError as e:
            raise LogError(path, n, str(e)) from None
        _add(agent, o, n, blocks)
        for b in blocks:
            if isinstance(b, ToolUseBlock):
                call_ids.add(b.id)
        if o.get("type") == "assistant" and _msg_id(o):
            reply_ids.add(_msg_id(o))
    name_results(agent.turns)
    if any(_one_hour(o["message"]) for _, o in messages):
        agent.cache_ttl = "1h"
    report.kept["replies"] += len(agent.replies())
    report.kept["compactions"] += len(agent.compactions)
    agent.model = next(
        (str(o["message"].get("model")) for _, o in messages if o["message"].get("model")), ""
    )
    return agent


def _add(agent: AgentLog, o: dict[str, Any], n: int, blocks: list) -> None:
    role = "assistant" if o["type"] == "assistant" else "user"
    when = epoch(o.get("timestamp"))
    last = agent.turns[-1] if agent.turns else None
    if role == "assistant":
        mid = _msg_id(o)
        target = next((t for t in reversed(agent.turns) if t.role == "assistant"), None)
        if target is not None and mid and target.key == mid:
            for b in blocks:
                if b not in target.blocks:
                    target.blocks.append(b)
            target.usage = _usage(o["message"]) or target.usage
            return
        agent.turns.append(
            Turn("assistant", list(blocks), n, when, _usage(o["message"]), mid or "")
        )
        return
    if last is not None and last.role == "user":
        # one line per tool result, then perhaps the person's text: one user turn, as
        # Claude Code sends it; results first, as the API wants them
        merged = last.blocks + blocks
        last.blocks = [b for b in merged if isinstance(b, ToolResultBlock)] + [
            b for b in merged if not isinstance(b, ToolResultBlock)
        ]
        return
    agent.turns.append(Turn("user", list(blocks), n, when))


def _synthetic(o: dict[str, Any]) -> bool:
    msg = o.get("message") or {}
    return bool(o.get("isApiErrorMessage")) or msg.get("model") == "<synthetic>"


def _msg_id(o: dict[str, Any]) -> str | None:
    if o.get("type") != "assistant":
        return None
    mid = (o.get("message") or {}).get("id")
    return str(mid) if mid else None


def _result_ids(o: dict[str, Any]) -> set[str]:
    content = (o.get("message") or {}).get("content")
    if not isinstance(content, list):
        return set()
    return {
        str(b.get("tool_use_id"))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }


def _one_hour(msg: dict[str, Any]) -> bool:
    """Newer logs split cache writes by lifetime; Claude Code may write 1-hour entries."""
    split = (msg.get("usage") or {}).get("cache_creation")
    return isinstance(split, dict) and as_int(split.get("ephemeral_1h_input_tokens")) > 0


def _usage(msg: dict[str, Any]) -> Usage | None:
    u = msg.get("usage")
    if not isinstance(u, dict):
        return None
    return Usage(
        input_tokens=as_int(u.get("input_tokens")),
        cache_read_tokens=as_int(u.get("cache_read_input_tokens")),
        cache_write_tokens=as_int(u.get("cache_creation_input_tokens")),
        output_tokens=as_int(u.get("output_tokens")),
    )


def _final_path(
    leaf: dict[str, Any], by_uuid: dict[str, tuple[int, dict[str, Any]]], report: ImportReport
) -> set[str]:
    """The uuids from `leaf` back to its first root, across compaction boundaries."""
    path: set[str] = set()
    cur: dict[str, Any] | None = leaf
    while cur is not None:
        uid = str(cur.get("uuid", ""))
        if uid in path:
            break  # a cycle: a broken log, stop rather than loop
        path.add(uid)
        parent = cur.get("parentUuid") or cur.get("logicalParentUuid")
        if not parent:
            break
        if str(parent) not in by_uuid:
            report.dropped["links to lines not in the file"] += 1
            break
        cur = by_uuid[str(parent)][1]
    return path


def _roots(by_uuid: dict[str, tuple[int, dict[str, Any]]]) -> dict[str, str]:
    """The root of every line's tree (following `parentUuid` only), in linear time."""
    root: dict[str, str] = {}
    for uid in by_uuid:
        chain: list[str] = []
        in_chain: set[str] = set()
        cur = uid
        while cur not in root:
            chain.append(cur)
            in_chain.add(cur)
            parent = by_uuid[cur][1].get("parentUuid")
            if not parent or str(parent) not in by_uuid or str(parent) in in_chain:
                root[cur] = cur
                chain.pop()
                break
            cur = str(parent)
        top = root[cur]
        for c in chain:
            root[c] = top
    return root
