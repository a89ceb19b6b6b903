"""The seams an agent reaches its inbox through, so another backend can stand in.

`MaildirMailbox` (team.mailbox.maildir) is the one on disk, `RedisMailbox` the one on a
Redis server; `team.backends.base` holds the `Inboxes` of each (`FilesBackend`,
`RedisBackend`). The agent, its intake and the runtime use only these protocols.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from team.mailbox.message import MailMessage


class Waker(Protocol):
    """Blocks until mail may have arrived; every wake-up is only a hint to rescan."""

    def wait(self, timeout: float) -> bool:
        """Block until a file event, `timeout` seconds, or stop.

        Returns:
            True when an event arrived, False on timeout or stop.
        """
        ...

    def close(self) -> None: ...


class Claim(Protocol):
    """A message the owner took out of `new` but has not marked done."""

    @property
    def message(self) -> MailMessage: ...


class Mailbox(Protocol):
    """One agent's inbox: anyone delivers, only the owner receives and marks done."""

    def deliver(self, msg: MailMessage) -> object:
        """Store `msg` durably; it survives a crash once this returns."""
        ...

    def receive(self) -> Sequence[Claim]:
        """Claim what is new, plus what was claimed before and never marked done."""
        ...

    def done(self, claimed: Claim) -> None:
        """Mark a claim processed (idempotent)."""
        ...

    def pending(self) -> list[MailMessage]: ...

    def pending_count(self) -> int: ...

    def has_pending(self) -> bool: ...

    def entries(self) -> Sequence[Entry]:
        """Every message, pending and processed, oldest first (`team inbox --all`)."""
        ...

    def read(self, entry: Entry) -> MailMessage | None:
        """The message of an entry; None if it is gone or unreadable (logged)."""
        ...


class Entry(Protocol):
    """One message as a listing sees it: a stable key and whether it was processed."""

    @property
    def key(self) -> str: ...

    @property
    def status(self) -> str: ...


class Inboxes(Protocol):
    """Every inbox of one team, by agent name (`user` included)."""

    def mailbox(self, agent: str) -> Mailbox: ...

    def waker(self, agent: str, stop: threading.Event) -> Waker:
        """Wakes the owner when mail may have arrived (a hint: it rescans)."""
        ...
