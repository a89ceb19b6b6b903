"""`team mcp`: serve the team in this workspace to an MCP client (Claude Code, an IDE)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from team.cli.base import command, dir_option, workspace


@command("run")
@click.option("--http", is_flag=True, help="Streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option("--port", type=int, default=0, help="The HTTP port (0: any free one).")
@dir_option
def mcp(http: bool, port: int, dir: Path) -> None:
    """Serve the team as an MCP server.

    Its tools: assign, send, broadcast, tasks, task, status, inbox, log, approve, reject,
    stats; each agent's transcripts are resources. Add it to Claude Code with:
    claude mcp add team -- team mcp --dir /path/to/workspace
    """
    from team.serve.run import serve_http, serve_stdio

    ws = workspace(dir)
    if http:
        serve_http(ws, port, say=lambda line: print(line, file=sys.stderr, flush=True))
    else:
        serve_stdio(ws)  # stdout is the protocol: nothing else may print there
