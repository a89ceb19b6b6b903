"""`team assign`, `team tasks`, `team task ...`: put work on the board and manage it."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from team.cli.base import (
    command,
    dir_option,
    file_option,
    full_option,
    group,
    json_option,
    subcommand,
    teamwork,
    terminal_width,
    text_input,
    workspace,
)
from team.core.errors import UserError, os_error_line

if TYPE_CHECKING:
    from team.tasks import Board, Task
    from team.teamwork import Teamwork
    from team.workspace.config import TeamConfig
    from team.workspace.places import Workspace


task_id_argument = click.argument("task_id", metavar="N", type=click.IntRange(min=1))


def parse_ids(text: str | None, option: str = "--blocked-by") -> list[int]:
    """`1,2` or `#1, #2` -> [1, 2]; anything else is one clear line."""
    if text is None or not text.strip():
        return []
    ids = []
    for part in text.split(","):
        word = part.strip().lstrip("#")
        if not word.isdigit() or int(word) < 1:
            raise UserError(f"{option}: {part.strip()!r} is not a task id (want e.g. 1,2)")
        ids.append(int(word))
    return ids


@command("work")
@click.argument("agent", required=False)
@click.argument("text", required=False)
@click.option("--any", "any_agent", is_flag=True, help="Leave it open: an idle agent claims it.")
@file_option
@click.option("--description", metavar="TEXT", help="Details for whoever does it; - reads stdin.")
@click.option("--blocked-by", metavar="1,2", help="Ids of tasks that must be completed first.")
@dir_option
def assign(
    agent: str | None,
    text: str | None,
    any_agent: bool,
    file: Path | None,
    description: str | None,
    blocked_by: str | None,
    dir: Path,
) -> None:
    """Add a task to the board, for AGENT or for --any agent.

    AGENT gets it in its inbox; an open (--any) task is claimed by an idle agent.

    TEXT - reads standard input, --file PATH a file; a long text's first line is the
    subject, the rest its description.
    """
    if any_agent:
        if agent is not None and (text is not None or file is not None):
            raise click.UsageError("give either AGENT or --any, not both")
        text = agent if text is None else text
        agent = None
    if text == "-" and description == "-":
        raise click.UsageError("only one of TEXT and --description can read standard input")
    text, long_text = task_subject(text_input(text, file))
    ids = parse_ids(blocked_by)
    ws = workspace(dir)
    config = ws.load_config()  # a typo'd --dir must not grow a .team/ somewhere random
    from team.teamwork import TaskNotDelivered, require_worker

    if agent is not None:
        require_worker(config, agent)  # before the task exists: no orphan on a typo
    if description == "-":
        description = sys.stdin.read()
    board = team_board(ws, config)

    try:
        with teamwork(ws, config, board) as tw:
            task, told = tw.assign(
                text, agent, description=description or long_text, blocked_by=ids
            )
    except TaskNotDelivered as e:
        raise UserError(
            f"task #{e.task.id} was added for {agent}, but delivering it failed: "
            f"{os_error_line(e.cause)}"
        ) from None
    except OSError as e:
        raise UserError(f"task not added: {os_error_line(e)}") from None
    waits = f" (blocked by {_ids(task.blocked_by)})" if task.status == "blocked" else ""
    if agent is None:
        click.echo(f"task #{task.id} (open){waits}")
        return
    later = f"; {agent} is told when it unblocks" if waits and not told else ""
    click.echo(f"task #{task.id} -> {agent}{waits}{later}")


SUBJECT_CHARS = 200


def task_subject(text: str) -> tuple[str, str]:
    """A long or many-line task text: its first line is the subject, the rest the
    description (a board listing or an identity block must not carry 200 KB). A first
    line too long to be a subject is cut there and kept whole in the description."""
    text = text.strip()
    first, _, rest = text.partition("\n")
    first = first.strip()
    if len(first) > SUBJECT_CHARS:
        return first[: SUBJECT_CHARS - 1] + "…", text
    return first, rest.strip()


@command("work")
@json_option
@dir_option
def tasks(json_out: bool, dir: Path) -> None:
    """Show the task board: status, owner, blockers, results."""
    ws = workspace(dir)
    config = ws.load_config()  # a typo'd --dir is an error, not an empty board
    items = team_board(ws, config).list()
    if json_out:
        click.echo(json.dumps([t.model_dump() for t in items], indent=2))
        return
    if not items:
        click.echo("no tasks")
        return
    click.echo("\n".join(_table(items, terminal_width())))


@group("work")
def task() -> None:
    """Look at one task, or cancel, reassign, reopen or block it."""


@subcommand(task, "show")
@task_id_argument
@full_option
@json_option
@dir_option
def show(task_id: int, full: bool, json_out: bool, dir: Path) -> None:
    """Everything about one task; a long description is cut unless --full."""
    ws = workspace(dir)
    task = team_board(ws, ws.load_config()).get(task_id)
    if json_out:
        click.echo(task.model_dump_json(indent=2))
        return

    def cut(text: str) -> str:
        return text if full else _cut(text, task.id)

    rows = [
        ("task", f"#{task.id} {task.subject}"),
        ("status", task.status),
        ("owner", task.owner or "-"),
        ("blocked by", _ids(task.blocked_by) or "-"),
        ("created", f"{_when(task.created_at)} by {task.created_by}"),
        ("completed", _when(task.completed_at) if task.completed_at else "-"),
        ("result", cut(task.result or "-")),
    ]
    if task.plan_state:
        rows.append(("plan", cut(f"{task.plan_state}: {task.plan}")))
        if task.plan_feedback:
            rows.append(("feedback", cut(task.plan_feedback)))
    if task.description:
        rows.append(("description", cut(task.description)))
    click.echo("\n".join(f"{k + ':':<12} {v}" for k, v in rows))


SHOWN_CHARS, SHOWN_LINES = 2000, 40
"""Of a long text, what `team task show` prints without --full: a screen, not 2 MB."""


def _cut(text: str, task_id: int) -> str:
    lines = text.splitlines()
    head = "\n".join(lines[:SHOWN_LINES])[:SHOWN_CHARS]
    if len(head) >= len(text.rstrip()):
        return text
    rest = len(text) - len(head)
    return f"{head}\n[... {rest:,} more characters: team task show {task_id} --full]"


@subcommand(task, "cancel")
@task_id_argument
@dir_option
def cancel(task_id: int, dir: Path) -> None:
    """Cancel a task; its owner is told to drop it (tasks waiting on it stay blocked)."""
    with open_teamwork(dir) as tw:
        task, waiting = tw.cancel(task_id)
    behind = f"; {_ids(waiting)} wait on it and stay blocked" if waiting else ""
    click.echo(f"task #{task.id} cancelled{behind}")


@subcommand(task, "reassign")
@task_id_argument
@click.argument("agent")
@dir_option
def reassign(task_id: int, agent: str, dir: Path) -> None:
    """Give an unfinished task to another agent; it starts over, the old owner is told."""
    with open_teamwork(dir) as tw:
        task, was = tw.reassign(task_id, agent)
    if was == task.owner:
        click.echo(f"task #{task.id} is already {agent}'s")
        return
    click.echo(f"task #{task.id} -> {agent} (was {was or 'open'})")


@subcommand(task, "reopen")
@task_id_argument
@dir_option
def reopen(task_id: int, dir: Path) -> None:
    """Make a completed, failed or cancelled task pending again (its owner is told)."""
    with open_teamwork(dir) as tw:
        task = tw.reopen(task_id)
    click.echo(f"task #{task.id} reopened: {task.status}, owner {task.owner or 'none (open)'}")


@subcommand(task, "block")
@task_id_argument
@click.option("--by", required=True, metavar="1,2", help="Ids it must wait on ('' for none).")
@dir_option
def block(task_id: int, by: str, dir: Path) -> None:
    """Set what a task waits on (replacing the list; --by '' clears it). Cycles are refused."""
    ids = parse_ids(by, "--by")
    with open_teamwork(dir) as tw:
        task = tw.set_blocked_by(task_id, ids)
    click.echo(f"task #{task.id} is {task.status}, blocked by {_ids(task.blocked_by) or 'nothing'}")


def team_board(ws: Workspace, config: TeamConfig) -> Board:
    """The team's board: files under .team/tasks/, or on Redis (`[team] backend`)."""
    from team.backends.base import open_backend

    return open_backend(ws, config).board()


@contextlib.contextmanager
def open_teamwork(dir: Path) -> Iterator[Teamwork]:
    """The workspace's `Teamwork` (its board, its event log), for one change by the user."""
    ws = workspace(dir)
    config = ws.load_config()
    with teamwork(ws, config, team_board(ws, config)) as tw:
        yield tw


def _table(items: list[Task], width: int) -> list[str]:
    """One line a task; the result goes first when space runs out, then who waits on
    what; the subject is cut, never the id."""
    from team.agents.console.columns import REQUIRED, Column, fit

    columns = (
        Column("id", keep=REQUIRED, right=True),
        Column("status", keep=REQUIRED),
        Column("owner", keep=800),
        Column("blocked_by", keep=300),
        Column("subject", keep=900, flex=True, least=20),
        Column("result", keep=100, flex=True, least=16),
    )
    rows = [
        (
            f"#{t.id}",
            t.status,
            t.owner or "-",
            ",".join(f"#{b}" for b in t.blocked_by) or "-",
            _cell(t.subject, 60),
            _cell(t.result or "-", 60),
        )
        for t in items
    ]
    table = fit(columns, rows, width)
    hint = (
        [f"(not shown: {', '.join(table.dropped)}; see team tasks --json)"] if table.dropped else []
    )
    return table.lines + hint


def _cell(text: str, width: int) -> str:
    from team.agents.console.columns import cut, one_line

    return cut(one_line(text), width)


def _ids(ids) -> str:
    return ", ".join(f"#{i}" for i in ids)


def _when(ts: float | None) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"
