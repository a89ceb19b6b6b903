"""The team's MCP servers, as a running team (or `team check`) starts them.

`open_pool` makes the pool only when team.toml (or `.mcp.json`) names a server, so a
team without servers never imports the SDK. `launch` is the one place a stdio server
meets the sandbox: under `sandbox = "bwrap"` (or "auto" where bubblewrap works) it runs
as a command of the team's sandbox would, its workspace writable but `.team/` and
`.transcripts/`, a private /tmp, the secrets hidden, no network unless `network = true`,
and the same [limits] as one command; only `sandbox = "off"` in its own team.toml table
lets it out.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from team.core.errors import UserError
from team.core.events import MemorySink
from team.mcp.adapter import allowed
from team.mcp.config import McpServerConfig
from team.mcp.session import Plan
from team.sandbox import bwrap, rules
from team.sandbox import limits as sandbox_limits
from team.workspace.config import TeamConfig
from team.workspace.places import Workspace

if TYPE_CHECKING:
    from team.core.events import EventSink
    from team.mcp.pool import McpPool


def open_pool(ws: Workspace, config: TeamConfig, sink: EventSink | None = None) -> McpPool | None:
    """The team's servers in a pool (not started yet), or None when it has none."""
    servers = {n: s for n, s in config.mcp_servers.items() if not s.disabled}
    if not servers:
        return None
    from team.mcp.pool import McpPool  # the pool itself imports the SDK only once started

    def start(name: str, server: McpServerConfig) -> contextlib.AbstractContextManager[Plan]:
        return launch(ws, config, server)

    return McpPool(servers, launch=start, environ=dict(os.environ), logs=ws.mcp_logs, sink=sink)


@contextlib.contextmanager
def launch(ws: Workspace, config: TeamConfig, server: McpServerConfig) -> Iterator[Plan]:
    """How stdio `server` is started: in the team's sandbox unless it says `sandbox = "off"`
    (a relative `cwd` is taken from the workspace, which is also the default).

    Raises:
        SandboxError: it must run under bubblewrap ("bwrap"), which cannot work here.
    """
    cwd = str(ws.root / server.cwd) if server.cwd else str(ws.root)
    command = server.command or ""
    # found here, as the server's own PATH says: inside the sandbox a missing program
    # would only be a shell's "not found" on a closed connection
    exe = shutil.which(command, path=server.env.get("PATH", os.environ.get("PATH")))
    if exe is None:
        raise UserError(f"{command}: command not found")
    argv = [exe, *server.args]
    setting = server.sandbox or config.team.sandbox
    avail = bwrap.detect() if setting != "off" else None
    if avail is None or (setting == "auto" and not avail.usable):
        yield Plan(argv[0], argv[1:], cwd, "off")
        return
    if not avail.usable:
        raise bwrap.SandboxError(f'sandbox = "bwrap" but {avail.problem}')
    root = ws.root
    git = rules.git_paths(root)  # the rules and git's configuration read-only, as for bash
    protected = (*ws.protected, *rules.rule_files(ws, config), *git.readonly)
    box = bwrap.Sandbox(
        bwrap.Scope(
            root,
            protected,
            bwrap.deny_paths(config, root),
            None,
            git.writable,
            shown=_shown(argv),  # under /tmp, the private /tmp would hide them
        ),
        bwrap=avail.bwrap,
        network=config.team.network if server.network is None else server.network,
        limits=config.limits,
        cgroup_base=sandbox_limits.pids_cgroup_base() if os.geteuid() == 0 else None,
    )
    with box.argv(f"cd {shlex.quote(cwd)} && exec {shlex.join(argv)}") as full:
        yield Plan(full[0], full[1:], cwd, "bwrap")


def _shown(argv: list[str]) -> tuple[Path, ...]:
    """What a server needs to see: its program's home, and the folders of the files its
    arguments name (a script, a config), whose place the sandbox's /tmp may hide."""
    named = [Path(a) for a in argv[1:] if a.startswith("/")]
    return (bwrap.program_home(argv[0]), *(p.parent for p in named if p.is_file()))


def status_lines(servers: dict[str, dict]) -> list[str]:
    """One line per server for `team status`: its state, its tools, why it is down."""
    out = []
    for name, st in servers.items():
        state = st.get("state", "down")
        line = f"MCP server {name}: {state}"
        if state in ("up", "checking"):
            box = f", sandbox {st['sandbox']}" if st.get("sandbox") else ""
            line += f" ({st.get('tools', 0)} tools{box})"
        if st.get("restarts"):
            line += f", restarted {st['restarts']}x"
        if st.get("last_error") and state not in ("up", "checking"):
            line += f": {st['last_error']}"
        elif st.get("last_error"):
            line += f" (last error: {st['last_error']})"
        out.append(line)
    return out


def check_lines(ws: Workspace, config: TeamConfig) -> list[str]:
    """What `team check` says of the servers: each one's tools, one line for each that
    does not start, and one for each tool the API would refuse (it is not offered)."""
    pool = open_pool(ws, config, sink=MemorySink())  # what goes wrong is printed below
    disabled = [n for n, s in config.mcp_servers.items() if s.disabled]
    lines = [f"MCP server {n}: disabled" for n in disabled]
    if pool is None:
        return lines
    with pool:
        pool.wait_started()
        status = pool.status()
        for name, session in pool.sessions.items():
            st = status[name]
            if st["state"] not in ("up", "checking"):
                lines.append(f"MCP server {name}: does not start: {st['last_error']}")
                continue
            names = ", ".join(t.name for t in session.tools) or "none"
            box = f", sandbox {st['sandbox']}" if st.get("sandbox") else ""
            lines.append(
                f"MCP server {name} ({st['transport']}{box}): {len(session.tools)} tools: {names}"
            )
            for tool, why in st["refused"].items():
                lines.append(f"  tool {tool!r} is not offered: {why}")
        tools = pool.tools(wait=False)
    for a in config.agents:
        if a.mcp is not None:
            mine = [t.model_name for t in allowed(a.mcp, tools)]
            lines.append(
                f"  {a.name} sees {len(mine)} of them" + (f": {', '.join(mine)}" if mine else "")
            )
    return lines
