"""The `team` command group every command module registers on, and the options they share.

A command says which group of `team --help` it belongs to where it is declared, and
nowhere else:

    @command("work")
    @click.argument("agent")
    @dir_option
    def nudge(agent: str, dir: Path) -> None:
        '''One line for the listing. More for `team nudge --help`.'''

`group(...)` declares a command with subcommands (`team task ...`) the same way.

Every `team ...` command starts a Python process, so the command modules import only
click at load time and the library inside the commands that need it (`team send` should
not load the runtime; bench/bench_cli_startup.py measures it). Click rather than typer:
typer builds a pydantic adapter for every parameter of every command before it parses
one (bench/README.md, "CLI startup").
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from team import __version__
from team.core.errors import UserError

if TYPE_CHECKING:
    from team.core.events import EventSink
    from team.tasks import Board
    from team.teamwork import Teamwork
    from team.workspace.config import TeamConfig
    from team.workspace.places import Workspace

GROUPS = {
    "run": "Run a team",
    "work": "Give it work",
    "watch": "Watch it",
    "study": "Study compaction",
}
"""The sections of `team --help`, in this order; within one, commands keep the order in
which they were declared (team/cli/app.py imports the modules in that order)."""

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 80}


class TeamGroup(click.Group):
    """A command group whose listing is split into the `GROUPS` sections."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # the declared order, not the alphabet

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        commands = [(n, c) for n, c in self.commands.items() if not c.hidden]
        names = max((len(n) for n, _ in commands), default=0)
        width = formatter.width - formatter.current_indent - 4 - names
        for name, cmd in commands:
            where = getattr(cmd, "team_group", None) or "other"
            # padded to one width, so that every section lines up as one list
            row = (name.ljust(names), cmd.get_short_help_str(width))
            sections.setdefault(where, []).append(row)
        titles = {**GROUPS, "other": "Commands"}
        for key, title in titles.items():
            if rows := sections.get(key):
                with formatter.section(title):
                    formatter.write_dl(rows)


def _declare(kind: Callable[..., Any], where: str | None, name: str | None, parent, kwargs):
    if parent is None and where not in GROUPS:
        raise ValueError(f"unknown help group {where!r} (one of: {', '.join(GROUPS)})")

    def register(f: Callable[..., Any]) -> click.Command:
        cmd = kind(name, context_settings=CONTEXT, **kwargs)(f)
        cmd.team_group = where
        (parent or app).add_command(cmd)
        return cmd

    return register


def command(where: str, name: str | None = None, **kw):
    """Declare `team NAME`, listed under `GROUPS[where]` in `team --help`."""
    return _declare(click.command, where, name, None, kw)


def subcommand(parent: click.Group, name: str | None = None, **kw):
    """Declare `team PARENT NAME` (a command of a `group`)."""
    return _declare(click.command, None, name, parent, kw)


def group(where: str, name: str | None = None, **kw):
    """Declare a command with subcommands of its own (`team task show N`)."""
    kw.setdefault("cls", TeamGroup)
    return _declare(click.group, where, name, None, kw)


@click.group(cls=TeamGroup, context_settings=CONTEXT)
@click.version_option(__version__, "--version", "-V", message="team %(version)s")
def app() -> None:
    """Run a team of named Claude agents on one machine, and study their compaction."""


def dir_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--dir DIR` / `-C DIR` / TEAM_DIR: the workspace a command works on."""
    return click.option(
        "--dir",
        "-C",
        "dir",
        type=click.Path(path_type=Path),
        default=".",
        metavar="DIR",
        envvar="TEAM_DIR",
        show_envvar=True,
        help="Workspace directory (holds team.toml, .team/ and .transcripts/).",
    )(f)


json_option = click.option(
    "--json", "json_out", is_flag=True, help="Print JSON instead of a table."
)
file_option = click.option(
    "--file",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Read the text from this file (or give TEXT as - to read standard input).",
)
full_option = click.option("--full", is_flag=True, help="Show long texts whole.")


def workspace(path: Path) -> Workspace:
    from team.workspace.places import Workspace

    return Workspace.at(path)


def terminal_width() -> int:
    """The width to lay tables out in: `COLUMNS`, the terminal's, or 80 for a pipe."""
    return _terminal_size("COLUMNS", 0, 80)


def terminal_lines() -> int:
    return _terminal_size("LINES", 1, 24)


def _terminal_size(env: str, index: int, default: int) -> int:
    """What `shutil.get_terminal_size` says for one dimension, without importing shutil
    (it loads the compression modules: a tenth of `team status`'s startup)."""
    import os

    try:
        given = int(os.environ[env])
    except (KeyError, ValueError):
        given = 0
    if given > 0:
        return given
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())[index]
    except (AttributeError, ValueError, OSError):
        size = 0
    return size or default


def event_log(ws: Workspace) -> contextlib.AbstractContextManager[EventSink | None]:
    """Record deliveries in .team/events.db (docs/design.md, "Files on disk"); a busy or
    broken db never blocks a send."""
    from team.core.events import optional_log

    return optional_log(ws.events_db)


@contextlib.contextmanager
def teamwork(ws: Workspace, config: TeamConfig, board: Board) -> Iterator[Teamwork]:
    """What the team is told when the user changes the board, recorded in the event log."""
    from team.teamwork import Crew, Teamwork

    with event_log(ws) as sink:
        yield Teamwork(Crew(ws, config, board, sink))


def text_input(text: str | None, file: Path | None) -> str:
    """The text of a message or task: the argument, `-` for stdin, or `--file PATH`.

    A command line cannot carry a 200 KB argument ("Argument list too long"), so long
    texts come from a file or a pipe.

    Raises:
        click.UsageError: both or neither given (exit 2, like every usage error).
        UserError: an unreadable file, or text that is not UTF-8.
    """
    if file is not None and text is not None:
        raise click.UsageError("give the text or --file, not both")
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
        raise click.UsageError("missing TEXT (give it, - to read standard input, or --file PATH)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{source}: not UTF-8 text") from None
