"""The notices a node sends (unblocked, revoked, a teammate idle or done), queued on
local disk and delivered in the background, so a Redis outage neither blocks the agent
that sends them nor loses them (docs/design.md, "A team across machines").

`send` writes the message to a Maildir spool under `.team/outbox/` (a few milliseconds,
no network) and returns. One thread delivers the spool, oldest first, through the node's
own Redis link: while Redis is away that link waits, with its one warning line when it
goes and one when it is back, and the notices follow as soon as it returns. A notice is
marked done in the spool only once Redis accepted it. One spooled but not delivered
when the node stops (Redis still away) or dies is delivered by the next `team up` in
this folder; a repeat after a crash carries the same message id, and the recipient takes
a message in once.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from team.backends.post import deliver
from team.backends.redis_link import RedisUnavailable
from team.core.errors import UserError
from team.core.events import EventSink
from team.mailbox.base import Inboxes
from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage

log = logging.getLogger(__name__)

RESCAN_S = 1.0
"""How often the spool is looked at without a wake-up (a failed file delivery retries)."""
MAX_TRIES = 5
"""Refusals of one notice by the server (not outages) before it is set aside."""


class Outbox:
    """Notices for the team's inboxes, spooled locally, delivered by one thread.

    Args:
        inboxes: where the notices go (the node's Redis backend, whose link waits).
        spool: the local folder that holds them until delivered.
        stop: ends the link's wait for Redis (the node's stop event); `close` sets it if
            the spool cannot be emptied in time.
        sink: told of each delivery, as `post.send` tells it.
    """

    def __init__(
        self,
        inboxes: Inboxes,
        spool: Path,
        *,
        stop: threading.Event,
        sink: EventSink | None = None,
    ) -> None:
        self.inboxes = inboxes
        self.spool = MaildirMailbox(spool)
        self.stop = stop
        self.sink = sink
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._failures: dict[str, int] = {}  # notice id -> failed deliveries (not outages)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start delivering, beginning with what an earlier run left in the spool."""
        self._thread = threading.Thread(target=self._run, name="outbox", daemon=True)
        self._thread.start()

    def send(self, msg: MailMessage) -> None:
        """Queue `msg` (durably, on local disk); it is delivered in the background.

        Raises:
            OSError: the spool cannot be written (a full disk): the caller logs it.
        """
        self.spool.deliver(msg)
        self._wake.set()

    def pending(self) -> int:
        """Notices queued and not yet delivered (the spool itself: no count to drift)."""
        return self.spool.pending_count()

    def close(self, timeout: float = 5.0) -> int:
        """Deliver what is queued (for up to `timeout` s), then stop. Returns what is left.

        What is left stays in the spool for the next `team up` here, and is said in one
        warning line.
        """
        self._closing.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():  # waiting for Redis: stop that wait
                self.stop.set()
                self._thread.join(5.0)
        left = self.spool.pending_count()
        if left:
            log.warning(
                "%d notices could not be delivered (Redis away); they wait in %s and go "
                "out when the team next starts in this folder",
                left,
                self.spool.root,
            )
        return left

    def _run(self) -> None:
        while True:
            self._wake.wait(RESCAN_S)
            self._wake.clear()
            try:
                delivered_all = self._deliver_spooled()
            except RedisUnavailable:
                return  # the wait for Redis was stopped: the node is going down
            except Exception as e:  # never let the thread die quietly: notices would pile up
                log.warning("outbox: delivering notices failed (%s); trying again", e)
                delivered_all = False
            if self._closing.is_set() and (delivered_all or self.stop.is_set()):
                return

    def _deliver_spooled(self) -> bool:
        """Deliver every spooled notice, oldest first; False if one must wait."""
        for claim in self.spool.receive():
            msg = claim.message
            try:
                deliver(self.inboxes, msg, self.sink)
            except RedisUnavailable:
                raise
            except (UserError, OSError) as e:  # a full disk on a files backend: later
                log.warning("outbox: could not deliver %s to %s yet: %s", msg.id, msg.to, e)
                return False
            except Exception as e:  # the server refuses this one (OOM, a wrong key type)
                if self._refused(claim, e):
                    continue
                return False
            # removed, not archived: Redis holds it now; a crash before this line only
            # delivers it again, with the same id, which the recipient takes in once
            claim.path.unlink(missing_ok=True)
            self._failures.pop(msg.id, None)
        return True

    def _refused(self, claim, e: Exception) -> bool:
        """A notice the server keeps refusing: one warning, then set aside after
        `MAX_TRIES` so the notices behind it go out. True once it is set aside (it stays
        in the spool's processed mail, on disk)."""
        msg = claim.message
        n = self._failures[msg.id] = self._failures.get(msg.id, 0) + 1
        if n == 1:
            log.warning("outbox: Redis refused notice %s to %s: %s", msg.id, msg.to, e)
        if n < MAX_TRIES:
            return False
        self.spool.done(claim)
        del self._failures[msg.id]
        log.warning(
            "outbox: set notice %s to %s aside after %d refusals; it stays in %s",
            msg.id, msg.to, n, self.spool.root,
        )  # fmt: skip
        return True
