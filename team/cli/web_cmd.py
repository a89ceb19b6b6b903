"""`team web`: the team and its compaction, live in a browser."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from team.cli.base import command, dir_option, workspace


@command("watch")
@click.option(
    "--port", type=int, default=8765, show_default=True, metavar="P", help="The port (0: any free)."
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, metavar="H", help="The address to listen on."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
@click.option("--token", metavar="T", help="Ask every request for this token.")
@dir_option
def web(port: int, host: str, open_browser: bool, token: str | None, dir: Path) -> None:
    """Serve the team's pages: agents, board, messages, compaction, live.

    On 127.0.0.1 by default. On any other address every request must carry a token:
    --token T, or one made and kept in .team/web.token (printed once). Runs a running
    team's pages or a finished one's, until Ctrl-C.
    """
    try:
        from team.web.run import serve
    except ImportError as e:
        from team.core.errors import UserError

        raise UserError(f"team web needs the web extra: pip install 'team[web]' ({e})") from None
    serve(
        workspace(dir),
        host,
        port,
        token,
        say=lambda line: print(line, file=sys.stderr, flush=True),
        open_browser=open_browser,
    )
