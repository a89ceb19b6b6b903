"""`team assign`, `team tasks`, `team task ...`: put work on the board and manage it."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from team.cli.base import (
    DirOption,
    FileOption,
    JsonOption,
    app,
    teamwork,
    text_input,
    workspace,
)
from team.core.errors import UserError, os_error_line

if TYPE_CHECKING:
    from team.tasks import Board, Task
    from team.teamwork import Teamwork
    from team.workspace.config import TeamConfig
    from team.workspace.places import Workspace

task_app = typer.Typer(help="Look at one task, or cancel, reassign or reopen it.")
app.add_typer(task_app, name="task")

BlockedByOption = Annotated[
    str | None,
    typer.Option("--blocked-by", metavar="1,2", help="Ids of tasks that must be completed first."),
]


def parse_ids(text: str | None) -> list[int]:
    """`1,2` or `#1, #2` -> [1, 2]; anything else is one clear line."""
    if text is None or not text.strip():
        return []
    ids = []
    for part in text.split(","):
        word = part.strip().lstrip("#")
        if not word.isdigit() or int(word) < 1:
            raise UserError(f"--blocked-by: {part.strip()!r} is not a task id (want e.g. 1,2)")
        ids.append(int(word))
    return ids


@app.command()
def assign(
    agent: Annotated[
        str | None, typer.Argument(metavar="AGENT", help="Who gets it (omit with --any).")
    ] = None,
    text: Annotated[
        str | None, typer.Argument(metavar="TEXT", help="What to do; - reads standard input.")
    ] = None,
    any_agent: Annotated[
        bool, typer.Option("--any", help="Leave the task open: an idle agent claims it.")
    ] = False,
    file: FileOption = None,
    description: Annotated[
        str | None,
        typer.Option("--description", help="Details for whoever does it; - reads stdin."),
    ] = None,
    blocked_by: BlockedByOption = None,
    dir: DirOption = ".",
) -> None:
    """Add a task to the board, for AGENT (delivered to its inbox) or for --any agent."""
    if any_agent:
        if agent is not None and (text is not None or file is not None):
            raise typer.BadParameter("give either AGENT or --any, not both", param_hint="AGENT")
        text = agent if text is None else text
        agent = None
    if text is None and file is None:
        raise typer.BadParameter("missing TEXT (or - for stdin, or --file PATH)", param_hint="TEXT")
    if text == "-" and description == "-":
        raise UserError("only one of TEXT and --description can read standard input")
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
        typer.echo(f"task #{task.id} (open){waits}")
        return
    later = f"; {agent} is told when it unblocks" if waits and not told else ""
    typer.echo(f"task #{task.id} -> {agent}{waits}{later}")


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


@app.command()
def tasks(json_out: JsonOption = False, dir: DirOption = ".") -> None:
    """Show the task board: owner, status, what each task waits on, results."""
    ws = workspace(dir)
    config = ws.load_config()  # a typo'd --dir is an error, not an empty board
    items = team_board(ws, config).list()
    if json_out:
        typer.echo(json.dumps([t.model_dump() for t in items], indent=2))
        return
    if not items:
        typer.echo("no tasks")
        return
    typer.echo(_table(items))


@task_app.command("show")
def show(
    task_id: Annotated[int, typer.Argument(metavar="N", help="The task's id.")],
    full: Annotated[
        bool, typer.Option("--full", help="Long texts whole (they are cut otherwise).")
    ] = False,
    json_out: JsonOption = False,
    dir: DirOption = ".",
) -> None:
    """Everything about one task; a long description is cut unless --full."""
    ws = workspace(dir)
    task = team_board(ws, ws.load_config()).get(task_id)
    if json_out:
        typer.echo(task.model_dump_json(indent=2))
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
    typer.echo("\n".join(f"{k + ':':<12} {v}" for k, v in rows))


SHOWN_CHARS, SHOWN_LINES = 2000, 40
"""Of a long text, what `team task show` prints without --full: a screen, not 2 MB."""


def _cut(text: str, task_id: int) -> str:
    lines = text.splitlines()
    head = "\n".join(lines[:SHOWN_LINES])[:SHOWN_CHARS]
    if len(head) >= len(text.rstrip()):
        return text
    rest = len(text) - len(head)
    return f"{head}\n[... {rest:,} more characters: team task show {task_id} --full]"


@task_app.command("cancel")
def cancel(
    task_id: Annotated[int, typer.Argument(metavar="N", help="The task's id.")],
    dir: DirOption = ".",
) -> None:
    """Cancel a task; its owner is told to drop it (tasks waiting on it stay blocked)."""
    with open_teamwork(dir) as tw:
        task, waiting = tw.cancel(task_id)
    behind = f"; {_ids(waiting)} wait on it and stay blocked" if waiting else ""
    typer.echo(f"task #{task.id} cancelled{behind}")


@task_app.command("reassign")
def reassign(
    task_id: Annotated[int, typer.Argument(metavar="N", help="The task's id.")],
    agent: Annotated[str, typer.Argument(metavar="AGENT", help="The new owner.")],
    dir: DirOption = ".",
) -> None:
    """Give an unfinished task to another agent; it starts over, the old owner is told."""
    with open_teamwork(dir) as tw:
        task, was = tw.reassign(task_id, agent)
    if was == task.owner:
        typer.echo(f"task #{task.id} is already {agent}'s")
        return
    typer.echo(f"task #{task.id} -> {agent} (was {was or 'open'})")


@task_app.command("reopen")
def reopen(
    task_id: Annotated[int, typer.Argument(metavar="N", help="The task's id.")],
    dir: DirOption = ".",
) -> None:
    """Make a completed, failed or cancelled task pending again (its owner is told)."""
    with open_teamwork(dir) as tw:
        task = tw.reopen(task_id)
    typer.echo(f"task #{task.id} reopened: {task.status}, owner {task.owner or 'none (open)'}")


@task_app.command("block")
def block(
    task_id: Annotated[int, typer.Argument(metavar="N", help="The task's id.")],
    by: Annotated[str, typer.Option("--by", metavar="1,2", help="Ids it must wait on.")],
    dir: DirOption = ".",
) -> None:
    """Set what a task waits on (replacing the list; --by '' clears it). Cycles are refused."""
    ids = parse_ids(by)
    with open_teamwork(dir) as tw:
        task = tw.set_blocked_by(task_id, ids)
    typer.echo(f"task #{task.id} is {task.status}, blocked by {_ids(task.blocked_by) or 'nothing'}")


def team_board(ws: Workspace, config: TeamConfig) -> Board:
    """The team's board: files under .team/tasks/, or on Redis (`[team] backend`)."""
    from team.backends.base import open_backend

    return open_backend(ws, config).board()


@contextlib.contextmanager
def open_teamwork(dir: str) -> Iterator[Teamwork]:
    """The workspace's `Teamwork` (its board, its event log), for one change by the user."""
    ws = workspace(dir)
    config = ws.load_config()
    with teamwork(ws, config, team_board(ws, config)) as tw:
        yield tw


def _table(items: list[Task]) -> str:
    rows = [("ID", "STATUS", "OWNER", "BLOCKED_BY", "SUBJECT", "RESULT")]
    for t in items:
        rows.append(
            (
                f"#{t.id}",
                t.status,
                t.owner or "-",
                ",".join(f"#{b}" for b in t.blocked_by) or "-",
                _cell(t.subject, 60),
                _cell(t.result or "-", 60),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
        for r in rows
    )


def _cell(text: str, width: int) -> str:
    text = " ".join(text.split())  # one line per task, however it was typed
    return text if len(text) <= width else text[: width - 1] + "…"


def _ids(ids) -> str:
    return ", ".join(f"#{i}" for i in ids)


def _when(ts: float | None) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"
