"""`team send`, `team broadcast`, `team inbox`: a thin layer over team.mailbox."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from team.cli.base import (
    DirOption,
    FileOption,
    JsonOption,
    app,
    event_log,
    text_input,
    workspace,
)
from team.core.errors import UserError, os_error_line

if TYPE_CHECKING:
    from pathlib import Path

    from team.mailbox.maildir import Status
    from team.mailbox.message import MailMessage

FromOption = Annotated[
    str, typer.Option("--from", help="Sender name (a teammate, or `user` for you).")
]


@app.command()
def send(
    agent: Annotated[str, typer.Argument(help="The recipient.")],
    text: Annotated[str | None, typer.Argument(help="The message; - reads standard input.")] = None,
    file: FileOption = None,
    sender: FromOption = "user",
    dir: DirOption = ".",
) -> None:
    """Deliver a message to an agent's inbox (works whether or not the team is up)."""
    (msg,) = _post(dir, text, file, agent, sender)
    typer.echo(f"sent {msg.id} to {agent}")


@app.command()
def broadcast(
    text: Annotated[str | None, typer.Argument(help="The message; - reads standard input.")] = None,
    file: FileOption = None,
    sender: FromOption = "user",
    dir: DirOption = ".",
) -> None:
    """Deliver a message to every agent but the sender."""
    sent = _post(dir, text, file, None, sender)
    if sent:
        typer.echo(f"sent to {', '.join(m.to for m in sent)}")
    else:
        typer.echo("no recipients: the sender is the only agent")


def _post(
    dir: str, text: str | None, file: Path | None, to: str | None, sender: str
) -> list[MailMessage]:
    """Send the message to `to`, or to every agent but the sender when None.

    A delivery the disk refuses is one line; the mailbox leaves no partial file.
    """
    from team.backends import post

    ws = workspace(dir)
    config = ws.load_config()
    content = text_input(text, file)
    try:
        with event_log(ws) as sink:
            if to is None:
                return post.broadcast(ws, config, content, sender=sender, sink=sink)
            return [post.send(ws, config, to, content, sender=sender, sink=sink)]
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


def _line(msg: MailMessage, status: Status, limit: int | None = SHOWN_CHARS) -> str:
    when = datetime.fromtimestamp(msg.timestamp).strftime("%Y-%m-%d %H:%M:%S")
    head = f"[{status}] {when} from {msg.sender} ({_label(msg)}) {msg.id}"
    return f"{head}\n  " + clip(msg.content, limit).replace("\n", "\n  ")


def _show(msg: MailMessage, status: Status, as_json: bool, limit: int | None) -> None:
    if as_json:
        typer.echo(json.dumps(_record(msg, status)))
    else:
        typer.echo(_line(msg, status, limit))


@app.command()
def inbox(
    agent: Annotated[str, typer.Argument(help="Whose inbox.")],
    show_all: Annotated[bool, typer.Option("--all", help="Include processed messages.")] = False,
    as_json: JsonOption = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new messages until Ctrl-C.")
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help="Show long messages whole (JSON always is).")
    ] = False,
    ack: Annotated[
        bool,
        typer.Option("--ack", help="Mark what is shown as read (your own inbox, `user`, only)."),
    ] = False,
    dir: DirOption = ".",
) -> None:
    """Show an agent's pending (with --all, also processed) messages, oldest first.

    With --follow, print each new message as it lands (with --json, one object a line).
    """
    from team.backends.base import open_backend

    ws = workspace(dir)
    config = ws.load_config()
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
                typer.echo(json.dumps([_record(m, "done") for m in taken], indent=2))
            elif not taken:
                typer.echo("no pending messages for user")
            else:
                for msg in taken:
                    typer.echo(_line(msg, "pending", limit))
        return
    if follow:
        _follow(backend, agent, show_all, as_json, limit)
        return
    shown = reading.listing(mailbox, show_all)
    if as_json:
        typer.echo(json.dumps([_record(m, s) for m, s in shown], indent=2))
    elif not shown:
        typer.echo(f"no {'' if show_all else 'pending '}messages for {agent}")
    else:
        for msg, status in shown:
            typer.echo(_line(msg, status, limit))


def _follow(backend, agent: str, show_all: bool, as_json: bool, limit: int | None) -> None:
    """Print until Ctrl-C or a polite kill (both exit 0), or until the reader goes away."""
    from team.mailbox import reading

    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    previous_term = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    waker = backend.waker(agent, stop)
    try:
        for msg, status in reading.follow(backend.mailbox(agent), waker, stop, show_all):
            _show(msg, status, as_json, limit)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from
        # complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
