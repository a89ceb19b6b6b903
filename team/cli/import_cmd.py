"""`team import`: another agent's session log as a workspace the study commands read."""

from __future__ import annotations

import json
from pathlib import Path

import click

from team.cli.base import command, json_option


@command("study", "import")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--to",
    required=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="The folder to write the workspace in.",
)
@click.option(
    "--repair",
    is_flag=True,
    help="Fix what the API would reject (and say what changed) instead of failing.",
)
@json_option
def import_(file: Path, to: Path, repair: bool, json_out: bool) -> None:
    """Import another agent's session log as a workspace.

    Then `team stats -C DIR` or `team experiment --replay DIR`.

    FILE is a Claude Code, Codex CLI, Gemini CLI, OpenHands, SWE-agent or mini-swe-agent
    log, a Messages-API JSON, or one of ours: the format is detected from the content.
    """
    from team.sessions import read_session
    from team.sessions.calibration import recorded
    from team.sessions.source import foreign
    from team.sessions.workspace import write_workspace

    session = read_session(file, repair=repair)
    with foreign(file):
        ws = write_workspace(session, to)
        rec = recorded(session)
    if json_out:
        out = {
            "workspace": str(ws.root),
            "format": session.format,
            "agents": {
                a.name: {"turns": len(a.turns), "replies": len(a.replies())} for a in session.agents
            },
            "recorded": rec.to_dict() if rec else None,
            **session.report.to_dict(),
        }
        click.echo(json.dumps(out, indent=2))
        return
    agents = ", ".join(f"{a.name} ({len(a.replies())} replies)" for a in session.agents)
    click.echo(f"imported {file} ({session.format}) into {ws.root}: {agents}")
    for line in session.report.lines():
        click.echo(f"  {line}")
    if rec is not None:
        click.echo(
            f"  recorded usage: {rec.calls} calls, input tokens total {rec.input_tokens_total:,}"
        )
    click.echo(f"next: team experiment --replay {ws.root}")
