"""`team up`, `team down`, `team approve-config`, `team status`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from team.cli.base import command, dir_option, json_option, terminal_width, workspace
from team.core.errors import UserError


@command("run")
@click.option("--until-idle", is_flag=True, help="Return once the team has nothing left to do.")
@click.option("--model", metavar="MODEL", help='Override the model: an Anthropic id, or "sim".')
@click.option(
    "--idle-grace",
    type=float,
    default=2.0,
    show_default=True,
    metavar="S",
    help="Seconds the team must stay idle before --until-idle returns.",
)
@click.option(
    "--timeout", type=float, metavar="S", help="Stop the team after this many seconds (exit 1)."
)
@click.option(
    "--sim-latency",
    type=float,
    default=0.0,
    metavar="S",
    help="Seconds each sim model call takes (sim only).",
)
@click.option(
    "--agents",
    metavar="A,B",
    help="Run only these agents (comma-separated): one node of a team on Redis.",
)
@click.option(
    "--no-wait",
    is_flag=True,
    help="Redis: exit at once if another node runs one of them (default: wait for it).",
)
@dir_option
def up(
    until_idle: bool,
    model: str | None,
    idle_grace: float,
    timeout: float | None,
    sim_latency: float,
    agents: str | None,
    no_wait: bool,
    dir: Path,
) -> None:
    """Run the team in the foreground (until Ctrl-C or `team down`).

    With --until-idle it returns once the team has nothing left to do.
    """
    from team.llm import credentials
    from team.llm.prices import model_warning

    ws = workspace(dir)
    model_id = model or ws.load_config().team.model
    if warning := model_warning(model_id):
        click.echo(f"team: warning: {warning}", err=True)
    credentials.require(model_id)  # before the runtime and the SDK load: that takes seconds
    from team.agents.runtime.launch import RunOptions, foreground, run_error

    picked = agents.split(",") if agents is not None else None
    opts = RunOptions(until_idle, model, idle_grace, timeout, sim_latency, picked, no_wait)
    result = foreground(ws, opts)
    print(result.summary)
    if error := run_error(result, timeout):
        raise UserError(error)


@command("run")
@click.option(
    "--wait",
    type=float,
    default=120.0,
    show_default=True,
    metavar="S",
    help="Seconds to wait for the team to stop.",
)
@dir_option
def down(wait: float, dir: Path) -> None:
    """Stop a running team gracefully: each agent finishes its step."""
    from team.agents.runtime.control import stop_team

    ws = workspace(dir)
    stop_team(ws, ws.load_config(), wait, say=lambda line: print(line, flush=True))
    print("team stopped")


@command("watch")
@click.option("--wide", is_flag=True, help="Every column, however wide the terminal.")
@json_option
@dir_option
def status(wide: bool, json_out: bool, dir: Path) -> None:
    """Show each agent's state, work, context, inbox and spend.

    Columns that do not fit the terminal are left out, least needed first (--wide shows
    them all); the last errors follow the table.
    """
    from team.agents.runtime.control import team_status

    ws = workspace(dir)
    out = team_status(ws, ws.load_view())  # no pydantic: team.toml as last validated
    if json_out:
        print(json.dumps(out, indent=2))
        return
    from team.agents.console.status_table import status_lines

    title = f"team {out['team']!r}: " + ("up" if out["running"] else "down")
    click.echo("\n".join(status_lines(out, None if wide else terminal_width(), title)))
    if out.get("events"):
        from team.agents.console.status_table import events_line

        click.echo(events_line(out["events"]))
    if out.get("mcp"):
        from team.agents.runtime.servers import status_lines as server_lines

        for line in server_lines(out["mcp"]):
            click.echo(line)
