"""Agent leases on Redis: no agent runs on two nodes at once.

`team:<team>:lease:<agent>` holds the holder's record (node, host, pid, folder, since,
and a random token) and expires after `lease_seconds`. A node takes it with `SET NX PX`
before it starts the agent, a keeper thread renews it every third of its time while the
agent runs, and the node deletes it when the agent stops. A node killed with -9 stops
renewing, so its leases lapse after their time and another node may take the agents.

Renewal and release are Lua scripts that act only while the lease is still ours, so a
node that lost its lease (a long Redis outage) can never extend or delete someone
else's; a lapsed lease nobody took is taken back.

A lease whose holder ran on this host under a pid that no longer exists (a node killed
with -9, then started again) is taken at once, without waiting for it to lapse; one
released cleanly is gone already. Any other holder is waited for (`Node.claim`).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from team.backends.redis_link import RedisLink, RedisUnavailable
from team.core.errors import UserError

log = logging.getLogger(__name__)

RENEW = """
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
elseif not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 2
end
return 0
"""
"""1: renewed; 2: it had lapsed and nobody took it, so it is ours again; 0: lost."""

TAKE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""
"""Take a lease from a holder known to be gone: only if it is still that holder's."""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class LeaseHeld(UserError):
    """Another node runs this agent; the message names it."""

    def __init__(self, line: str, *, holder: dict | None = None, ttl_ms: int | None = None):
        super().__init__(line)
        self.holder = holder or {}
        self.ttl_ms = ttl_ms


def holder_gone(holder: dict) -> bool:
    """True if the holder ran on this host under a pid that no longer exists.

    Only then is it certain the holder cannot renew: a pid alive here may be the holder or
    a process that reused its pid (both wait), another host cannot be checked, and a pid
    of another pid namespace (a container with the same host name) is not ours to check.
    """
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return False
    if holder.get("pidns") != pid_namespace():  # containers may share a host name
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's (EPERM)
        return False
    return _zombie(pid)


def pid_namespace() -> str:
    """This process's pid namespace (`pid:[4026531836]`): a pid means the same process
    only within one."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _zombie(pid: int) -> bool:
    """A killed process its parent has not reaped yet is dead too (state Z in /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def describe(agent: str, holder: dict, ttl_ms: int | None = None) -> str:
    """One line naming the node that holds `agent`."""
    since = datetime.fromtimestamp(holder.get("since", 0), UTC).strftime("%H:%M:%S UTC")
    where = f"node {holder.get('node', '?')!r} (pid {holder.get('pid', '?')}, since {since})"
    lapse = ""
    if ttl_ms is not None and ttl_ms > 0:
        lapse = f"; if that node is gone, its lease lapses within {ttl_ms / 1000:.0f}s"
    return f"agent {agent!r} is already running on {where}{lapse}"


class Leases:
    """This node's leases, and a keeper thread renewing them.

    Args:
        link: the team's Redis (waiting out outages: a renewal must not give up).
        node: this node's name, shown to other nodes.
        seconds: the lease time (`[team] lease_seconds`).
        on_lost: called with an agent's name when its lease was taken by another node
            while this one could not renew it (the agent must stop).
        root: this node's workspace folder, shown to other nodes.
    """

    def __init__(
        self,
        link: RedisLink,
        node: str,
        seconds: float,
        *,
        on_lost: Callable[[str], None] | None = None,
        root: str = "",
    ) -> None:
        self.link = link
        self.node = node
        self.ttl_ms = int(seconds * 1000)
        self.on_lost = on_lost or (lambda agent: None)
        self.root = root
        self._mine: dict[str, str] = {}  # agent -> the exact value we SET
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._renew = link.client.register_script(RENEW)
        self._release = link.client.register_script(RELEASE)
        self._take_script = link.client.register_script(TAKE)

    def key(self, agent: str) -> str:
        return self.link.key("lease", agent)

    def holder(self, agent: str) -> dict | None:
        """Who holds `agent`'s lease now (None: nobody)."""
        raw = self.link.call(lambda r: r.get(self.key(agent)))
        return _parse(raw)

    def running(self, agents: list[str]) -> dict[str, dict]:
        """The holders of those agents that hold a lease, by agent."""
        keys = [self.key(a) for a in agents]
        values = self.link.call(lambda r: r.mget(keys)) if keys else []
        return {a: h for a, v in zip(agents, values, strict=True) if (h := _parse(v))}

    def acquire(self, agent: str) -> None:
        """Take `agent`'s lease for this node and keep renewing it.

        Raises:
            LeaseHeld: another node holds it (the message names that node).
        """
        value = json.dumps(
            {
                "node": self.node,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "pidns": pid_namespace(),
                "dir": self.root,
                "since": time.time(),
                "token": uuid.uuid4().hex,
            }
        )
        key = self.key(agent)
        if not self.link.call(lambda r: r.set(key, value, nx=True, px=self.ttl_ms)):
            raw = self.link.call(lambda r: r.get(key))
            holder = _parse(raw)
            if holder is None:  # it lapsed between the two calls: try once more
                return self.acquire(agent)
            if holder_gone(holder) and self._take(key, raw, value):
                log.warning(
                    "%s: took the lease of pid %s on this host, which is gone",
                    agent,
                    holder.get("pid"),
                )
            else:
                ttl = self.link.call(lambda r: r.pttl(key))
                raise LeaseHeld(describe(agent, holder, ttl), holder=holder, ttl_ms=ttl)
        with self._lock:
            self._mine[agent] = value
        self._start_keeper()

    def _take(self, key: str, old: str, value: str) -> bool:
        args = [old, value, self.ttl_ms]
        return bool(self.link.call(lambda r: self._take_script(keys=[key], args=args)))

    def release(self, agent: str) -> None:
        """Give `agent`'s lease up (only if it is still ours)."""
        with self._lock:
            value = self._mine.pop(agent, None)
        if value is not None:
            try:
                self.link.call(lambda r: self._release(keys=[self.key(agent)], args=[value]))
            except RedisUnavailable:
                log.warning("could not release the lease of %s; it lapses by itself", agent)

    def release_all(self) -> None:
        for agent in list(self._mine):
            self.release(agent)

    def held(self) -> list[str]:
        with self._lock:
            return sorted(self._mine)

    def renew(self) -> None:
        """Renew every lease we hold now (the keeper does this every third of the time)."""
        with self._lock:
            mine = dict(self._mine)
        if not mine:
            return
        agents = list(mine)

        def renew_all(r) -> list[int]:
            pipe = r.pipeline(transaction=False)  # one round trip for every lease
            for a in agents:
                self._renew(keys=[self.key(a)], args=[mine[a], self.ttl_ms], client=pipe)
            return pipe.execute()

        for agent, got in zip(agents, self.link.call(renew_all), strict=True):
            if got == 0:
                with self._lock:
                    still = self._mine.get(agent) == mine[agent]
                    if still:
                        del self._mine[agent]
                if still:
                    log.error(
                        "%s: lease lost to another node while this one could not renew it; "
                        "stopping it here",
                        agent,
                    )
                    self.on_lost(agent)
            elif got == 2:
                log.warning("%s: lease had lapsed (Redis was away); taken back", agent)

    def _start_keeper(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._keep, name="lease-keeper", daemon=True)
            self._thread.start()

    def _keep(self) -> None:
        interval = self.ttl_ms / 3000
        while not self._stop.wait(interval):
            try:
                self.renew()
            except RedisUnavailable:
                return  # the link's stop was set: the node is going down
            except Exception:  # never let the keeper die quietly: the leases would lapse
                log.exception("lease keeper: renewal failed; trying again")

    def close(self) -> None:
        """Stop renewing and release every lease we hold."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.release_all()


def _parse(raw: str | None) -> dict | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return {"node": raw}
    return data if isinstance(data, dict) else {"node": raw}
