"""One connection to the team's Redis, and what happens when Redis is down.

Every Redis call of the backend goes through `RedisLink.call`. Two behaviours, chosen by
who is calling (README, "A team across machines"):

- a command at the CLI (`team send`, `team inbox`, ...) fails fast with one line naming
  the URL (`RedisUnavailable`, a `UserError`);
- a running agent waits: one warning line when Redis goes away, one when it is back,
  and the call is repeated then, so nothing is lost. A stop event ends the wait.

redis-py's own retries are off: a command repeated behind our back after a reply was
lost (an `XREADGROUP` the server did run) would hide exactly the failure the callers
must know about to re-read what is pending. Our callers repeat, knowingly.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from team.core.errors import UserError
from team.workspace.backend_spec import shown

log = logging.getLogger(__name__)

T = TypeVar("T")

SOCKET_TIMEOUT_S = 30.0
"""Longer than any blocking read we issue (`BLOCK` is at most `BLOCK_MS`), and than a
reply takes from a server that fsyncs every write on a machine at load 30 (10 s was
seen to time out). A server that is down refuses or resets at once; this is only for
one that hangs."""
CONNECT_TIMEOUT_S = 10.0
"""A loopback connect at high load can take seconds when the server is slow to accept."""
BACKOFF_MAX_S = 2.0
"""Longest pause between attempts while Redis is down: resuming is prompt."""
DOWN = (redis.ConnectionError, redis.TimeoutError)


class RedisUnavailable(UserError):
    """Redis cannot be reached (or a wait for it was stopped); one line for the user."""


class RedisLink:
    """The team's keys on one Redis server, and the outage policy for calls to it.

    Args:
        url: `redis://host:port/db` (or rediss://, unix://).
        namespace: the team's name; every key starts with `team:<namespace>:`, so teams
            can share a server.
        wait: True in running agents (wait out outages), False at the CLI (fail fast).
        stop: ends a wait for Redis early; the call then raises `RedisUnavailable`.
    """

    def __init__(
        self,
        url: str,
        namespace: str,
        *,
        wait: bool = False,
        stop: threading.Event | None = None,
    ) -> None:
        self.url = url
        self.namespace = namespace
        self.wait = wait
        self.stop = stop or threading.Event()
        self.client = redis.Redis.from_url(
            url,
            decode_responses=True,
            socket_timeout=SOCKET_TIMEOUT_S,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            retry=Retry(NoBackoff(), 0),
        )
        self._down_since: float | None = None
        self._down_lock = threading.Lock()

    def key(self, *parts: str) -> str:
        return ":".join(("team", self.namespace, *parts))

    def call(
        self, fn: Callable[[redis.Redis], T], *, on_error: Callable[[], None] | None = None
    ) -> T:
        """`fn(client)`, repeated while Redis is unreachable (when waiting).

        Args:
            fn: the Redis work; it must be safe to repeat (ours are, by message id).
            on_error: run after each failed attempt, before the next (to forget state
                the failed attempt may have changed on the server).

        Raises:
            RedisUnavailable: Redis is unreachable and we do not wait, or stop was set.
        """
        pause = 0.05
        while True:
            started = time.monotonic()
            try:
                result = fn(self.client)
            except DOWN as e:
                if on_error is not None:
                    on_error()
                if not self.wait:
                    raise RedisUnavailable(
                        f"cannot reach Redis at {shown(self.url)}: {_reason(e)}"
                    ) from None
                self._went_down(e)
                if self.stop.wait(pause):
                    raise RedisUnavailable(
                        f"stopped while waiting for Redis at {shown(self.url)}"
                    ) from None
                pause = min(BACKOFF_MAX_S, pause * 2)
                continue
            self._came_back(started)
            return result

    def _went_down(self, e: Exception) -> None:
        with self._down_lock:
            if self._down_since is None:
                self._down_since = time.monotonic()
                log.warning(
                    "Redis at %s is unreachable (%s); agents wait and resume when it is back",
                    shown(self.url),
                    _reason(e),
                )

    def _came_back(self, started: float) -> None:
        """A call succeeded. Only one that began after the outage was seen proves Redis is
        back: a reply to one sent before it (another thread's) says nothing about now."""
        if self._down_since is None:
            return
        with self._down_lock:
            if self._down_since is None or started < self._down_since:
                return
            gone = time.monotonic() - self._down_since
            self._down_since = None
        log.warning("Redis at %s is back after %.1fs; resuming", shown(self.url), gone)

    @property
    def down(self) -> bool:
        """True while a call is waiting for Redis to come back."""
        return self._down_since is not None

    def ping(self) -> None:
        """Check the server answers (raises `RedisUnavailable` when not waiting)."""
        self.call(lambda r: r.ping())

    def close(self) -> None:
        self.client.close()


def _reason(e: Exception) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text.rstrip(".")
