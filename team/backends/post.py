"""Sending: check names and content, then deliver durably (docs/design.md, "CLI", "Inboxes").

Used by the CLI (`team send`, `team broadcast`) and by the agents' messaging tools, so
a typo in a recipient is the same clear error everywhere, never a new inbox.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from team.backends.base import Backend, open_backend
from team.core.errors import UserError
from team.core.events import DeliveryEvent, EventSink
from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage, MessageError
from team.workspace.places import USER, Workspace

if TYPE_CHECKING:  # pydantic: `team send` takes the team from a ConfigView
    from team.workspace.config import TeamConfig
    from team.workspace.snapshot import ConfigView


def check_sender(config: TeamConfig | ConfigView, sender: str) -> None:
    """A sender is a teammate or `user`: `--from nobody` would forge a reply path."""
    if sender == USER or sender in config.names():
        return  # team.toml's names all match AGENT_NAME (the loader checked them)
    from team.workspace.config import AGENT_NAME

    if not AGENT_NAME.match(sender):
        raise UserError(f"invalid sender name {sender!r}: must match {AGENT_NAME.pattern}")
    known = ", ".join([*config.names(), USER])
    raise UserError(f"unknown sender {sender!r} (one of: {known})")


def send(
    ws: Workspace,
    config: TeamConfig | ConfigView,
    to: str,
    content: str,
    *,
    sender: str = "user",
    type: str = "message",
    task_id: int | None = None,
    approved: bool | None = None,
    sink: EventSink | None = None,
    backend: Backend | None = None,
    spool: Callable[[MailMessage], None] | None = None,
    msg_id: str | None = None,
) -> MailMessage:
    """Check one message to `to` and deliver it to their inbox; durable when it returns.

    Args:
        backend: the team's backend (a running node passes its own); None opens the
            one team.toml or TEAM_BACKEND names, for this call.
        spool: takes the checked message instead of delivering it now (a Redis node's
            outbox, which delivers it later and tells its own sink).
        msg_id: the message's id, chosen by the sender (default: a new uuid); on Redis
            a second delivery of the same id adds nothing, so a retry delivers once.

    Raises:
        UserError: unknown recipient (naming the team's agents), invalid sender name,
            empty content, or an unknown message type.
    """
    ws.require_agent(config, to)
    check_sender(config, sender)
    if sender == to:
        raise UserError(f"{to!r} cannot send a message to itself")
    if not content.strip():
        raise UserError("message is empty")
    try:
        msg = MailMessage.model_validate(
            {
                "from": sender,
                "to": to,
                "content": content,
                "type": type,
                "task_id": task_id,
                "approved": approved,
                **({"id": msg_id} if msg_id is not None else {}),
            }
        )
    except MessageError as e:
        raise UserError(f"invalid message {e.field}: {e.reason}") from None
    if spool is not None:
        spool(msg)
        return msg
    with _using(ws, config, backend) as b:
        deliver(b, msg, sink)
    return msg


def deliver(backend: Backend, msg: MailMessage, sink: EventSink | None = None) -> None:
    """Put a composed message in its recipient's inbox, and say so to `sink`."""
    backend.mailbox(msg.to).deliver(msg)
    if sink is not None:
        event = DeliveryEvent(msg.to, msg.sender, msg.id, "sent", msg_type=msg.type)
        sink.emit(event)


@contextlib.contextmanager
def _using(
    ws: Workspace, config: TeamConfig | ConfigView, backend: Backend | None
) -> Iterator[Backend]:
    if backend is not None:
        yield backend
        return
    opened = open_backend(ws, config)
    try:
        yield opened
    finally:
        opened.close()


def shutdown_request(to: str, sender: str = "user") -> MailMessage:
    """The message that asks `to` to stop after its current step."""
    return MailMessage(
        type="shutdown_request",
        sender=sender,
        to=to,
        content="Please stop after your current step.",
    )


def request_shutdown(
    ws: Workspace, to: str, sender: str = "user", *, backend: Backend | None = None
) -> MailMessage:
    """Ask one agent to stop after its current step (`team down`, Ctrl-C, SIGTERM).

    Args:
        backend: where the agent's inbox lives (None: the files under `ws`).
    """
    msg = shutdown_request(to, sender)
    if backend is None:
        MaildirMailbox(ws.inbox_dir(to)).deliver(msg)
    else:
        backend.mailbox(to).deliver(msg)
    return msg


def broadcast(
    ws: Workspace,
    config: TeamConfig | ConfigView,
    content: str,
    *,
    sender: str = "user",
    sink: EventSink | None = None,
    backend: Backend | None = None,
) -> list[MailMessage]:
    """Deliver `content` to every agent but the sender, each with its own message id."""
    check_sender(config, sender)
    if not content.strip():
        raise UserError("message is empty")
    with _using(ws, config, backend) as b:
        return [
            send(ws, config, name, content, sender=sender, type="broadcast", sink=sink, backend=b)
            for name in config.names()
            if name != sender
        ]
