"""`team demo`: an offline team on the sim model that works through a few tasks and stops."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from team.cli.base import command, event_log
from team.core.errors import UserError

if TYPE_CHECKING:
    from team.workspace.places import Workspace

AGENTS = [("alice", "coder"), ("bob", "tester"), ("carol", "reviewer")]
LEAD = "alice"
GOAL = "Add bulk discounts to src/pricing.py"
"""Given to the lead, which splits it into tasks that wait on each other."""
TASKS = [
    ("bob", "Check that tests/test_inventory.py covers every function"),
    ("carol", "Read docs/notes.md and summarise the open questions"),
    (None, "Count the lines of every Python file under src/"),
    (None, "Find every TODO in the project"),
]


def seed_project(root: Path) -> None:
    """A small project for the team to work on: real files the sim reads and greps."""
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "docs").mkdir()
    funcs = "\n\n".join(
        f'def {name}(items):\n    """{doc}"""\n    return [i for i in items if i]  # TODO: {doc}'
        if i % 3 == 0
        else f'def {name}(items):\n    """{doc}"""\n    return sorted(items)'
        for i, (name, doc) in enumerate(
            (f"{verb}_{noun}", f"{verb.title()} the {noun} of the inventory.")
            for verb in ("count", "list", "price", "restock", "audit", "sort")
            for noun in ("items", "bins", "orders", "suppliers", "returns")
        )
    )
    (root / "src" / "inventory.py").write_text('"""Inventory helpers."""\n\n' + funcs + "\n")
    (root / "src" / "pricing.py").write_text(
        '"""Pricing."""\n\n\ndef price(qty, unit):\n    # TODO: bulk discounts\n'
        "    return qty * unit\n"
        + "".join(f"\n\ndef tier_{i}(x):\n    return x * {i}\n" for i in range(40))
    )
    (root / "tests" / "test_inventory.py").write_text(
        "from src.inventory import count_items, list_bins\n\n\n"
        "def test_count():\n    assert count_items([1, 0]) == [1]\n\n\n"
        "def test_list():\n    assert list_bins([2, 1]) == [1, 2]\n"
    )
    (root / "docs" / "notes.md").write_text(
        "# Notes\n\n"
        + "".join(
            f"- Open question {i}: should `{n}` handle empty input? (see src/inventory.py)\n"
            for i, n in enumerate(("count_items", "price", "restock_bins", "audit_orders"), 1)
        )
        + "\nLong background section follows.\n"
        + ("The warehouse team reported inconsistent counts after restocking. " * 60)
        + "\n"
    )


def prepare_demo(root: Path, threshold: int = 6000) -> Workspace:
    """A fresh demo workspace: team.toml, the seed project, and the tasks on the board."""
    from team.backends.post import send
    from team.tasks import TaskBoard
    from team.workspace.config import render_config
    from team.workspace.places import Workspace

    ws = Workspace.at(root)
    ws.root.mkdir(parents=True, exist_ok=True)
    text = render_config("demo", "sim", AGENTS, threshold=threshold)
    ws.config_path.write_text(text.replace("[team]\n", f'[team]\nlead = "{LEAD}"\n', 1))
    ws.team_dir.mkdir(parents=True, exist_ok=True)
    ws.demo_mark.write_text("made by `team demo`: it may delete this folder\n")
    seed_project(ws.root)
    config = ws.load_config()
    board = TaskBoard(ws.tasks_dir)
    with event_log(ws) as sink:
        for owner, subject in TASKS:
            task = board.create(subject, owner=owner)
            if owner:
                send(ws, config, owner, subject, type="task", task_id=task.id, sink=sink)
        send(ws, config, LEAD, GOAL, type="goal", sink=sink)
    return ws


@command("run")
@click.option(
    "--dir",
    "-C",
    "dir",
    type=click.Path(path_type=Path),
    default="demo",
    show_default=True,
    metavar="DIR",
    help="Where to create the demo team.",
)
@click.option(
    "--no-fresh",
    "fresh",
    is_flag=True,
    flag_value=False,
    default=True,
    help="Keep an earlier demo folder (by default it is deleted first).",
)
@click.option(
    "--threshold",
    type=int,
    default=6000,
    show_default=True,
    metavar="TOKENS",
    help="Auto-compaction threshold.",
)
@click.option(
    "--latency",
    type=float,
    default=0.3,
    show_default=True,
    metavar="S",
    help="Seconds each simulated model call takes.",
)
def demo(dir: Path, fresh: bool, threshold: int, latency: float) -> None:
    """Run an offline demo team through a few tasks, and report.

    The team runs on the sim model in DIR (default ./demo); then `team stats -C demo`.
    """
    from team.agents.runtime.launch import RunOptions, foreground, run_error
    from team.agents.runtime.lock import TeamLock
    from team.workspace.places import Workspace

    root = dir.resolve()
    if root.exists() and any(root.iterdir()):
        ws = Workspace.at(root)
        if not ws.demo_mark.exists():
            # only ever delete a folder `team demo` made itself: never a user's project
            raise UserError(f"{root} is not empty and is not a demo folder; pick another --dir")
        if not fresh:
            raise UserError(f"{root} holds an earlier demo (drop --no-fresh to start over)")
        if TeamLock(ws.lock_path).is_held():
            raise UserError(f"a team is running in {root}; stop it with `team down` first")
        import shutil

        shutil.rmtree(root)
    ws = prepare_demo(root, threshold)
    click.echo(
        f"demo workspace: {ws.root} ({len(TASKS)} tasks on the board; the lead, {LEAD}, "
        f"splits the goal {GOAL!r} into more)"
    )
    opts = RunOptions(until_idle=True, model="sim", timeout=600, sim_latency=latency)
    result = foreground(ws, opts)
    click.echo(result.summary)
    if error := run_error(result, opts.timeout):
        raise UserError(error)
    click.echo(
        f"\nLook closer: team stats -C {dir}   team report -C {dir}   team transcripts -C {dir}"
    )
