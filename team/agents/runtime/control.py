"""A running team seen from another process: `team status` and `team down`.

On files the team's process writes `.team/status.json` and holds `.team/team.lock`; on Redis
every node publishes its agents' status and holds their leases (team.backends.node).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from team.agents.runtime.lock import TeamLock
from team.backends.base import RedisBackend, open_backend
from team.core.errors import UserError
from team.mailbox.maildir import MaildirMailbox
from team.workspace.places import Workspace

if TYPE_CHECKING:  # pydantic: `team status` takes the team from a ConfigView
    from team.workspace.config import TeamConfig
    from team.workspace.snapshot import ConfigView


def team_status(ws: Workspace, config: TeamConfig | ConfigView) -> dict:
    """Every agent of team.toml: state, task, context, pending mail, spend and budget.

    An agent no running team reports is `down` (`down (budget)` once its budget is spent).
    """
    backend = open_backend(ws, config)
    if isinstance(backend, RedisBackend):
        from team.backends.node import team_status as redis_status  # imports redis

        return {"team": config.team.name, "backend": backend.spec, **redis_status(backend, config)}
    running = TeamLock(ws.lock_path).is_held()
    snapshot: dict = {}
    if ws.status_path.exists():
        try:
            snapshot = json.loads(ws.status_path.read_text())
        except (OSError, ValueError):
            snapshot = {}
    agents = {}
    for name in config.names():
        st = dict(snapshot.get("agents", {}).get(name, {}))
        if not running:
            was = str(st.get("state", ""))
            # a spent budget outlasts the run: say so until the budget is raised
            st["state"] = "down (budget)" if was.startswith("budget") else "down"
            st["task"] = None
            st["current"] = None
        # the running team lists every agent it runs, "starting" ones too: one it does not
        # list (added to team.toml but refused, or left to another `--agents` process) is
        # not going to start by itself
        st.setdefault("state", "not running")
        st["pending"] = MaildirMailbox(ws.inbox_dir(name)).pending_count()
        if config.team.isolation == "worktree":
            from team.workspace import worktrees

            wt = worktrees.status(ws, name)
            st["branch"] = wt.branch if wt else None
            st["changes"] = wt.changes if wt else 0
            st["ahead"] = wt.ahead if wt else 0
        st["budget_usd"] = config.agent(name).budget_usd  # as team.toml says now
        agents[name] = st
    out = {"team": config.team.name, "running": running, "agents": agents}
    if config.mcp_servers:  # as the running team last said, or down
        seen = snapshot.get("mcp", {}) if running else {}
        out["mcp"] = {
            name: seen.get(name) or {"state": "disabled" if s.disabled else "down"}
            for name, s in config.mcp_servers.items()
        }
    if running and "events" in snapshot:  # events.db failed during this run
        out["events"] = snapshot["events"]
    if "team_spend" in snapshot:
        out["team_spend"] = {**snapshot["team_spend"], "budget_usd": config.team.budget_usd}
    return out


def stop_team(
    ws: Workspace, config: TeamConfig, wait: float, say: Callable[[str], None] = print
) -> None:
    """Ask every agent to stop after its step, and wait until the team has stopped.

    Raises:
        UserError: no team runs here, or it did not stop within `wait` seconds.
    """
    backend = open_backend(ws, config)
    if isinstance(backend, RedisBackend):
        from team.backends.node import ask_team_to_stop, wait_team_stopped

        asked = ask_team_to_stop(ws, backend, config)
        say(f"asked {len(asked)} agents to stop")
        wait_team_stopped(backend, config, asked, wait)
        return
    from team.backends.post import request_shutdown

    lock = TeamLock(ws.lock_path)
    if not lock.is_held():
        raise UserError(f"no team is running in {ws.root}")
    for name in config.names():
        request_shutdown(ws, name)
    say(f"asked {len(config.agents)} agents to stop")
    deadline = time.monotonic() + wait
    while lock.is_held():
        if time.monotonic() > deadline:
            raise UserError(f"the team did not stop within {wait:g}s (it may be mid-call)")
        time.sleep(0.2)
