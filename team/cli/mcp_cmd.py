"""`team mcp`: serve the team in this workspace to an MCP client (Claude Code, an IDE)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from team.cli.base import DirOption, app, workspace


@app.command("mcp")
def mcp_cmd(
    http: Annotated[
        bool, typer.Option("--http", help="Streamable HTTP on 127.0.0.1 instead of stdio.")
    ] = False,
    port: Annotated[int, typer.Option("--port", help="The HTTP port (0: any free one).")] = 0,
    dir: DirOption = ".",
) -> None:
    """Serve the team as an MCP server: assign, send, broadcast, tasks, task, status,
    inbox, log, approve, reject, stats; each agent's transcripts as resources.

    Add it to Claude Code with: claude mcp add team -- team mcp --dir /path/to/workspace
    """
    from team.serve.run import serve_http, serve_stdio

    ws = workspace(dir)
    if http:
        serve_http(ws, port, say=lambda line: print(line, file=sys.stderr, flush=True))
    else:
        serve_stdio(ws)  # stdout is the protocol: nothing else may print there
