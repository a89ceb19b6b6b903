"""`team audit`: the commands and file writes the agents made."""

from __future__ import annotations

import json
from pathlib import Path

import click

from team.cli.base import command, dir_option, json_option, terminal_width, workspace


@command("watch")
@click.argument("agent", required=False)
@json_option
@dir_option
def audit(agent: str | None, json_out: bool, dir: Path) -> None:
    """Show every command and file write of the agents (or AGENT).

    Time, agent, tool, outcome and exit code, duration, bytes, and the command or path.
    """
    from team.study.audit import read_audit, table

    ws = workspace(dir)
    config = ws.load_config()
    if agent is not None:
        ws.require_agent(config, agent)
    rows = read_audit(ws.events_db, agent)
    if json_out:
        print(json.dumps(rows, indent=1))
        return
    if not rows:
        click.echo("no commands or file writes recorded")
        return
    click.echo("\n".join(table(rows, terminal_width())))
