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

- older logs (1.0.x) compacted without a boundary: the summary, a user line with
  `isCompactSummary`, starts a new root itself;
- the file holds lines that are not the conversation: hook `progress` (in the parent
  chain), `file-history-snapshot`, `queue-operation`, `summary` titles, ...

The conversation is the path from the last line back to its root, across compaction
boundaries, plus the lines that hang off that path but belong to it: the other blocks of
the same replies and the results of its tool calls. Everything else is dropped, counted.
A link to a line that is not in the file (one `--repair` dropped, or a compaction's
`logicalParentUuid` into a part of the log no longer kept) is bridged to the nearest
earlier line of the same session, so the conversation goes on across it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from team.core.conversation import TextBlock, ToolResultBlock, ToolUseBlock
from team.llm.base import Usage
from team.sessions.blocks import anthropic_blocks, name_results
from team.sessions.claude_links import Line, Links, final_path, roots
from team.sessions.model import (
    AgentLog,
    CompactionMark,
    ImportReport,
    MicroClear,
    Session,
    Turn,
)
from team.sessions.source import as_int, epoch, stream_lines

FORMAT = "claude-code"


def looks_like(lines: list[Line]) -> bool:
    return any(
        o.get("type") in ("user", "assistant") and "message" in o and "parentUuid" in o
        for _, o in lines[:50]
    )


CONVERSATION = frozenset({"user", "assistant", "system"})
# Record types Claude Code writes that are not the conversation (1.0.x to 2.1.x).
OTHER = frozenset(
    {
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "summary",
        "custom-title",
        "ai-title",
        "last-prompt",
        "mode",
        "permission-mode",
        "tag",
        "agent-name",
        "pr-link",
    }
)


def read(path: Path, lines: list[Line], report: ImportReport) -> Session:
    _count_records(lines, report)
    requests = _requests(lines)
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
            sub_lines = stream_lines(sub, repair=True, report=report)
            _count_records(sub_lines, report)
            requests |= _requests(sub_lines)
            agent_id = sub.stem.removeprefix("agent-")
            agents.append(_conversation(_sub_name(agent_id, i), sub_lines, report, sub))
    agents = [a for a in agents if a.turns]
    report.kept["agents"] = len(agents)
    report.requests_recorded = len(requests) or None  # None: the log bills no reply
    return Session(str(path), FORMAT, agents, report)


def _count_records(lines: list[Line], report: ImportReport) -> None:
    """Lines that are not the conversation, by type; a type not known here is named."""
    for _, o in lines:
        kind = o.get("type")
        if not isinstance(kind, str):  # a list or a number where the type goes
            kind = repr(kind)[:40]
        if kind == "attachment":
            continue  # counted as read or not where the conversation is read
        if kind in ("user", "assistant") and not _is_message(o):
            report.dropped[f"{kind} lines without a message (skipped)"] += 1
            continue
        if kind in CONVERSATION:
            continue
        if kind in OTHER:
            report.dropped[f"{kind} lines (not the conversation)"] += 1
        else:
            report.dropped[f"lines of unknown type {str(kind)[:40]!r} (skipped)"] += 1


def _requests(lines: list[Line]) -> set[str]:
    """The model requests the log records: its replies with usage, one per message.id."""
    out = set()
    for n, o in lines:
        reply = o.get("type") == "assistant" and _is_message(o) and not _synthetic(o)
        if reply and isinstance(o["message"].get("usage"), dict):
            out.add(str(o["message"].get("id") or o.get("uuid") or n))
    return out


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
    links = Links(lines, messages, by_uuid, report)
    on_path = final_path(messages[-1][1], by_uuid, links, report)
    tree = roots(by_uuid, links)
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
            if _is_message(o) or o.get("type") in ("system", "attachment"):
                report.dropped["lines off the final path (branches, resumed copies)"] += 1
            continue
        if o.get("type") == "attachment":
            _attach(agent, o, n, report)
            continue
        if o.get("type") not in CONVERSATION:
            continue  # a progress line in the parent chain: counted by type already
        if o.get("type") == "system":
            if o.get("subtype") == "compact_boundary":
                meta = o.get("compactMetadata") or o.get("compact_metadata")
                meta = meta if isinstance(meta, dict) else {}
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
            elif o.get("subtype") == "microcompact_boundary":
                _micro_clear(agent, o, n, report)
            else:
                report.dropped["system lines"] += 1
            continue
        if _synthetic(o):
            report.dropped["synthetic replies (API errors, interruptions)"] += 1
            continue
        if not _is_message(o):
            continue  # counted by `_count_records`
        msg = o["message"]
        try:
            blocks = anthropic_blocks(msg.get("content"), report.kept, report.renamed)
        except ValueError:
            report.dropped["lines with unreadable content"] += 1
            continue
        if o.get("isCompactSummary"):
            text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
            chars = sum(b.chars() for b in blocks)
            if pending_summary is None:  # 1.0.x: the summary line is the whole record
                agent.compactions.append(
                    CompactionMark(len(agent.turns), "auto", None, chars, n, text)
                )
                report.kept["compactions without a boundary line (1.0.x)"] += 1
            else:
                mark = agent.compactions[pending_summary]
                agent.compactions[pending_summary] = CompactionMark(
                    mark.before, mark.trigger, mark.pre_tokens, chars, mark.line, text
                )
            pending_summary = None
            report.kept["compaction summaries (on the compaction record)"] += 1
            continue
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


def _micro_clear(agent: AgentLog, o: dict[str, Any], n: int, report: ImportReport) -> None:
    """A `microcompact_boundary` (2.1.x): the requests after it carried the named tool
    results as a short placeholder. Kept so the `recorded` replay and the calibration
    send and count what the recorded agent did."""
    meta = o.get("microcompactMetadata") or o.get("compactMetadata") or {}
    ids = meta.get("compactedToolIds") if isinstance(meta, dict) else None
    if not isinstance(ids, list) or not ids:
        report.dropped["micro-compaction lines naming no results"] += 1
        return
    saved = as_int(meta.get("tokensSaved")) or None
    agent.micro_clears.append(MicroClear(len(agent.turns), tuple(str(i) for i in ids), saved, n))
    report.kept["micro-compactions (results the recorded agent cleared)"] += 1


def _attach(agent: AgentLog, o: dict[str, Any], n: int, report: ImportReport) -> None:
    """An `attachment` line (2.1.x) in the conversation: what Claude Code sends the model
    with the next request as user content (a prompt queued while the agent worked, a file
    the person mentioned, CLAUDE.md, a hook's added context, ...), as its text. Its
    wording around that text is Claude Code's own and not in the log."""
    text = _attachment_text(o.get("attachment"))
    kind = str(
        (o.get("attachment") or {}).get("type") if isinstance(o.get("attachment"), dict) else ""
    )
    if not text:
        report.dropped[f"attachment lines with no text for the model ({kind[:40] or '?'})"] += 1
        return
    _add(agent, {**o, "type": "user"}, n, [TextBlock(text)])
    report.kept[f"attachments read as user text ({kind[:40]})"] += 1


def _attachment_text(a: Any) -> str:
    """The text an attachment carries for the model, by its type; "" for none."""
    if not isinstance(a, dict):
        return ""
    kind = a.get("type")
    if kind == "queued_command":
        return _text_of(a.get("prompt"))
    if kind in ("file", "nested_memory"):
        body = a.get("content")
        if isinstance(body, dict):
            body = body.get("file", body)
            body = body.get("content") if isinstance(body, dict) else body
        return _text_of(body)
    if kind == "edited_text_file":
        return _text_of(a.get("snippet"))
    if kind == "invoked_skills":
        skills = a.get("skills") if isinstance(a.get("skills"), list) else []
        return "\n".join(_text_of(k.get("content")) for k in skills if isinstance(k, dict))
    if kind in ("hook_additional_context", "skill_listing", "todo_reminder", "task_reminder"):
        return _text_of(a.get("content"))
    return ""


def _text_of(value: Any) -> str:
    """Text from a string, a list of content blocks or items, or anything else JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [
            str(v.get("text") or "")
            if isinstance(v, dict) and v.get("type") == "text"
            else (_text_of(v) if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
            for v in value
            if not (isinstance(v, dict) and v.get("type") == "image")
        ]
        return "\n".join(p for p in parts if p)
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _message(o: dict[str, Any]) -> dict[str, Any]:
    """The line's `message`, or an empty one where it is missing or not an object."""
    msg = o.get("message")
    return msg if isinstance(msg, dict) else {}


def _synthetic(o: dict[str, Any]) -> bool:
    return bool(o.get("isApiErrorMessage")) or _message(o).get("model") == "<synthetic>"


def _msg_id(o: dict[str, Any]) -> str | None:
    if o.get("type") != "assistant":
        return None
    mid = _message(o).get("id")
    return str(mid) if mid else None


def _result_ids(o: dict[str, Any]) -> set[str]:
    content = _message(o).get("content")
    if not isinstance(content, list):
        return set()
    return {
        str(b.get("tool_use_id"))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }


def _one_hour(msg: dict[str, Any]) -> bool:
    """Newer logs split cache writes by lifetime; Claude Code may write 1-hour entries."""
    usage = msg.get("usage")
    split = usage.get("cache_creation") if isinstance(usage, dict) else None
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
