"""`team log AGENT [--follow] [--full]`: an agent's conversation as a person reads it."""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Annotated

import typer

from team.cli.base import DirOption, app, workspace
from team.core.errors import UserError

FOLLOW_TICK_S = 0.5
"""--follow looks for new records this often."""


def _print(chunks) -> None:
    for text in chunks:
        typer.echo(text)


@app.command("log")
def log_cmd(
    agent: Annotated[str, typer.Argument(help="Whose conversation.")],
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing as the agent goes on.")
    ] = False,
    full: Annotated[
        bool,
        typer.Option("--full", help="The stored text, whole: no placeholders, nothing cut."),
    ] = False,
    dir: DirOption = ".",
) -> None:
    """Show an agent's conversation: compactions marked, old tool results as the model
    saw them (micro placeholders), long texts cut; --full shows the stored text."""
    from team.study.conversation_view import show_session

    ws = workspace(dir)
    config = ws.load_config()
    ws.require_agent(config, agent)
    if agent not in config.names():
        raise UserError(f"{agent!r} has no conversation: it is you")
    path = ws.session_log(agent)
    if not path.exists() and not follow:
        raise UserError(f"{agent} has no conversation yet ({path} does not exist)")
    compaction = config.compaction_for(agent)
    try:
        if not path.exists():
            view, offset = None, 0
        else:
            view, chunks, offset = show_session(path, agent, compaction, full=full)
            _print(chunks)
        if follow:
            _follow(path, agent, compaction, full, view, offset)
    except BrokenPipeError:
        # `team log alice | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _follow(path, agent, compaction, full, view, offset) -> None:
    from team.study.conversation_view import SessionView, read_records

    view = view or SessionView(agent, compaction, full=full)
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    previous_term = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(FOLLOW_TICK_S):
            if not path.exists() or path.stat().st_size <= offset:
                continue
            records, offset = read_records(path, offset)
            for rec in records:
                view.fold(rec)
            _print(view.render(records))
            sys.stdout.flush()
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
