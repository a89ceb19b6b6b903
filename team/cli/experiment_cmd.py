"""`team experiment`: one workload under every compaction strategy, in one table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from team.cli.base import command, json_option
from team.core.errors import UserError

PATH = click.Path(path_type=Path)


@command("study")
@click.option(
    "--agents",
    type=click.IntRange(min=3),
    default=3,
    show_default=True,
    metavar="N",
    help="Agents in the sim workload (reader, runner, coder, ...).",
)
@click.option(
    "--seed",
    type=int,
    default=7,
    show_default=True,
    metavar="S",
    help="Seed of the generated files and the sim.",
)
@click.option(
    "--tasks",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    metavar="T",
    help="Tasks per agent.",
)
@click.option(
    "--threshold",
    type=click.IntRange(min=1),
    default=50_000,
    show_default=True,
    metavar="TOKENS",
    help="Reference auto threshold (hybrid doubles it).",
)
@click.option(
    "--replay",
    type=PATH,
    metavar="PATH",
    help="Replay a recorded session instead of running the sim workload: a workspace, a "
    "session.jsonl, or another agent's log (Claude Code, Codex CLI, Gemini CLI, SWE-agent, "
    "mini-swe-agent, Messages-API JSON).",
)
@click.option(
    "--keep-recent",
    type=click.IntRange(min=0),
    metavar="N",
    help="keep_recent for every strategy that does not set its own.",
)
@click.option(
    "--preserve-tools",
    metavar="A,B",
    help="Comma-separated preserve_tools for every strategy that does not set its own "
    '(our names: read_file, bash, ...; "" for none).',
)
@click.option(
    "--strategy",
    "strategy_file",
    type=PATH,
    metavar="FILE.toml",
    help="A TOML file of your own strategies ([strategy.NAME]).",
)
@click.option(
    "--summary-model",
    metavar="MODEL",
    help="With --replay: summaries from this Anthropic model (needs ANTHROPIC_API_KEY) "
    "instead of the extractive simulator.",
)
@click.option("--repair", is_flag=True, help="With --replay: fix what the API would reject.")
@click.option(
    "--keep",
    type=PATH,
    metavar="DIR",
    help="Keep each strategy's run in DIR/<strategy> (for team stats -C).",
)
@click.option(
    "--dir",
    "-C",
    "dir",
    type=PATH,
    metavar="DIR",
    envvar="TEAM_DIR",
    show_envvar=True,
    help="Workspace to save the results in (.team/experiments/, the Study page of team web). "
    "Default: the replayed workspace, else the current directory if it has a team.toml.",
)
@click.option("--no-save", is_flag=True, help="Do not save the results.")
@json_option
def experiment(
    agents: int,
    seed: int,
    tasks: int,
    threshold: int,
    replay: Path | None,
    keep_recent: int | None,
    preserve_tools: str | None,
    strategy_file: Path | None,
    summary_model: str | None,
    repair: bool,
    keep: Path | None,
    dir: Path | None,
    no_save: bool,
    json_out: bool,
) -> None:
    """Compare compaction strategies on one workload (offline sim).

    The same workload (or, with --replay, a recorded session) runs under each strategy.
    """
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
                from team.llm import credentials

                credentials.require(summary_model)  # before the SDK's seconds of import
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
            data = result.to_dict()
            if json_out:
                click.echo(json.dumps(data, indent=2))
            else:
                click.echo(render_log(result))
            if not no_save:
                _save(dir, replay, "replay", data)
            return
    else:
        workload = Workload(agents=agents, tasks_per_agent=tasks, seed=seed)
        exp = run_experiment(
            workload, threshold=threshold, strategies=strategies, keep=keep, progress=progress
        )
    data = exp.to_dict()
    if json_out:
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo("(offline simulation: SimModel and its simulated prompt cache)")
        click.echo(render(exp))
    if not no_save:
        _save(dir, replay, "replay" if replay is not None else "sim", data)


def _save(dir: Path | None, replay: Path | None, kind: str, data: dict) -> None:
    """Keep the results in a workspace for `team web` (one line on stderr says where)."""
    from team.study.saved import save
    from team.workspace.filenames import CONFIG_FILE
    from team.workspace.places import Workspace

    if dir is None:
        if replay is not None and replay.is_dir() and (replay / CONFIG_FILE).is_file():
            dir = replay
        elif Path(CONFIG_FILE).is_file():
            dir = Path(".")
        else:
            print(
                "results not saved: no workspace here (-C DIR keeps them for team web)",
                file=sys.stderr,
            )
            return
    try:
        path = save(Workspace.at(dir), kind, data)
    except OSError as e:
        raise UserError(f"results not saved in {dir}: {e.strerror or e}") from e
    print(f"saved: {path}", file=sys.stderr)


def _own_recording(path: Path) -> bool:
    """One of our own workspaces, or a session log inside one; not an imported workspace,
    and not a log copied elsewhere (those go through the readers, which detect it)."""
    from team.workspace.places import Workspace

    if path.is_dir():
        return not Workspace.at(path).import_record.exists()
    return Workspace.of_agent_file(path.resolve()) is not None
