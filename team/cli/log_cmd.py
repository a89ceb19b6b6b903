"""`team log AGENT [--follow] [--full]`: an agent's conversation as a person reads it."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections import deque
from pathlib import Path

import click

from team.cli.base import command, dir_option, terminal_lines, workspace
from team.core.errors import UserError

FOLLOW_TICK_S = 0.5
"""--follow looks for new records this often."""


def _print(chunks) -> None:
    for text in chunks:
        click.echo(text)


def _tail(chunks, lines: int, agent: str) -> None:
    """The last `lines` lines of the rendered conversation, after one saying what was left
    out and how to see it."""
    kept: deque[str] = deque(maxlen=lines)
    total = 0
    for text in chunks:
        for line in text.split("\n"):
            kept.append(line)
            total += 1
    if total > len(kept):
        click.echo(
            f"({total - len(kept):,} earlier lines not shown: -n N shows more, "
            f"team log {agent} shows them all)"
        )
    _print(kept)


@command("watch", "log")
@click.argument("agent")
@click.option("--follow", "-f", is_flag=True, help="Keep printing as the agent goes on.")
@click.option(
    "--lines",
    "-n",
    type=click.IntRange(min=0),
    metavar="N",
    help="Start from the last N lines (with --follow: one screen, unless given).",
)
@click.option("--full", is_flag=True, help="The stored text, whole: no placeholders, nothing cut.")
@dir_option
def log_cmd(agent: str, follow: bool, lines: int | None, full: bool, dir: Path) -> None:
    """Show AGENT's conversation as a person reads it.

    Compactions are marked, old tool results shown as the placeholders the model saw,
    long texts cut; --full shows the stored text.
    """
    if follow and lines is None:
        lines = max(terminal_lines() - 2, 1)  # the last screen, and the prompt stays
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
            if lines is None:
                _print(chunks)
            else:
                _tail(chunks, lines, agent)
        if follow:
            _follow(path, agent, compaction, full, view, offset)
    except BrokenPipeError:
        # `team log alice | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except KeyboardInterrupt:
        if not follow:
            raise
        # Ctrl-C while the last screen is still printing ends a follow as it always does


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
