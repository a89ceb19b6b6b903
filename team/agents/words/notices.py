"""What an agent tells the person in the user inbox when it stops on its own."""

from __future__ import annotations

import logging

from team.core.events import AgentEvent, EventSink
from team.mailbox.base import Inboxes
from team.mailbox.message import MailMessage
from team.workspace.places import USER

log = logging.getLogger(__name__)


def budget_spent(name: str, why: str, inboxes: Inboxes, sink: EventSink) -> None:
    """The agent's or the team's budget is spent: an event, and a line to the user."""
    sink.emit(AgentEvent(name, "budget", why))
    note = MailMessage(
        sender=name,
        to=USER,
        content=f"{name} stopped taking work: {why}. Raise budget_usd in team.toml "
        "and start the team again to go on.",
    )
    try:
        inboxes.mailbox(USER).deliver(note)
    except OSError as e:
        log.warning("%s: could not tell the user its budget is spent: %s", name, e)


def refused(name: str, asked: str, inboxes: Inboxes, sink: EventSink) -> None:
    """The model refused to answer `asked` (stop_reason refusal): the turn ended there."""
    asked = " ".join(asked.split())[:300]
    sink.emit(AgentEvent(name, "refusal", asked[:200]))
    inboxes.mailbox(USER).deliver(
        MailMessage(
            sender=name,
            to=USER,
            content=(
                f"{name}: the model refused to answer (stop_reason refusal), so I "
                f"stopped this turn. It was answering: {asked or '(nothing)'}. Send me "
                "new instructions to go on."
            ),
        )
    )
