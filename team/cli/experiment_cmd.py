"""`team experiment`: one workload under every compaction strategy, in one table."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from team.cli.base import JsonOption, app
from team.core.errors import UserError


@app.command()
def experiment(
    agents: Annotated[
        int, typer.Option(min=3, help="Agents in the sim workload (reader, runner, coder, ...).")
    ] = 3,
    seed: Annotated[int, typer.Option(help="Seed of the generated files and the sim.")] = 7,
    tasks: Annotated[int, typer.Option(min=1, help="Tasks per agent.")] = 8,
    threshold: Annotated[
        int, typer.Option(min=1, help="Reference auto threshold in tokens (hybrid doubles it).")
    ] = 50_000,
    replay: Annotated[
        Path | None,
        typer.Option(
            help="Replay a recorded session instead of running the sim workload: a "
            "workspace, a session.jsonl, or another agent's log (Claude Code, Codex CLI, "
            "Gemini CLI, SWE-agent, mini-swe-agent, Messages-API JSON).",
        ),
    ] = None,
    keep_recent: Annotated[
        int | None,
        typer.Option(min=0, help="keep_recent for every strategy that does not set its own."),
    ] = None,
    preserve_tools: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated preserve_tools for every strategy that does not set "
            'its own (our names: read_file, bash, ...; "" for none).'
        ),
    ] = None,
    strategy_file: Annotated[
        Path | None,
        typer.Option("--strategy", help="A TOML file of your own strategies ([strategy.NAME])."),
    ] = None,
    summary_model: Annotated[
        str | None,
        typer.Option(
            help="With --replay: summaries from this Anthropic model (needs "
            "ANTHROPIC_API_KEY) instead of the extractive simulator."
        ),
    ] = None,
    repair: Annotated[
        bool, typer.Option(help="With --replay: fix what the API would reject in the log.")
    ] = False,
    keep: Annotated[
        Path | None,
        typer.Option(help="Keep each strategy's run in KEEP/<strategy> (for team stats -C)."),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Run the same workload under each compaction strategy and compare costs (offline sim)."""
    from team.study.experiment import render, replay_experiment, run_experiment
    from team.study.workload import Workload

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    from team.sessions.study import render as render_log
    from team.sessions.study import replay_log, strategies_from

    tools = None
    if preserve_tools is not None:
        tools = [t.strip() for t in preserve_tools.split(",") if t.strip()]
    strategies = strategies_from(strategy_file, keep_recent=keep_recent, preserve_tools=tools)
    if replay is not None:
        if not replay.exists():
            raise UserError(f"{replay}: no such file or directory")
        if _own_recording(replay) and summary_model is None and not repair:
            exp = replay_experiment(
                replay, threshold=threshold, strategies=strategies, keep=keep, progress=progress
            )
        else:
            model = None
            if summary_model:
                from team.llm.anthropic_model import AnthropicModel

                model = AnthropicModel(summary_model)
            result = replay_log(
                replay,
                threshold=threshold,
                strategies=strategies,
                keep=keep,
                repair=repair,
                summary_model=model,
                progress=progress,
            )
            if json_out:
                typer.echo(json.dumps(result.to_dict(), indent=2))
            else:
                typer.echo(render_log(result))
            return
    else:
        workload = Workload(agents=agents, tasks_per_agent=tasks, seed=seed)
        exp = run_experiment(
            workload, threshold=threshold, strategies=strategies, keep=keep, progress=progress
        )
    if json_out:
        typer.echo(json.dumps(exp.to_dict(), indent=2))
    else:
        typer.echo("(offline simulation: SimModel and its simulated prompt cache)")
        typer.echo(render(exp))


def _own_recording(path: Path) -> bool:
    """One of our own workspaces, or a session log inside one; not an imported workspace,
    and not a log copied elsewhere (those go through the readers, which detect it)."""
    from team.workspace.places import Workspace

    if path.is_dir():
        return not Workspace.at(path).import_record.exists()
    return Workspace.of_agent_file(path.resolve()) is not None
