"""`team stats`, `team report`, `team transcripts` (docs/design.md, "Studying compaction")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from team.cli.base import (
    TeamGroup,
    command,
    dir_option,
    full_option,
    group,
    json_option,
    subcommand,
    terminal_width,
    workspace,
)
from team.core.errors import UserError

if TYPE_CHECKING:
    from team.agents.console.columns import Column
    from team.workspace.places import Workspace


def _print_table(title: str, columns: list[Column], rows: list[list[str]], hint: str) -> None:
    from team.agents.console.columns import fit, wrap

    width = terminal_width()
    table = fit(columns, rows, width)
    click.echo("\n".join([*wrap(title, width), *table.lines]))
    if table.dropped:
        click.echo(f"(not shown: {', '.join(table.dropped)}; {hint})")
    click.echo()


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


@command("study")
@json_option
@click.option(
    "--db",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Another node's events.db (or its workspace folder) to merge in; repeatable.",
)
@dir_option
def stats(json_out: bool, db: tuple[Path, ...], dir: Path) -> None:
    """Show calls, tokens, cost and compactions per agent and team.

    Read from .team/events.db.

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
        click.echo(json.dumps(st.to_dict(), indent=2))
        return
    from team.agents.console.columns import REQUIRED, Column

    for t in tables(st):
        if not t.rows:
            click.echo(f"{t.title}: none")
            continue
        columns = [
            Column(
                h,
                keep=REQUIRED if i == 0 else len(t.headers) - i,  # the rightmost gives way first
                right=all(row[i][:1] in "0123456789-$" for row in t.rows),
            )
            for i, h in enumerate(t.headers)
        ]
        _print_table(t.title, columns, t.rows, "team stats --json has all")


@command("study")
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    metavar="FILE.png",
    help="PNG to write (default .team/report.png); the HTML page goes beside it.",
)
@dir_option
def report(out: Path | None, dir: Path) -> None:
    """Draw context size over time, compactions marked (PNG, HTML)."""
    from team.study.report import write_report

    ws = workspace(dir)
    png, page = write_report(ws.events_db, out or ws.report_png, _team_name(ws), _team_model(ws))
    click.echo(str(png))
    click.echo(str(page))


class _ListByDefault(TeamGroup):
    """`team transcripts [AGENT]` lists; `team transcripts show FILE` renders one.

    Any first word that is not a subcommand (an agent name, an option) goes to `list`,
    so the listing keeps the form it always had; its help shows that form.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            args = ["list", *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listing = self.commands["list"]
        pieces = " ".join(listing.collect_usage_pieces(ctx))
        formatter.write_usage(ctx.command_path, pieces)
        show = self.commands["show"]
        with click.Context(show, info_name="show", parent=ctx) as sub:
            formatter.write_usage(
                ctx.command_path, "show " + " ".join(show.collect_usage_pieces(sub)), "   or: "
            )

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listing = self.commands["list"]
        with click.Context(listing, info_name="list", parent=ctx) as sub:
            rows = [
                r
                for p in listing.get_params(sub)
                if isinstance(p, click.Option) and (r := p.get_help_record(sub))
            ]
        with formatter.section("Arguments"):
            formatter.write_dl([("AGENT", "Only this agent's transcripts.")])
        with formatter.section("Options"):
            formatter.write_dl(rows)
        self.format_commands(ctx, formatter)


@group("study", cls=_ListByDefault)
def transcripts() -> None:
    """List the transcripts archived at each compaction, or show one."""


@subcommand(transcripts, "show")
@click.argument("file", type=click.Path(path_type=Path))
@full_option
@dir_option
def transcripts_show(file: Path, full: bool, dir: Path) -> None:
    """Render one transcript (FILE, as listed) as a person reads it.

    It holds the full history of one segment, from before its compaction.
    """
    from team.study.conversation_view import show_transcript
    from team.workspace.places import Workspace

    ws = workspace(dir)
    path = file if file.is_absolute() or file.exists() else ws.root / file
    if not path.is_file():
        raise UserError(f"{file}: no such transcript")
    agent = Workspace.transcript_agent(path) or "assistant"
    try:
        for text in show_transcript(path, agent, full=full):
            click.echo(text)
    except UnicodeDecodeError:
        raise UserError(f"{file}: not UTF-8 text") from None
    except OSError as e:
        raise UserError(f"{file}: cannot read: {e.strerror or e}") from None


@subcommand(transcripts, "list")
@click.argument("agent", required=False)
@json_option
@dir_option
def transcripts_list(agent: str | None, json_out: bool, dir: Path) -> None:
    """List the transcripts (AGENT's, or all): the default."""
    from team.agents.console.columns import REQUIRED, Column
    from team.study.transcripts import list_transcripts

    ws = workspace(dir)
    files = list_transcripts(ws, agent)
    if json_out:
        click.echo(json.dumps([f.to_dict() for f in files], indent=2))
        return
    if not files:
        where = ws.transcripts_dir(agent) if agent else ws.transcripts_root
        click.echo(f"no transcripts yet in {where}")
        return
    rows = []
    for f in files:
        try:
            shown = str(f.path.relative_to(ws.root))
        except ValueError:
            shown = str(f.path)
        rows.append([f.agent, str(f.seq), f.utc, f.layer, f"{f.messages:,}", f"{f.size:,}", shown])
    columns = [
        Column("agent", keep=700),
        Column("seq", keep=600, right=True),
        Column("utc", keep=300),
        Column("layer", keep=500),
        Column("messages", keep=200, right=True),
        Column("bytes", keep=100, right=True),
        Column("path", keep=REQUIRED),  # what `team transcripts show FILE` takes: whole
    ]
    _print_table("Transcripts", columns, rows, "team transcripts --json has all")
