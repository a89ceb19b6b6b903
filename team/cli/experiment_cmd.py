"""`team experiment`: one workload under every compaction strategy, in one table."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from team.cli.base import JsonOption, app
from team.errors import UserError


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
            help="Replay a recorded workspace, or one .team/agents/<agent>/session.jsonl, "
            "instead of running the sim workload.",
        ),
    ] = None,
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

    if replay is not None:
        if not replay.exists():
            raise UserError(f"{replay}: no such file or directory")
        exp = replay_experiment(replay, threshold=threshold, keep=keep, progress=progress)
    else:
        workload = Workload(agents=agents, tasks_per_agent=tasks, seed=seed)
        exp = run_experiment(workload, threshold=threshold, keep=keep, progress=progress)
    if json_out:
        typer.echo(json.dumps(exp.to_dict(), indent=2))
    else:
        typer.echo("(offline simulation: SimModel and its simulated prompt cache)")
        typer.echo(render(exp))
