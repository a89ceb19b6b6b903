"""The agent's session log: `.team/agents/<agent>/session.jsonl`, append-only, the truth.

One record a line (`team.compaction.records`; the format is in docs/design.md). Folding
them with `History.apply` rebuilds the live history; the `inbox` ids of the newest user
records are the messages already taken in (the exactly-once half of inbox delivery).

One writer (the agent's thread). Every record is flushed and fsynced before the agent
acts on it, so a `kill -9` loses at most a record that was never acted on. This module
is the only one that reads or writes the file's lines.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from team.compaction.history import History
from team.compaction.records import Record, UserTurn, record_from_dict
from team.core.conversation import INTERRUPTED, ToolResultBlock
from team.core.errors import UserError

log = logging.getLogger(__name__)

SEEN_TURNS = 256
"""How many of the newest mail-carrying user turns the seen-ids window covers.

Mail comes back already recorded only soon after it was recorded: the acks a crash cut
off (the last turn's), a send repeated after a lost reply (the next drain or so), an
outbox replaying after an outage (no mail arrives meanwhile). Counting turns, not ids,
keeps a whole flood taken in one turn. Older ids are dropped, so the window's memory
does not grow with the run.
"""


class SessionLogError(UserError):
    """A session log that cannot be read as records (for readers that must not guess)."""


def read_records(
    path: Path, *, strict: bool = False, skipped: list[int] | None = None
) -> Iterator[Record]:
    """The records of a session log, in order, without changing the file.

    A torn last line (a crash mid-write) is skipped. Any other unreadable line is
    skipped with a warning, or with `strict` raises `SessionLogError` naming it; given
    `skipped`, its line number is added there instead (the caller warns once).
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise SessionLogError(f"{path}: cannot read: {e}") from None
    last = len(lines) - 1  # the text after the final newline: "" unless the tail is torn
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield record_from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError) as e:
            if n == last:
                continue  # a partial last record: never acted on
            if strict:
                raise SessionLogError(f"{path}:{n + 1}: not a session record ({e})") from None
            if skipped is not None:
                skipped.append(n + 1)
            else:
                log.warning("%s:%d: skipping unreadable record (%s)", path, n + 1, e)


class SessionLog:
    """Append-only JSONL of records. Also the mailbox journal (`seen` by message id)."""

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        self.path = path
        self.fsync = fsync
        self._seen: set[str] = set()
        self._seen_turns: deque[tuple[str, ...]] = deque()
        self.skipped: list[int] = []
        """Line numbers of unreadable records the last `load` skipped (the caller warns)."""
        self._f = None

    def load(self) -> History:
        """Rebuild the current segment from the log (empty history if there is none)."""
        history = History()
        if not self.path.exists():
            return history
        self._repair_tail()
        for rec in read_records(self.path, skipped=self.skipped):
            history.apply(rec)
            self._remember(rec)
        return history

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

    def append(self, rec: Record) -> None:
        """Write one record durably (flush + fsync) before anyone acts on it."""
        if self._f is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(self.path, "ab")  # noqa: SIM115 (kept open)
        end = self._f.tell()
        try:
            self._f.write((json.dumps(rec.to_dict(), ensure_ascii=False) + "\n").encode())
            self._f.flush()
            if self.fsync:
                os.fsync(self._f.fileno())
        except OSError:
            # disk full mid-line: cut the partial record off, or every later record would
            # follow half a line and the log would be damaged in the middle
            self._f.close()
            self._f = None
            with contextlib.suppress(OSError), open(self.path, "rb+") as f:
                f.truncate(end)
            raise
        self._remember(rec)

    def seen(self, msg_id: str) -> bool:
        """Whether one of the newest `SEEN_TURNS` mail turns recorded this message."""
        return msg_id in self._seen

    def _remember(self, rec: Record) -> None:
        if not isinstance(rec, UserTurn) or not rec.inbox:
            return
        ids = tuple(rec.inbox)
        self._seen.update(ids)
        self._seen_turns.append(ids)
        if len(self._seen_turns) > SEEN_TURNS:
            self._seen.difference_update(self._seen_turns.popleft())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


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
