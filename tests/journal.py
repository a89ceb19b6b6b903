"""Exactly-once processing on top of at-least-once delivery (DESIGN §7).

The owner records each message in a journal (the agent's session log) before it marks
the message done. A crash between the two leaves the message claimed-but-not-done; on
restart it is received again, the journal has seen its id, and it is only marked done.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Protocol

from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage

log = logging.getLogger(__name__)


class Journal(Protocol):
    """Where the owner records a message before marking it done."""

    def seen(self, msg_id: str) -> bool:
        """True if a message with this id was recorded (durably) before."""
        ...

    def record(self, msg: MailMessage) -> None:
        """Record `msg` durably; it must survive a crash once this returns."""
        ...


class JsonlJournal:
    """A `Journal` in an append-only JSONL file, one message per line, fsynced per record.

    A crash can leave a torn last line; it is skipped on load, and a newline is appended
    first so the next record starts on a line of its own.

    Args:
        path: the file; created (with its folder) if missing.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._ids: set[str] = set()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._load()

    def _load(self) -> None:
        data = b""
        while chunk := os.read(self._fd, 1 << 20):
            data += chunk
        for line in data.splitlines():
            try:
                self._ids.add(json.loads(line)["id"])
            except (ValueError, KeyError, TypeError):
                log.warning("%s: skipping a torn or malformed line", self.path)
        if data and not data.endswith(b"\n"):
            os.write(self._fd, b"\n")

    def seen(self, msg_id: str) -> bool:
        with self._lock:
            return msg_id in self._ids

    def record(self, msg: MailMessage) -> None:
        line = (msg.to_json() + "\n").encode("utf-8")
        with self._lock:
            # One write of the whole line with O_APPEND: a kill cannot interleave it.
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
            self._ids.add(msg.id)

    def messages(self) -> list[MailMessage]:
        """Every message recorded, in order (torn lines skipped)."""
        out = []
        for line in self.path.read_bytes().splitlines():
            try:
                out.append(MailMessage.model_validate_json(line))
            except ValueError:
                continue
        return out

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> JsonlJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def drain(mailbox: MaildirMailbox, journal: Journal) -> list[MailMessage]:
    """Receive everything and process each message exactly once.

    For each claimed message: if the journal has seen its id, only mark it done;
    otherwise record it, then mark it done. Record-before-done is the whole trick.

    Returns:
        The messages newly recorded, in order.
    """
    fresh: list[MailMessage] = []
    for claimed in mailbox.receive():
        if not journal.seen(claimed.message.id):
            journal.record(claimed.message)
            fresh.append(claimed.message)
        # The journal, not the done mark, carries exactly-once: a mark lost in a crash
        # only costs a seen() check on restart. So mark as we go, fsync once at the end.
        mailbox.done(claimed, sync=False)
    mailbox.sync()
    return fresh
