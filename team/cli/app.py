"""Entry point: registers every command module and turns user errors into one line."""

from __future__ import annotations

import sys

from team.cli import (  # noqa: F401  (imported for their @app.command registrations)
    audit_cmd,
    demo,
    experiment_cmd,
    import_cmd,
    init_cmd,
    messages,
    run,
    study,
    tasks_cmd,
)
from team.cli.base import app
from team.errors import UserError


def main() -> None:
    try:
        app()
    except UserError as e:
        print(f"team: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
