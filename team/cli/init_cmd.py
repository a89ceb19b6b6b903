"""`team init` and `team check`: write and verify a team.toml."""

from __future__ import annotations

from typing import Annotated

import typer

from team.cli.base import DirOption, app, workspace
from team.core.errors import UserError

DEFAULT_AGENTS = "alice:coder,bob:tester,carol:reviewer"


def _parse_agents(spec: str) -> list[tuple[str, str]]:
    agents = []
    for item in spec.split(","):
        name, sep, role = item.strip().partition(":")
        if not sep or not name or not role:
            raise typer.BadParameter(f"{item!r}: expected NAME:ROLE", param_hint="--agents")
        agents.append((name.strip(), role.strip()))
    return agents


@app.command()
def init(
    agents: Annotated[str, typer.Option(help="Comma-separated NAME:ROLE pairs.")] = DEFAULT_AGENTS,
    model: Annotated[str, typer.Option(help='Anthropic model id, or "sim" (offline).')] = "sim",
    name: Annotated[str, typer.Option(help="The team's name.")] = "demo",
    threshold: Annotated[int, typer.Option(help="Auto-compaction threshold (tokens).")] = 50_000,
    force: Annotated[bool, typer.Option(help="Overwrite an existing team.toml.")] = False,
    dir: DirOption = ".",
) -> None:
    """Write a team.toml."""
    from team.workspace.config import render_config

    ws = workspace(dir)
    if ws.config_path.exists() and not force:
        raise UserError(f"{ws.config_path} already exists (use --force to overwrite)")
    text = render_config(name, model, _parse_agents(agents), threshold)
    ws.root.mkdir(parents=True, exist_ok=True)
    ws.config_path.write_text(text)
    typer.echo(f"wrote {ws.config_path}")


@app.command()
def check(dir: DirOption = ".") -> None:
    """Check team.toml and print the team it defines, and how its commands are confined."""
    from team.sandbox import bwrap as sandbox

    ws = workspace(dir)
    cfg = ws.load_config()
    n = len(cfg.agents)
    typer.echo(f"team {cfg.team.name!r}, model {cfg.team.model}, {n} agent{'s' if n != 1 else ''}:")
    for a in cfg.agents:
        typer.echo(f"  {a.name} ({a.role})")
    from team.agents.build import reach_lines
    from team.compaction.auto import window_problem

    if problem := window_problem(cfg):
        raise UserError(problem)
    for line in reach_lines(cfg):  # a prefix the threshold cannot compact away
        typer.echo(line)
    for line in sandbox.summary(ws, cfg, sandbox.detect()):
        typer.echo(line)
