"""`team import`: another agent's session log as a workspace the study commands read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from team.cli.base import JsonOption, app


@app.command("import")
def import_(
    file: Annotated[
        Path,
        typer.Argument(
            help="A session log: Claude Code, Codex CLI, Gemini CLI, SWE-agent, "
            "mini-swe-agent, a Messages-API JSON, or one of ours (detected by content)."
        ),
    ],
    to: Annotated[Path, typer.Option("--to", help="The folder to write the workspace in.")],
    repair: Annotated[
        bool,
        typer.Option(
            help="Fix what the API would reject (and say what changed) instead of failing."
        ),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Import a session log; then `team stats -C DIR` or `team experiment --replay DIR`."""
    from team.sessions import read_session
    from team.sessions.calibration import recorded
    from team.sessions.workspace import write_workspace

    session = read_session(file, repair=repair)
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
        typer.echo(json.dumps(out, indent=2))
        return
    agents = ", ".join(f"{a.name} ({len(a.replies())} replies)" for a in session.agents)
    typer.echo(f"imported {file} ({session.format}) into {ws.root}: {agents}")
    for line in session.report.lines():
        typer.echo(f"  {line}")
    if rec is not None:
        typer.echo(
            f"  recorded usage: {rec.calls} calls, input tokens total {rec.input_tokens_total:,}"
        )
    typer.echo(f"next: team experiment --replay {ws.root}")
