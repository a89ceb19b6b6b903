"""Entry point: registers every command module and turns user errors into one line."""

from __future__ import annotations

import os
import sqlite3
import sys

from team.cli import (  # noqa: F401  (imported for their @app.command registrations)
    audit_cmd,
    coord_cmd,
    demo,
    experiment_cmd,
    import_cmd,
    init_cmd,
    log_cmd,
    mcp_cmd,
    messages,
    run,
    study,
    tasks_cmd,
)
from team.cli.base import app
from team.core.errors import UserError, os_error_line


def main() -> None:
    try:
        app()
    except UserError as e:
        print(f"team: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:  # `team ... | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as e:  # disk full, read-only workspace, permission denied: not a bug
        print(f"team: error: {os_error_line(e)}", file=sys.stderr)
        sys.exit(1)
    except sqlite3.OperationalError as e:  # the event database: full, read-only, locked
        print(f"team: error: .team/events.db: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
