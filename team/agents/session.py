"""The agent's session log: `.team/agents/<agent>/session.jsonl`, append-only, the truth.

Each line is one record; replaying them rebuilds the live `History` and the set of
inbox message ids already taken in (the exactly-once half of inbox delivery):

    {"t": "user", "blocks": [...], "inbox": [ids]}     user content (merged like append_user)
    {"t": "assistant", "message": {...}, "usage": {...}}
    {"t": "compaction", "layer": ..., "transcript": ..., "first": {...}}   a new segment
    {"t": "note", ...}                                   anything else worth keeping

One writer (the agent's thread). Every record is flushed and fsynced before the agent
acts on it, so a `kill -9` loses at most a record that was never acted on.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from team.compaction.history import History
from team.conversation import Block, Message, ToolResultBlock, block_from_dict
from team.llm.base import Usage

log = logging.getLogger(__name__)

INTERRUPTED = (
    "Interrupted: the team stopped before this tool call finished, so its result is "
    "unknown. Run it again if you still need it."
)


class SessionLog:
    """Append-only JSONL with replay. Also the mailbox `Journal` (seen/record by id)."""

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        self.path = path
        self.fsync = fsync
        self.seen_ids: set[str] = set()
        self._f = None

    # -- replay --------------------------------------------------------------------------

    def load(self) -> History:
        """Rebuild the current segment from the log (empty history if there is none)."""
        history = History()
        if not self.path.exists():
            return history
        self._repair_tail()
        with open(self.path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    self._apply(history, json.loads(line))
                except (ValueError, KeyError, TypeError) as e:
                    log.warning("%s:%d: skipping unreadable record (%s)", self.path, n, e)
        return history

    def _apply(self, history: History, rec: dict[str, Any]) -> None:
        kind = rec["t"]
        if kind == "user":
            history.append_user(*(block_from_dict(b) for b in rec["blocks"]))
            self.seen_ids.update(rec.get("inbox", ()))
        elif kind == "assistant":
            usage = Usage(**rec.get("usage", {}))
            history.append_response(Message.from_dict(rec["message"]), usage)
        elif kind == "compaction":
            segment = history.segment + 1
            history.messages = [Message.from_dict(rec["first"])]
            history.usage_tokens = None
            history.usage_index = 0
            history.segment = segment

    def _repair_tail(self) -> None:
        """A crash mid-write can leave a partial last line; drop it so appends stay whole."""
        with open(self.path, "rb+") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size == 0:
                return
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return
            f.seek(0)
            data = f.read()
            keep = data.rfind(b"\n") + 1
            log.warning("%s: dropping a partial last record (%d bytes)", self.path, size - keep)
            f.truncate(keep)

    @staticmethod
    def interrupted_results(history: History) -> list[ToolResultBlock]:
        """Results for tool calls cut off by a crash, so the next request is valid."""
        pending = set(history.pending_tool_uses())
        if not pending:
            return []
        last = history.messages[history.last_assistant_index()]
        return [
            ToolResultBlock(u.id, INTERRUPTED, u.name, is_error=True)
            for u in last.tool_uses()
            if u.id in pending
        ]

    # -- append --------------------------------------------------------------------------

    def _write(self, rec: dict[str, Any]) -> None:
        if self._f is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (kept open)
        self._f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        self._f.flush()
        if self.fsync:
            os.fsync(self._f.fileno())

    def user(self, blocks: list[Block], inbox_ids: list[str] = ()) -> None:
        rec: dict[str, Any] = {"t": "user", "blocks": [b.to_dict() for b in blocks]}
        if inbox_ids:
            rec["inbox"] = list(inbox_ids)
        self._write(rec)
        self.seen_ids.update(inbox_ids)

    def assistant(self, message: Message, usage: Usage) -> None:
        self._write({"t": "assistant", "message": message.to_dict(), "usage": asdict(usage)})

    def compaction(self, layer: str, transcript: str, first: Message) -> None:
        self._write(
            {"t": "compaction", "layer": layer, "transcript": transcript, "first": first.to_dict()}
        )

    def note(self, **fields: Any) -> None:
        self._write({"t": "note", **fields})

    def seen(self, msg_id: str) -> bool:
        return msg_id in self.seen_ids

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
