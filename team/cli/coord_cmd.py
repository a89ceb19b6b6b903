"""`team goal`, `team plans`, `team approve`, `team reject`, `team merge`: steering the team."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from team.cli.base import DirOption, JsonOption, app, workspace
from team.cli.tasks_cmd import open_teamwork, team_board
from team.core.errors import UserError

TaskArg = Annotated[int, typer.Argument(metavar="N", help="The task whose plan it is.")]


@app.command()
def goal(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="What the team should achieve.")],
    dir: DirOption = ".",
) -> None:
    """Give the team a goal: its lead splits it into tasks for the others."""
    with open_teamwork(dir) as tw:
        lead = tw.goal(text)
    typer.echo(f"goal sent to {lead} (the lead)")


@app.command()
def plans(
    all_plans: Annotated[bool, typer.Option("--all", help="Reviewed plans too.")] = False,
    json_out: JsonOption = False,
    dir: DirOption = ".",
) -> None:
    """Plans waiting for review (approve with `team approve N`, reject with `team reject`)."""
    ws = workspace(dir)
    config = ws.load_config()
    items = [
        t
        for t in team_board(ws, config).list()
        if t.plan_state == "submitted" or (all_plans and t.plan_state)
    ]
    if json_out:
        keys = ("id", "subject", "owner", "status", "plan", "plan_state", "plan_feedback")
        typer.echo(json.dumps([{k: getattr(t, k) for k in keys} for t in items], indent=2))
        return
    if not items:
        typer.echo("no plans waiting for review" if not all_plans else "no plans")
        return
    for t in items:
        typer.echo(f"#{t.id} {t.subject} ({t.owner}, plan {t.plan_state})")
        for line in (t.plan or "").splitlines():
            typer.echo(f"    {line}")
        if t.plan_feedback:
            typer.echo(f"    feedback: {t.plan_feedback}")


@app.command()
def approve(
    task_id: TaskArg,
    note: Annotated[str | None, typer.Option("--note", help="A note for the agent.")] = None,
    dir: DirOption = ".",
) -> None:
    """Approve the plan waiting on task N; its owner goes ahead."""
    _review(dir, task_id, True, note)


@app.command()
def reject(
    task_id: TaskArg,
    why: Annotated[str, typer.Option("--why", help="Why: this goes back to the agent.")],
    dir: DirOption = ".",
) -> None:
    """Reject the plan waiting on task N; the reason goes back to its owner."""
    _review(dir, task_id, False, why)


def _review(dir, task_id: int, approve: bool, feedback: str | None) -> None:
    with open_teamwork(dir) as tw:
        task = tw.review_plan(task_id, approve, feedback)
    typer.echo(f"plan for task #{task.id} {task.plan_state}; {task.owner} is told")


@app.command()
def merge(
    agent: Annotated[str, typer.Argument(metavar="AGENT", help="Whose branch to merge.")],
    dir: DirOption = ".",
) -> None:
    """Merge AGENT's branch (team/AGENT) into the current branch; a conflict changes nothing."""
    ws = workspace(dir)
    config = ws.load_config()
    if agent not in config.names():
        raise UserError(f"unknown agent {agent!r} (this team has: {', '.join(config.names())})")
    if config.team.isolation != "worktree":
        raise UserError('agents share one folder here (isolation = "shared"): nothing to merge')
    from team.workspace import worktrees

    typer.echo(worktrees.merge(ws, agent))
