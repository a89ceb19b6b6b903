"""`team stats`, `team report`, `team transcripts` (docs/design.md, "Studying compaction")."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from team.cli.base import DirOption, JsonOption, app, workspace
from team.core.errors import UserError

if TYPE_CHECKING:
    from team.workspace.places import Workspace


def _console() -> Any:
    from rich.console import Console

    console = Console()
    # A pipe gets no terminal width: give it room for the long path column of
    # `team transcripts`, unless COLUMNS says otherwise. The stats tables fit 80.
    if console.is_terminal or "COLUMNS" in os.environ:
        return console
    return Console(width=120)


def _print_table(console: Any, title: str, headers: list[str], rows: list[list[str]]) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    # No vertical rules: the outer frame and separators cost 3 columns per column, which
    # is what pushed the stats past 80.
    # The title is its own line: as a table title it would wrap at the table's width.
    console.print(Text(title, style="bold"), soft_wrap=False)
    table = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, h in enumerate(headers):
        numeric = all(row[i][:1] in "0123456789-$" for row in rows)
        table.add_column(h, justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _team_name(ws: Workspace) -> str:
    # The title is a nicety: a report must still be drawn if team.toml is gone or broken.
    from team.workspace.config import ConfigError

    try:
        return ws.load_config().team.name
    except ConfigError:
        return ws.root.name or "team"


def _team_model(ws: Workspace) -> str:
    """The model the team runs on, to price its calls; an unknown one is marked as such."""
    from team.workspace.config import ConfigError

    try:
        return ws.load_config().team.model
    except ConfigError:
        return "unknown"


@app.command()
def stats(
    json_out: JsonOption = False,
    db: Annotated[
        list[Path] | None,
        typer.Option(
            "--db",
            help="Another node's events.db (or its workspace folder) to merge in; repeatable.",
        ),
    ] = None,
    dir: DirOption = ".",
) -> None:
    """Per-agent and team numbers from .team/events.db: calls, tokens, cost, compactions.

    With --db, the numbers of several nodes of one team (Redis backend) merged.
    """
    from team.study.stats import stats as compute_stats
    from team.study.stats import tables
    from team.workspace.places import Workspace

    ws = workspace(dir)
    local = ws.events_db
    if db:
        extra = [Workspace.at(p).events_db if p.is_dir() else p for p in db]
        st = compute_stats(([local] if local.exists() else []) + extra, _team_model(ws))
    else:
        st = compute_stats(local, _team_model(ws))
    if json_out:
        typer.echo(json.dumps(st.to_dict(), indent=2))
        return
    console = _console()
    for t in tables(st):
        if t.rows:
            _print_table(console, t.title, t.headers, t.rows)
        else:
            console.print(f"{t.title}: none")


@app.command()
def report(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="PNG to write (default .team/report.png); the HTML page goes beside it.",
        ),
    ] = None,
    dir: DirOption = ".",
) -> None:
    """Draw context size over time with every compaction marked, as a PNG and an HTML page."""
    from team.study.report import write_report

    ws = workspace(dir)
    png, page = write_report(ws.events_db, out or ws.report_png, _team_name(ws), _team_model(ws))
    typer.echo(str(png))
    typer.echo(str(page))


class _ListByDefault(TyperGroup):
    """`team transcripts [AGENT]` lists; `team transcripts show FILE` renders one.

    Any first word that is not a subcommand (an agent name, an option) goes to `list`,
    so the listing keeps the form it always had.
    """

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["list", *args]
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["list", *args]
        return super().parse_args(ctx, args)


transcripts_app = typer.Typer(
    cls=_ListByDefault,
    help="List the transcripts archived before each compaction, or show one.",
    no_args_is_help=False,
)
app.add_typer(transcripts_app, name="transcripts")


@transcripts_app.command("show")
def transcripts_show(
    file: Annotated[Path, typer.Argument(help="A transcript (.jsonl), as listed.")],
    full: Annotated[bool, typer.Option("--full", help="Show long texts whole.")] = False,
    dir: DirOption = ".",
) -> None:
    """Render one transcript: the full history of a segment, as a person reads it."""
    from team.study.conversation_view import show_transcript
    from team.workspace.places import Workspace

    ws = workspace(dir)
    path = file if file.is_absolute() or file.exists() else ws.root / file
    if not path.is_file():
        raise UserError(f"{file}: no such transcript")
    agent = Workspace.transcript_agent(path) or "assistant"
    try:
        for text in show_transcript(path, agent, full=full):
            typer.echo(text)
    except UnicodeDecodeError:
        raise UserError(f"{file}: not UTF-8 text") from None
    except OSError as e:
        raise UserError(f"{file}: cannot read: {e.strerror or e}") from None


@transcripts_app.command("list")
def transcripts(
    agent: Annotated[str | None, typer.Argument(help="Only this agent's transcripts.")] = None,
    json_out: JsonOption = False,
    dir: DirOption = ".",
) -> None:
    """List the transcripts archived before each compaction."""
    from team.study.transcripts import list_transcripts

    ws = workspace(dir)
    files = list_transcripts(ws, agent)
    if json_out:
        typer.echo(json.dumps([f.to_dict() for f in files], indent=2))
        return
    if not files:
        where = ws.transcripts_dir(agent) if agent else ws.transcripts_root
        typer.echo(f"no transcripts yet in {where}")
        return
    rows = []
    for f in files:
        try:
            shown = str(f.path.relative_to(ws.root))
        except ValueError:
            shown = str(f.path)
        rows.append([f.agent, str(f.seq), f.utc, f.layer, f"{f.messages:,}", f"{f.size:,}", shown])
    _print_table(
        _console(),
        "Transcripts",
        ["agent", "seq", "utc", "layer", "messages", "bytes", "path"],
        rows,
    )
