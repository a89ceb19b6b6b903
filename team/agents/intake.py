"""Taking mail into an agent's conversation exactly once (docs/design.md, "Inboxes").

The mailbox delivers at least once; the session log makes the effect exactly once:
a message is claimed (`new/` -> `cur/`), recorded in the session log (fsync), and only
then marked done. A crash before the record makes it reappear on restart; a crash after
it makes it reappear already recorded, and the id check drops it.
"""

from __future__ import annotations

import time

from team.agents.session.log import SessionLog
from team.agents.session.results import Results
from team.compaction.records import Note
from team.core.events import DeliveryEvent, EventSink
from team.mailbox.base import Claim, Inboxes
from team.mailbox.message import MailMessage
from team.workspace.places import USER


class Intake:
    """One agent's side of its inbox: `receive`, then the caller records, then `ack`."""

    def __init__(
        self,
        agent: str,
        inboxes: Inboxes,
        session: SessionLog,
        sink: EventSink,
        started_at: float,
        results: Results | None = None,
    ) -> None:
        """`results`: where a message too long for the context is kept whole (the
        conversation gets a preview); None: messages are taken in as they are."""
        self.agent = agent
        self.results = results
        self.inboxes = inboxes
        self.mailbox = inboxes.mailbox(agent)
        self.session = session
        self.sink = sink
        self.started_at = started_at
        self._claimed: list[Claim] = []
        self.shutdown: Claim | None = None
        """A shutdown request from the user, answered at the agent's next step boundary."""

    def receive(self) -> list[MailMessage]:
        """New messages the session log has not recorded yet, oldest first.

        The caller must record them (a `UserTurn` with their ids) and then `ack`.
        """
        fresh: list[MailMessage] = []
        # claimed earlier but not recorded yet: the mailbox returns those again
        taking = {c.message.id for c in self._claimed}
        for claimed in self.mailbox.receive():
            msg = claimed.message
            if msg.id in taking:
                continue
            if self.session.seen(msg.id):
                self.mailbox.done(claimed)  # recorded before a crash: only the ack was lost
                continue
            if msg.type == "shutdown_request" and msg.sender == USER:
                if msg.timestamp < self.started_at:
                    self.mailbox.done(claimed)  # stale, from an earlier run: nothing to do
                elif self.shutdown is None:
                    self.shutdown = claimed
                continue
            self._claimed.append(claimed)
            fresh.append(self.results.message(msg) if self.results else msg)
            self.sink.emit(
                DeliveryEvent(
                    agent=self.agent,
                    sender=msg.sender,
                    msg_id=msg.id,
                    kind="received",
                    msg_type=msg.type,
                    latency_s=max(0.0, time.time() - msg.timestamp),
                )
            )
        return fresh

    def ack(self) -> None:
        """Mark done everything received so far: call only after it is recorded."""
        claimed, self._claimed = self._claimed, []
        for c in claimed:
            self.mailbox.done(c)

    def pending_tasks(self) -> set[int]:
        """Ids of the tasks that mail still waiting in the inbox is about."""
        return {m.task_id for m in self.mailbox.pending() if m.task_id is not None}

    def tell_user(self, content: str) -> None:
        """A line from this agent in the person's inbox (`team inbox user`).

        Raises:
            OSError: it could not be delivered.
        """
        self.inboxes.mailbox(USER).deliver(MailMessage(sender=self.agent, to=USER, content=content))

    def forget_unrecorded(self) -> None:
        """Recording failed (e.g. disk full): let the next `receive` return that mail again."""
        self._claimed = []

    def answer_shutdown(self) -> None:
        """Record the pending shutdown request, answer it in the requester's inbox."""
        claimed, self.shutdown = self.shutdown, None
        if claimed is None:
            return
        msg = claimed.message
        self.session.append(Note({"event": "shutdown", "request": msg.id}))
        reply = MailMessage(
            type="shutdown_response",
            sender=self.agent,
            to=msg.sender,
            content=f"{self.agent} stopped after finishing its step.",
            model_extra={"request_id": msg.id},
        )
        self.inboxes.mailbox(msg.sender).deliver(reply)
        self.sink.emit(DeliveryEvent(msg.sender, self.agent, reply.id, "sent", "shutdown_response"))
        self.mailbox.done(claimed)
