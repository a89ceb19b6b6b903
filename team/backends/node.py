"""One `team up` on the Redis backend: a node running some of the team's agents.

A node holds a lease for each agent it runs (`team.backends.redis_lease`), publishes
its agents' status to Redis every second, and lets go of both when it stops. Any
machine can then read the whole team from Redis: who runs where, in what state, with how
much mail waiting (`team status`), and ask every running agent to stop (`team down`).

Keys: `team:<team>:status:<agent>` holds the node's last snapshot of that agent and
expires shortly after the node stops publishing, like the lease.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

from team.backends.base import RedisBackend
from team.backends.outbox import Outbox
from team.backends.redis_lease import LeaseHeld, Leases
from team.backends.redis_link import RedisLink, RedisUnavailable
from team.core.errors import UserError
from team.core.events import EventSink
from team.workspace.config import TeamConfig
from team.workspace.places import Workspace

log = logging.getLogger(__name__)


WAIT_STEP_S = 0.5
"""How often a node waiting for a lease tries again (the countdown's step)."""


def waiting_line(agent: str, holder: dict, ttl_ms: int | None) -> str:
    """`waiting for bob: ... lapses in 12s`, the countdown `team up --agents` shows."""
    where = f"node {holder.get('node', '?')!r} (pid {holder.get('pid', '?')})"
    left = f"its lease lapses in {max(0, ttl_ms or 0) / 1000:.0f}s" if ttl_ms else "waiting"
    return (
        f"waiting for {agent!r}: it runs on {where}; {left} if that node is gone "
        "(--no-wait: exit instead)"
    )


class Node:
    """The agents one node runs, their leases and their published status.

    Args:
        backend: the team's Redis (a waiting link: renewals outlast an outage).
        config: the team.
        agents: the agents this node runs.
        root: this node's workspace folder (shown to other nodes).
        on_lost: called with an agent's name if another node took its lease.
        spool: where the node's outbox keeps notices until Redis takes them
            (`Workspace.outbox_dir`); None: no outbox.
        sink: told of each notice delivered.
    """

    def __init__(
        self,
        backend: RedisBackend,
        config: TeamConfig,
        agents: list[str],
        *,
        root: str = "",
        on_lost: Callable[[str], None] | None = None,
        spool: Path | None = None,
        sink: EventSink | None = None,
    ) -> None:
        self.backend = backend
        self.link = backend.link
        self.agents = agents
        self.leases = Leases(
            self.link, backend.node, config.team.lease_seconds, on_lost=on_lost, root=root
        )
        self.ttl_ms = self.leases.ttl_ms
        self._publisher = RedisLink(backend.spec, config.team.name)  # fails fast
        self.outbox = (
            Outbox(backend, spool, stop=self.link.stop, sink=sink) if spool is not None else None
        )

    def claim(self, wait: bool = False, say: Callable[[str, bool], None] | None = None) -> None:
        """Take every agent's lease, or none.

        Args:
            wait: while another node holds one, wait for it (it lapses, or that node lets
                go) rather than fail; `say(line, final)` is told how long it may take, once
                a second (`final` on the last line).

        Raises:
            LeaseHeld: one of them runs on another node (the line names it), and not `wait`.
        """
        try:
            for name in self.agents:
                self._claim(name, wait, say)
        except BaseException:  # refused, or Ctrl-C while waiting: hold none of them
            self.leases.close()
            raise
        if self.outbox is not None:
            self.outbox.start()  # what an earlier run here could not deliver goes first

    def _claim(self, name: str, wait: bool, say: Callable[[str, bool], None] | None) -> None:
        waited = False
        while True:
            try:
                self.leases.acquire(name)
            except LeaseHeld as e:
                if not wait:
                    raise
                if say is not None:
                    say(waiting_line(name, e.holder, e.ttl_ms), False)
                waited = True
                if self.link.stop.wait(WAIT_STEP_S):
                    raise
                continue
            if waited and say is not None:
                say(f"took the lease of {name!r}", True)
            return

    def publish(self, status: dict) -> None:
        """Put this node's snapshot of each agent where every machine can read it."""
        agents = status.get("agents", {})

        def write(r) -> None:
            pipe = r.pipeline(transaction=False)
            for name in self.agents:
                if name in agents:
                    record = {**agents[name], "node": self.backend.node}
                    pipe.set(self.link.key("status", name), json.dumps(record), px=self.ttl_ms)
            pipe.execute()

        # never waits: a snapshot missed while Redis is away is simply not there
        with contextlib.suppress(RedisUnavailable):
            self._publisher.call(write)

    def close(self) -> None:
        """Deliver the notices still queued, release the leases (the status snapshots
        expire with them)."""
        if self.outbox is not None:
            self.outbox.close()
        self.leases.close()
        self._publisher.close()


def team_status(backend: RedisBackend, config: TeamConfig) -> dict:
    """The whole team as Redis knows it: `team status` on any machine.

    Returns:
        {"running": bool, "agents": {name: {state, node, pending, ...}}}; an agent no
        node holds a lease for is "down".
    """
    names = config.names()
    leases = Leases(backend.link, backend.node, config.team.lease_seconds)
    holders = leases.running(names)
    keys = [backend.link.key("status", n) for n in names]
    snapshots = backend.link.call(lambda r: r.mget(keys))
    agents = {}
    for name, raw in zip(names, snapshots, strict=True):
        st = json.loads(raw) if raw else {}
        if name in holders:
            st["node"] = holders[name].get("node")
            st.setdefault("state", "starting")
        else:
            st = {"state": "down", "task": None}
        st["pending"] = backend.mailbox(name).pending_count()
        agents[name] = st
    return {"running": bool(holders), "agents": agents}


def ask_team_to_stop(ws: Workspace, backend: RedisBackend, config: TeamConfig) -> list[str]:
    """Ask every agent that holds a lease, on any node, to stop after its step.

    Returns:
        The agents asked.

    Raises:
        UserError: no agent of the team runs anywhere.
    """
    from team.backends.post import request_shutdown

    leases = Leases(backend.link, backend.node, config.team.lease_seconds)
    running = sorted(leases.running(config.names()))
    if not running:
        raise UserError(f"no agent of team {config.team.name!r} is running on {backend.spec}")
    for name in running:
        request_shutdown(ws, name, backend=backend)
    return running


def wait_team_stopped(
    backend: RedisBackend, config: TeamConfig, agents: list[str], wait: float
) -> None:
    """Wait until none of `agents` holds a lease any more (their nodes let go).

    Raises:
        UserError: some still run after `wait` seconds.
    """
    leases = Leases(backend.link, backend.node, config.team.lease_seconds)
    deadline = time.monotonic() + wait
    while left := sorted(leases.running(agents)):
        if time.monotonic() > deadline:
            raise UserError(f"not stopped within {wait:g}s: {', '.join(left)} (maybe mid-call)")
        time.sleep(0.2)
