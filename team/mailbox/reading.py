"""Reading an inbox from outside its agent: `team inbox`, `--ack` and `--follow`.

Works on any `Mailbox` (Maildir files or Redis streams). Only the person's own inbox
(`user`) is ever taken; an agent's is only looked at, since the agent takes its own.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from team.core.errors import UserError
from team.mailbox.base import Mailbox, Waker
from team.mailbox.maildir import Status
from team.mailbox.message import MailMessage
from team.workspace.places import USER

FOLLOW_TICK_S = 1.0
"""A follow rescans at least this often, in case a wake-up was lost."""


def listing(mailbox: Mailbox, show_all: bool) -> list[tuple[MailMessage, Status]]:
    """Pending messages (with `show_all` also processed ones), oldest first."""
    return [
        (msg, e.status)
        for e in mailbox.entries()
        if (show_all or e.status == "pending") and (msg := mailbox.read(e)) is not None
    ]


@contextlib.contextmanager
def taking(mailbox: Mailbox, agent: str) -> Iterator[list[MailMessage]]:
    """The person's pending mail, marked read only once the caller has shown it: a
    crash or a broken pipe while showing leaves it pending, so nothing shown is lost.

    Raises:
        UserError: `agent` is not `user` (an agent takes its own mail).
    """
    if agent != USER:
        raise UserError(f"only your own inbox (user) can be acknowledged; {agent} takes its own")
    claims = mailbox.receive()
    yield [c.message for c in claims]
    for c in claims:
        mailbox.done(c)


def follow(
    mailbox: Mailbox, waker: Waker, stop: threading.Event, show_all: bool
) -> Iterator[tuple[MailMessage, Status, bool]]:
    """What is there (pending, or everything with `show_all`), then each new arrival and
    each change of a shown message's status, until `stop` is set: (message, status,
    changed), `changed` True when the message was yielded before with another status.

    Read-only: the agent may take and finish a message between two scans. Every message
    lands pending, so one first seen done after the start is yielded pending, then done:
    a reader never sees a message that "was never pending".
    """
    shown: dict[str, Status] = {}
    first = True
    try:
        while not stop.is_set():
            for e in mailbox.entries():
                was = shown.get(e.key)
                if was == e.status:
                    continue
                if was is None and first and e.status == "done" and not show_all:
                    shown[e.key] = e.status  # history: only --all shows it
                    continue
                if (msg := mailbox.read(e)) is None:
                    continue
                shown[e.key] = e.status
                if was is None and not first and e.status == "done":
                    yield msg, "pending", False  # landed and done between two scans
                    yield msg, "done", True
                else:
                    yield msg, e.status, was is not None
            first = False
            waker.wait(FOLLOW_TICK_S)
    finally:
        waker.close()
