"""`team assign` and `team tasks`: put work on the board and look at it."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from team.cli.base import DirOption, JsonOption, app, event_log, workspace
from team.errors import UserError, os_error_line
from team.mailbox import post
from team.tasks import Task, TaskBoard


@app.command()
def assign(
    agent: Annotated[
        str | None, typer.Argument(metavar="AGENT", help="Who gets it (omit with --any).")
    ] = None,
    text: Annotated[str | None, typer.Argument(metavar="TEXT", help="What to do.")] = None,
    any_agent: Annotated[
        bool, typer.Option("--any", help="Leave the task open: an idle agent claims it.")
    ] = False,
    dir: DirOption = ".",
) -> None:
    """Add a task to the board, for AGENT (delivered to its inbox) or for --any agent."""
    if any_agent:
        if agent is not None and text is not None:
            raise typer.BadParameter("give either AGENT or --any, not both", param_hint="AGENT")
        text = agent if text is None else text
        agent = None
    if text is None:
        raise typer.BadParameter("missing TEXT (or use --any TEXT)", param_hint="TEXT")
    ws = workspace(dir)
    config = ws.load_config()  # a typo'd --dir must not grow a .team/ somewhere random
    if agent is not None:
        ws.require_agent(config, agent)  # before the task exists: no orphan on a typo
        if agent not in config.names():  # `user` has an inbox, but no agent would do the work
            raise UserError(
                f"tasks are for agents, not {agent!r} (agents: {', '.join(config.names())})"
            )
    board = TaskBoard(ws.tasks_dir)
    try:
        task = board.create(text, owner=agent, created_by="user")
    except OSError as e:
        raise UserError(f"task not added: {os_error_line(e)}") from None
    if agent is None:
        typer.echo(f"task #{task.id} (open)")
        return
    try:
        with event_log(ws) as sink:
            post.send(
                ws, config, agent, text, sender="user", type="task", task_id=task.id, sink=sink
            )
    except OSError as e:
        # all or nothing: a task its owner never hears of would stay open for ever
        try:
            board.discard(task.id)
        except OSError:
            raise UserError(
                f"task #{task.id} was added for {agent}, but delivering it failed: "
                f"{os_error_line(e)}"
            ) from None
        raise UserError(f"task not added: {os_error_line(e)}") from None
    typer.echo(f"task #{task.id} -> {agent}")


@app.command()
def tasks(json_out: JsonOption = False, dir: DirOption = ".") -> None:
    """Show the task board."""
    ws = workspace(dir)
    ws.load_config()  # a typo'd --dir is an error, not an empty board
    items = TaskBoard(ws.tasks_dir).list()
    if json_out:
        typer.echo(json.dumps([t.model_dump() for t in items], indent=2))
        return
    if not items:
        typer.echo("no tasks")
        return
    typer.echo(_table(items))


def _table(items: list[Task]) -> str:
    rows = [("ID", "STATUS", "OWNER", "SUBJECT")]
    for t in items:
        subject = " ".join(t.subject.split())  # one line per task, however it was typed
        if len(subject) > 72:
            subject = subject[:71] + "…"
        rows.append((f"#{t.id}", t.status, t.owner or "-", subject))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r[:3], widths, strict=True)) + "  " + r[3]
        for r in rows
    )
