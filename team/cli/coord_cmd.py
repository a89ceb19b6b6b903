"""`team goal`, `team plans`, `team approve`, `team reject`, `team merge`: steering the team."""

from __future__ import annotations

import json
from pathlib import Path

import click

from team.cli.base import command, dir_option, json_option, workspace
from team.cli.tasks_cmd import open_teamwork, task_id_argument, team_board
from team.core.errors import UserError


@command("work")
@click.argument("text")
@dir_option
def goal(text: str, dir: Path) -> None:
    """Give the team a goal: its lead splits it into tasks."""
    with open_teamwork(dir) as tw:
        lead = tw.goal(text)
    click.echo(f"goal sent to {lead} (the lead)")


@command("work")
@click.option("--all", "all_plans", is_flag=True, help="Reviewed plans too.")
@json_option
@dir_option
def plans(all_plans: bool, json_out: bool, dir: Path) -> None:
    """Show the plans waiting for review (team approve / reject)."""
    ws = workspace(dir)
    config = ws.load_config()
    items = [
        t
        for t in team_board(ws, config).list()
        if t.plan_state == "submitted" or (all_plans and t.plan_state)
    ]
    if json_out:
        keys = ("id", "subject", "owner", "status", "plan", "plan_state", "plan_feedback")
        click.echo(json.dumps([{k: getattr(t, k) for k in keys} for t in items], indent=2))
        return
    if not items:
        click.echo("no plans waiting for review" if not all_plans else "no plans")
        return
    for t in items:
        click.echo(f"#{t.id} {t.subject} ({t.owner}, plan {t.plan_state})")
        for line in (t.plan or "").splitlines():
            click.echo(f"    {line}")
        if t.plan_feedback:
            click.echo(f"    feedback: {t.plan_feedback}")


@command("work")
@task_id_argument
@click.option("--note", metavar="TEXT", help="A note for the agent.")
@dir_option
def approve(task_id: int, note: str | None, dir: Path) -> None:
    """Approve the plan waiting on task N; its owner goes ahead."""
    _review(dir, task_id, True, note)


@command("work")
@task_id_argument
@click.option("--why", required=True, metavar="TEXT", help="Why: this goes back to the agent.")
@dir_option
def reject(task_id: int, why: str, dir: Path) -> None:
    """Reject the plan of task N; the reason goes back to its owner."""
    _review(dir, task_id, False, why)


def _review(dir, task_id: int, approve: bool, feedback: str | None) -> None:
    with open_teamwork(dir) as tw:
        task = tw.review_plan(task_id, approve, feedback)
    click.echo(f"plan for task #{task.id} {task.plan_state}; {task.owner} is told")


@command("work")
@click.argument("agent")
@dir_option
def merge(agent: str, dir: Path) -> None:
    """Merge AGENT's branch (team/AGENT) into the current branch.

    A conflict aborts the merge and changes nothing.
    """
    ws = workspace(dir)
    config = ws.load_config()
    if agent not in config.names():
        raise UserError(f"unknown agent {agent!r} (this team has: {', '.join(config.names())})")
    if config.team.isolation != "worktree":
        raise UserError('agents share one folder here (isolation = "shared"): nothing to merge')
    from team.workspace import worktrees

    click.echo(worktrees.merge(ws, agent))


# In the run group, after demo: declared here, where the other approvals are.
@command("run", "approve-config")
@dir_option
def approve_config(dir: Path) -> None:
    """Let the running team take team.toml as it is now, even an agent it held back for
    looser confinement (sandbox = "off", network = true)."""
    from team.agents.runtime.reload import approve

    print(approve(workspace(dir)))
