"""`team init` and `team check`: write and verify a team.toml."""

from __future__ import annotations

from pathlib import Path

import click

from team.cli.base import command, dir_option, workspace
from team.core.errors import UserError

DEFAULT_AGENTS = "alice:coder,bob:tester,carol:reviewer"


def _parse_agents(spec: str) -> list[tuple[str, str]]:
    agents = []
    for item in spec.split(","):
        name, sep, role = item.strip().partition(":")
        if not sep or not name or not role:
            raise click.BadParameter(f"{item!r}: expected NAME:ROLE", param_hint="--agents")
        agents.append((name.strip(), role.strip()))
    return agents


@command("run")
@click.option(
    "--agents",
    default=DEFAULT_AGENTS,
    metavar="NAME:ROLE,...",
    show_default=True,
    help="Comma-separated NAME:ROLE pairs.",
)
@click.option(
    "--model",
    default="sim",
    show_default=True,
    metavar="MODEL",
    help='Anthropic model id, or "sim" (offline).',
)
@click.option("--name", default="demo", show_default=True, metavar="NAME", help="The team's name.")
@click.option(
    "--threshold",
    type=int,
    default=50_000,
    show_default=True,
    metavar="TOKENS",
    help="Auto-compaction threshold.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing team.toml.")
@dir_option
def init(agents: str, model: str, name: str, threshold: int, force: bool, dir: Path) -> None:
    """Write a team.toml."""
    from team.llm.prices import model_warning
    from team.workspace.config import render_config

    ws = workspace(dir)
    if ws.config_path.exists() and not force:
        raise UserError(f"{ws.config_path} already exists (use --force to overwrite)")
    text = render_config(name, model, _parse_agents(agents), threshold)
    ws.root.mkdir(parents=True, exist_ok=True)
    ws.config_path.write_text(text)
    click.echo(f"wrote {ws.config_path}")
    if warning := model_warning(model):
        click.echo(f"team: warning: {warning}", err=True)


@command("run")
@click.option(
    "--online",
    is_flag=True,
    help="Also ask the API whether it serves the model (needs ANTHROPIC_API_KEY).",
)
@dir_option
def check(online: bool, dir: Path) -> None:
    """Check team.toml: its team, model, sandbox and MCP servers.

    Prints the team it defines, how its commands are confined and each MCP server's
    tools (or why it does not start); warns about a model id the model table does not
    know (--online: one the API does not serve).
    """
    from team.llm.prices import model_warning
    from team.sandbox import bwrap as sandbox

    ws = workspace(dir)
    cfg = ws.load_config()
    n = len(cfg.agents)
    click.echo(f"team {cfg.team.name!r}, model {cfg.team.model}, {n} agent{'s' if n != 1 else ''}:")
    for a in cfg.agents:
        click.echo(f"  {a.name} ({a.role})")
    from team.agents.build import reach_lines
    from team.compaction.auto import window_problem

    if problem := window_problem(cfg):
        raise UserError(problem)
    for line in reach_lines(cfg):  # a prefix the threshold cannot compact away
        click.echo(line)
    for line in sandbox.summary(ws, cfg, sandbox.detect()):
        click.echo(line)
    if cfg.mcp_servers:  # starts each server once, to list its tools
        from team.agents.runtime.servers import check_lines

        for line in check_lines(ws, cfg):
            click.echo(line)
    if online:
        from team.llm.served import online_warnings

        warnings = online_warnings(cfg.team.model)
    else:
        warnings = [w] if (w := model_warning(cfg.team.model)) else []
    for line in warnings:
        click.echo(f"team: warning: {line}", err=True)
