"""The typer app every command module registers on, and the options they share."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from team.events import EventSink, SqliteEventLog
from team.workspace import Workspace

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
    return Workspace.at(path)


@contextlib.contextmanager
def event_log(ws: Workspace) -> Iterator[EventSink | None]:
    """Record deliveries in .team/events.db (§8); a busy or broken db never blocks a send."""
    try:
        sink = SqliteEventLog(ws.events_db)
    except (sqlite3.Error, OSError):
        yield None
        return
    try:
        yield sink
    finally:
        sink.close()
