"""`team send`, `team broadcast`, `team inbox`: a thin layer over team.mailbox."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from team.cli.base import (
    command,
    dir_option,
    event_log,
    file_option,
    json_option,
    terminal_width,
    text_input,
    workspace,
)
from team.core.errors import UserError, os_error_line

if TYPE_CHECKING:
    from team.mailbox.maildir import Status
    from team.mailbox.message import MailMessage

from_option = click.option(
    "--from",
    "sender",
    default="user",
    show_default=True,
    metavar="NAME",
    help="Who it is from: a teammate (whose inbox gets the answer), or user (you).",
)
text_argument = click.argument("text", required=False)


@command("work")
@click.argument("agent")
@text_argument
@file_option
@from_option
@click.option(
    "--id",
    "msg_id",
    metavar="ID",
    help="The message's id (letters, digits, _.:-): on Redis, a retry with the same id "
    "delivers it once.",
)
@dir_option
def send(
    agent: str, text: str | None, file: Path | None, sender: str, msg_id: str | None, dir: Path
) -> None:
    """Deliver TEXT to AGENT's inbox (whether or not the team is up).

    TEXT - reads standard input; --file PATH reads a file.
    """
    (msg,) = _post(dir, text, file, agent, sender, msg_id)
    click.echo(f"sent {msg.id} to {agent}")


@command("work")
@text_argument
@file_option
@from_option
@dir_option
def broadcast(text: str | None, file: Path | None, sender: str, dir: Path) -> None:
    """Deliver TEXT to every agent but the sender."""
    sent = _post(dir, text, file, None, sender)
    if sent:
        click.echo(f"sent to {', '.join(m.to for m in sent)}")
    else:
        click.echo("no recipients: the sender is the only agent")


def _post(
    dir: str,
    text: str | None,
    file: Path | None,
    to: str | None,
    sender: str,
    msg_id: str | None = None,
) -> list[MailMessage]:
    """Send the message to `to`, or to every agent but the sender when None.

    A delivery the disk refuses is one line; the mailbox leaves no partial file.
    """
    from team.backends import post

    content = text_input(text, file)  # a usage error before anything is read
    ws = workspace(dir)
    config = ws.load_view()  # no pydantic: team.toml as last validated, if unchanged
    try:
        with event_log(ws) as sink:
            if to is None:
                return post.broadcast(ws, config, content, sender=sender, sink=sink)
            return [post.send(ws, config, to, content, sender=sender, sink=sink, msg_id=msg_id)]
    except OSError as e:
        raise UserError(f"message not sent: {os_error_line(e)}") from None


def _record(msg: MailMessage, status: Status) -> dict[str, Any]:
    return {**msg.model_dump(mode="json", by_alias=True), "status": status}


SHOWN_CHARS = 2000
"""`team inbox` shows this much of a message unless given --full (a 10 MB one scrolled
a terminal for minutes)."""


def _label(msg: MailMessage) -> str:
    """`task #1` for a task, `message` or `message, task #1` otherwise."""
    if msg.task_id is None:
        return msg.type
    if msg.type == "task":
        return f"task #{msg.task_id}"
    return f"{msg.type}, task #{msg.task_id}"


def clip(text: str, limit: int | None) -> str:
    """`text`, or its first `limit` characters and a note of how much was left out."""
    if limit is None or len(text) <= limit:
        return text
    rest = len(text) - limit
    return f"{text[:limit]}\n[... {rest:,} more characters; --full shows the whole message]"


def _head(msg: MailMessage, status: Status) -> str:
    """`[pending] 2026-12-01 10:00:00 from alice (task #1) ID`; on a terminal too narrow
    for the id as well, the id on a line of its own, whole."""
    from datetime import datetime

    when = datetime.fromtimestamp(msg.timestamp).strftime("%Y-%m-%d %H:%M:%S")
    head = f"[{status}] {when} from {msg.sender} ({_label(msg)})"
    if len(head) + 1 + len(msg.id) <= terminal_width():
        return f"{head} {msg.id}"
    return f"{head}\n  (id {msg.id})"


def _line(msg: MailMessage, status: Status, limit: int | None = SHOWN_CHARS) -> str:
    return f"{_head(msg, status)}\n  " + clip(msg.content, limit).replace("\n", "\n  ")


def _show(
    msg: MailMessage, status: Status, changed: bool, as_json: bool, limit: int | None
) -> None:
    if as_json and changed:  # one object a message; a change is its id and new status
        click.echo(json.dumps({"id": msg.id, "status": status, "changed": True}))
    elif as_json:
        click.echo(json.dumps(_record(msg, status)))
    elif changed:  # shown before: the new state only, not the text again
        from datetime import datetime

        when = datetime.now().strftime("%H:%M:%S")
        click.echo(f"[{status}] {msg.id} at {when} (from {msg.sender}, {_label(msg)})")
    else:
        click.echo(_line(msg, status, limit))


@command("watch")
@click.argument("agent")
@click.option("--all", "show_all", is_flag=True, help="Include processed messages.")
@json_option
@click.option(
    "--follow", "-f", is_flag=True, help="Keep printing messages and their state until Ctrl-C."
)
@click.option("--full", is_flag=True, help="Show long messages whole (JSON always is).")
@click.option("--ack", is_flag=True, help="Mark what is shown as read (your own inbox, user).")
@dir_option
def inbox(
    agent: str, show_all: bool, json_out: bool, follow: bool, full: bool, ack: bool, dir: Path
) -> None:
    """Show AGENT's pending messages (--all: processed ones too).

    Oldest first.

    With --follow, print each new message as it lands, and a line when the agent has
    processed it (with --json, one object a line; a change is
    `{"id": ..., "status": "done", "changed": true}`).
    """
    as_json = json_out
    from team.backends.base import open_backend

    ws = workspace(dir)
    config = ws.load_view()
    ws.require_agent(config, agent)
    backend = open_backend(ws, config)
    try:
        _inbox(backend, agent, show_all, as_json, follow, ack, None if full else SHOWN_CHARS)
    finally:
        backend.close()


def _inbox(
    backend,
    agent: str,
    show_all: bool,
    as_json: bool,
    follow: bool,
    ack: bool,
    limit: int | None,
) -> None:
    from team.mailbox import reading

    mailbox = backend.mailbox(agent)
    if ack:
        with reading.taking(mailbox, agent) as taken:
            if as_json:
                click.echo(json.dumps([_record(m, "done") for m in taken], indent=2))
            elif not taken:
                click.echo("no pending messages for user")
            else:
                for msg in taken:
                    click.echo(_line(msg, "pending", limit))
        return
    if follow:
        _follow(backend, agent, show_all, as_json, limit)
        return
    shown = reading.listing(mailbox, show_all)
    if as_json:
        click.echo(json.dumps([_record(m, s) for m, s in shown], indent=2))
    elif not shown:
        click.echo(f"no {'' if show_all else 'pending '}messages for {agent}")
    else:
        for msg, status in shown:
            click.echo(_line(msg, status, limit))


def _follow(backend, agent: str, show_all: bool, as_json: bool, limit: int | None) -> None:
    """Print until Ctrl-C or a polite kill (both exit 0), or until the reader goes away."""
    from team.mailbox import reading

    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    previous_term = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    waker = backend.waker(agent, stop)
    try:
        for msg, status, changed in reading.follow(backend.mailbox(agent), waker, stop, show_all):
            _show(msg, status, changed, as_json, limit)
            sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from
        # complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
