"""Entry point: registers every command module and turns user errors into one line.

A new command module goes in `COMMANDS`; its commands say their group of `team --help`
themselves (team/cli/base.py, `command`).
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from team.cli.base import app
from team.core.errors import UserError, os_error_line

COMMANDS = (
    "init_cmd",  # run: init, check
    "run",  # run: up, down; watch: status
    "demo",
    "tasks_cmd",  # work: assign, tasks, task
    "messages",  # work: send, broadcast; watch: inbox
    "coord_cmd",  # work: goal, plans, approve, reject, merge; run: approve-config
    "log_cmd",  # watch
    "audit_cmd",
    "study",  # study: stats, report, transcripts
    "experiment_cmd",
    "import_cmd",
    "mcp_cmd",  # run: mcp
    "web_cmd",  # watch: web
)
"""The command modules, in the order `team --help` lists their commands within a group
(names sorted by an import sorter would lose it)."""

FAST = {"send": "messages", "broadcast": "messages", "inbox": "messages", "status": "run"}
"""Commands run often enough, and from scripts, that `team` loads only the module that
declares them (importing all of `COMMANDS` costs about half of what click itself does;
issue 27, bench/README.md). Their own usage and `--help` need no other module."""


def load_commands(argv: list[str]) -> None:
    """Import the command modules: every one (in `COMMANDS` order, for `team --help`, a
    typo's "did you mean", and everything else), or only the one that declares the
    `FAST` command `argv` names."""
    first = FAST.get(argv[1]) if len(argv) > 1 else None
    for module in [first] if first else COMMANDS:
        importlib.import_module(f"team.cli.{module}")


def main() -> None:
    load_commands(sys.argv)
    try:
        code = app.main(prog_name="team", standalone_mode=False)
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.ClickException as e:  # a usage error: exit 2, with the usage line
        e.show()
        code = e.exit_code
    except (click.Abort, KeyboardInterrupt):
        code = 130
    except UserError as e:
        print(f"team: error: {e}", file=sys.stderr)
        code = 1
    except BrokenPipeError:  # `team ... | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except OSError as e:  # disk full, read-only workspace, permission denied: not a bug
        print(f"team: error: {os_error_line(e)}", file=sys.stderr)
        code = 1
    except Exception as e:
        # the event database: full, read-only, locked (sqlite3 is not imported at load:
        # a command that never imported it cannot have raised its error)
        sqlite3 = sys.modules.get("sqlite3")
        if sqlite3 is None or not isinstance(e, sqlite3.OperationalError):
            raise
        print(f"team: error: .team/events.db: {e}", file=sys.stderr)
        code = 1
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
