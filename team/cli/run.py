"""`team up`, `team down`, `team status`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from team.cli.base import DirOption, JsonOption, app, workspace
from team.core.errors import UserError


@app.command()
def up(
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Return once the team has nothing left to do.")
    ] = False,
    model: Annotated[
        str | None, typer.Option(help='Override the model: an Anthropic id, or "sim".')
    ] = None,
    idle_grace: Annotated[
        float, typer.Option(help="Seconds the team must stay idle before --until-idle returns.")
    ] = 2.0,
    timeout: Annotated[
        float | None, typer.Option(help="Stop the team after this many seconds (exit 1).")
    ] = None,
    sim_latency: Annotated[
        float, typer.Option(help="Seconds each sim model call takes (sim only).")
    ] = 0.0,
    agents: Annotated[
        str | None,
        typer.Option(
            "--agents",
            help="Run only these agents (comma-separated): one node of a team on Redis.",
        ),
    ] = None,
    dir: DirOption = ".",
) -> None:
    """Run the team in the foreground until Ctrl-C, `team down`, or (--until-idle) idle."""
    from team.agents.runtime.launch import RunOptions, foreground, run_error

    picked = agents.split(",") if agents is not None else None
    opts = RunOptions(until_idle, model, idle_grace, timeout, sim_latency, picked)
    result = foreground(workspace(dir), opts)
    print(result.summary)
    if error := run_error(result, timeout):
        raise UserError(error)


@app.command()
def down(
    wait: Annotated[float, typer.Option(help="Seconds to wait for the team to stop.")] = 120.0,
    dir: DirOption = ".",
) -> None:
    """Ask a running team to stop gracefully (each agent finishes its step first)."""
    from team.agents.runtime.control import stop_team

    ws = workspace(dir)
    stop_team(ws, ws.load_config(), wait, say=lambda line: print(line, flush=True))
    print("team stopped")


@app.command()
def status(json_out: JsonOption = False, dir: DirOption = ".") -> None:
    """Agents of the team here: state, what each is doing, task, context, compactions
    (auto/manual/micro), pending inbox, spend against budget, and last errors."""
    from team.agents.runtime.control import team_status

    ws = workspace(dir)
    out = team_status(ws, ws.load_config())
    if json_out:
        print(json.dumps(out, indent=2))
        return
    from rich.console import Console

    from team.agents.console.printer import status_table

    title = f"team {out['team']!r}: " + ("up" if out["running"] else "down")
    console = Console()
    (console if console.is_terminal else Console(width=160)).print(status_table(out, title))
    if out.get("mcp"):
        from team.agents.runtime.servers import status_lines

        for line in status_lines(out["mcp"]):
            print(line)
