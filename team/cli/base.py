"""The typer app every command module registers on, and the options they share.

Every `team ...` command starts a Python process, so the command modules import only
typer at load time and the library inside the commands that need it (`team send` should
not load the runtime; bench/bench_cli_startup.py measures it)."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from team.core.errors import UserError

if TYPE_CHECKING:
    from team.core.events import EventSink
    from team.tasks import Board
    from team.teamwork import Teamwork
    from team.workspace.config import TeamConfig
    from team.workspace.places import Workspace

app = typer.Typer(
    name="team",
    help="Run a team of named Claude agents on one machine, and study their compaction.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DirOption = Annotated[
    Path,
    typer.Option(
        "--dir",
        "-C",
        help="Workspace directory (holds team.toml, .team/ and .transcripts/).",
        envvar="TEAM_DIR",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def workspace(path: Path) -> Workspace:
    from team.workspace.places import Workspace

    return Workspace.at(path)


@contextlib.contextmanager
def event_log(ws: Workspace) -> Iterator[EventSink | None]:
    """Record deliveries in .team/events.db (docs/design.md, "Files on disk"); a busy or
    broken db never blocks a send."""
    from team.core.events import SqliteEventLog

    try:
        sink = SqliteEventLog(ws.events_db)
    except (sqlite3.Error, OSError):
        yield None
        return
    try:
        yield sink
    finally:
        sink.close()


@contextlib.contextmanager
def teamwork(ws: Workspace, config: TeamConfig, board: Board) -> Iterator[Teamwork]:
    """What the team is told when the user changes the board, recorded in the event log."""
    from team.teamwork import Crew, Teamwork

    with event_log(ws) as sink:
        yield Teamwork(Crew(ws, config, board, sink))


FileOption = Annotated[
    Path | None,
    typer.Option(
        "--file",
        help="Read the text from this file (or give TEXT as - to read standard input).",
        show_default=False,
    ),
]


def text_input(text: str | None, file: Path | None) -> str:
    """The text of a message or task: the argument, `-` for stdin, or `--file PATH`.

    A command line cannot carry a 200 KB argument ("Argument list too long"), so long
    texts come from a file or a pipe.

    Raises:
        UserError: both or neither given, an unreadable file, or text that is not UTF-8.
    """
    if file is not None and text is not None:
        raise UserError("give the text or --file, not both")
    if file is not None:
        try:
            data = file.read_bytes()
        except OSError as e:
            raise UserError(f"{file}: cannot read: {e.strerror or e}") from None
        source = str(file)
    elif text == "-":
        data = sys.stdin.buffer.read()
        source = "standard input"
    elif text is not None:
        return text
    else:
        raise UserError("missing TEXT (give it, - to read standard input, or --file PATH)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{source}: not UTF-8 text") from None
