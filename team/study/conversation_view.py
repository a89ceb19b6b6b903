"""An agent's conversation as a person reads it: `team log` and `team transcripts show`.

The session log (`.team/agents/<agent>/session.jsonl`, see docs/design.md) is the
truth; this module only renders it. By default it shows what the model saw: old tool
results that micro-compaction replaced appear as their `[Previous: used <tool>]`
placeholder, and long texts are cut (a person scrolls, the model does not). With
`full=True` it shows the stored text, every character of it.

Which results micro replaced: an assistant record names the results newly replaced in
the request it answers (`cleared`), so the view is exact. Logs written before that
field existed are replayed with the agent's `[compaction]` settings through the same
`MicroCompactor`, call by call (exact for the rule-based policy, close for the cost-based
one). A placeholder once placed stays for the rest of its segment, as it did for the model.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from team.compaction.micro import MicroCompactor, placeholder
from team.compaction.transcripts import transcript_lines
from team.core.conversation import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    append_user,
    block_from_dict,
)
from team.workspace.config import CompactionConfig

log = logging.getLogger(__name__)

SHOWN_CHARS = 1500
"""How much of one text or tool result is shown unless `full`."""
RULE = "─" * 8


def clip(text: str, limit: int | None) -> str:
    """`text`, or its first `limit` characters and how many more there are."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit:,} more characters; --full shows all]"


def _indent(text: str) -> str:
    return "  " + text.replace("\n", "\n  ")


def _tool_input(input: dict[str, Any], limit: int | None) -> str:
    return clip(json.dumps(input, ensure_ascii=False), None if limit is None else limit // 3)


@dataclass
class Renderer:
    """Turns a conversation, message by message, into text for a person.

    Args:
        agent: whose conversation (names the assistant turns).
        full: the stored text, whole; otherwise what the model saw, long texts cut.
        cleared: ids of tool results micro-compaction replaced (shown as placeholders).
    """

    agent: str
    full: bool = False
    cleared: frozenset[str] = frozenset()
    _names: dict[str, str] = field(default_factory=dict)

    @property
    def limit(self) -> int | None:
        return None if self.full else SHOWN_CHARS

    def message(self, m: Message) -> str:
        parts = []
        for b in m.content:
            if isinstance(b, TextBlock):
                who = self.agent if m.role == "assistant" else "user"
                parts.append(f"[{who}]\n{_indent(clip(b.text, self.limit))}")
            elif isinstance(b, ToolUseBlock):
                self._names[b.id] = b.name
                parts.append(f"[{self.agent} -> {b.name}] {_tool_input(b.input, self.limit)}")
            elif isinstance(b, ToolResultBlock):
                name = b.name or self._names.get(b.tool_use_id, "tool")
                status = "error" if b.is_error else "result"
                if not self.full and b.tool_use_id in self.cleared:
                    text = f"{placeholder(name)}   (micro-compacted; --full shows the result)"
                else:
                    text = clip(b.content, self.limit)
                parts.append(f"[{name} {status}]\n{_indent(text)}")
        return "\n".join(parts)

    def messages(self, messages: Iterable[Message]) -> Iterator[str]:
        for m in messages:
            yield self.message(m)


# -- the session log ----------------------------------------------------------------------


def read_records(path: Path, start: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The whole records in `path` from byte `start` on, and where the next one begins.

    A partial last line (being written) is left for the next read; an unreadable line is
    skipped with a warning, as the agent's own resume does.
    """
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read()
    end = data.rfind(b"\n") + 1
    records = []
    for n, line in enumerate(data[:end].splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict) or "t" not in rec:
                raise ValueError("not a record")
            records.append(rec)
        except ValueError as e:
            log.warning(
                "%s: skipping an unreadable record (line %d from byte %d: %s)", path, n, start, e
            )
    return records, start + end


def _compaction_line(rec: dict[str, Any]) -> str:
    layer = rec.get("layer", "?")
    before, after = rec.get("tokens_before"), rec.get("tokens_after")
    sizes = f": {before:,} -> {after:,} tokens" if before and after is not None else ""
    where = f"; transcript {rec['transcript']}" if rec.get("transcript") else ""
    return f"{RULE} {layer} compaction{sizes}{where} {RULE}\n(the model goes on from here:)"


class SessionView:
    """Folds session records into what to print, and remembers where it is for --follow.

    Args:
        agent: the agent's name.
        config: its compaction settings (for replaying which results micro replaced).
        full: show stored text whole, no placeholders.
    """

    def __init__(self, agent: str, config: CompactionConfig, *, full: bool = False) -> None:
        self.agent = agent
        self.full = full
        self.micro = MicroCompactor(config)
        self.segment: list[Message] = []
        self.cleared: set[str] = set()

    def fold(self, rec: dict[str, Any]) -> None:
        """Apply one record: what the model saw at each call decides the placeholders."""
        kind = rec.get("t")
        if kind == "user":
            append_user(self.segment, *(block_from_dict(b) for b in rec.get("blocks", ())))
        elif kind == "assistant":
            if "cleared" in rec:  # what the request this reply answers had replaced
                self.cleared.update(str(i) for i in rec["cleared"])
            else:  # an older log: replay the rules on the segment as it was sent
                self.micro.view(list(self.segment))
                self.cleared |= self.micro.cleared
            self.segment.append(Message.from_dict(rec["message"]))
        elif kind == "compaction":
            self.micro.reset()
            self.segment = [Message.from_dict(rec["first"])]

    def render(self, records: list[dict[str, Any]]) -> Iterator[str]:
        """Text for these records (fold them all first, so placeholders are final)."""
        renderer = Renderer(self.agent, self.full, frozenset(self.cleared))
        pending: list[Message] = []  # user records merge into one turn, as for the model

        def flush() -> Iterator[str]:
            if pending:
                yield from renderer.messages(pending)
                pending.clear()

        for rec in records:
            kind = rec.get("t")
            try:
                if kind == "user":
                    blocks = tuple(block_from_dict(b) for b in rec.get("blocks", ()))
                    if blocks:
                        pending.append(Message("user", blocks))
                elif kind == "assistant":
                    yield from flush()
                    yield renderer.message(Message.from_dict(rec["message"]))
                elif kind == "compaction":
                    yield from flush()
                    yield _compaction_line(rec)
                    yield renderer.message(Message.from_dict(rec["first"]))
                elif kind == "note" and rec.get("event"):
                    yield from flush()
                    yield f"({rec['event']})"
            except (KeyError, TypeError, ValueError) as e:
                yield f"(unreadable {kind} record: {e})"
        yield from flush()


def show_session(
    path: Path, agent: str, config: CompactionConfig, *, full: bool = False
) -> tuple[SessionView, Iterator[str], int]:
    """Render a whole session log; returns the view and offset to follow it from."""
    view = SessionView(agent, config, full=full)
    records, offset = read_records(path)
    for rec in records:
        try:
            view.fold(rec)
        except (KeyError, TypeError, ValueError):
            continue  # render says so where it happens
    return view, view.render(records), offset


def show_transcript(path: Path, agent: str, *, full: bool = False) -> Iterator[str]:
    """A transcript: the full stored text of a segment, one message per line of JSON."""
    renderer = Renderer(agent, full)
    for _, m in transcript_lines(path):
        yield f"({m})" if isinstance(m, ValueError) else renderer.message(m)
