"""`team audit`: the commands and file writes the agents made."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from team.cli.base import DirOption, JsonOption, app, workspace


@app.command()
def audit(
    agent: Annotated[str | None, typer.Argument(help="Only this agent's.")] = None,
    json_out: JsonOption = False,
    dir: DirOption = ".",
) -> None:
    """Every command and file write: agent, tool, outcome, exit code, duration, bytes."""
    from team.study.audit import read_audit, render_row

    ws = workspace(dir)
    config = ws.load_config()
    if agent is not None:
        ws.require_agent(config, agent)
    rows = read_audit(ws.events_db, agent)
    if json_out:
        print(json.dumps(rows, indent=1))
        return
    if not rows:
        typer.echo("no commands or file writes recorded")
        return
    for row in rows:
        typer.echo(render_row(row))
