"""Where one agent's requests put their prompt-cache breakpoints, and when the cache is cold.

A breakpoint makes the provider store the prefix up to it; a later request reads the
longest stored prefix it still shares (looking back about 20 blocks from each of its
own breakpoints). So breakpoints go where the next requests will need a stored prefix,
which is where things change next:

- the system prompt (tools come before it): shared by every request, summaries too;
- just before the oldest result micro may clear next: a clear changes the prompt from
  that result on, and reads everything before it from here. The point a request
  clears at was placed by the requests before it, so a clearing request keeps the old
  point (to read) and adds the new one (for the next clear);
- the previous request's end: what the cache surely holds, read by the next request
  however far its own end has moved past the lookback;
- this request's end: for the next request to read.

At most 4 in all (the API's limit). See docs/design.md (prompt cache).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from team.core.conversation import Message
from team.llm.base import CachePoint
from team.llm.prices import TTL_SECONDS

BlockRef = tuple[int, int]
MAX_MESSAGE_BREAKPOINTS = 3  # plus the system prompt's


def before(ref: BlockRef, messages: list[Message]) -> BlockRef | None:
    """The block just before `ref` (None at the very start)."""
    i, j = ref
    if j > 0:
        return i, j - 1
    if i == 0:
        return None
    return i - 1, len(messages[i - 1].content) - 1


def end_of(messages: list[Message]) -> BlockRef | None:
    if not messages or not messages[-1].content:
        return None
    return len(messages) - 1, len(messages[-1].content) - 1


class BreakpointPlanner:
    """Remembers what the previous request of the segment sent, and plans the next one's.

    Args:
        ttl: the cache lifetime ("5m" or "1h").
        clock: monotonic seconds, injectable so tests can let the cache expire.
    """

    def __init__(self, ttl: str = "5m", clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = TTL_SECONDS[ttl]
        self._clock = clock
        self._last_call: float | None = None
        self._planned_at: float | None = None
        self.reset()

    def reset(self) -> None:
        """A new segment: nothing of it is cached yet (the system prompt still is)."""
        self.sent: list[Message] = []
        self._stable: BlockRef | None = None

    @property
    def sent_messages(self) -> int:
        return len(self.sent)

    def cold(self) -> bool:
        """The cache has expired: the last call is older than the TTL (or there was none)."""
        return self._last_call is None or self._clock() - self._last_call > self.ttl_s

    def plan(
        self, view: list[Message], next_clear: BlockRef | None, cleared_from: BlockRef | None
    ) -> tuple[CachePoint, ...]:
        """The message breakpoints of the request that sends `view`.

        Args:
            view: what is sent.
            next_clear: the oldest result micro may clear later (see `MicroCompactor`).
            cleared_from: the oldest result this request newly clears, if it clears.
        """
        self._planned_at = self._clock()
        points: list[BlockRef] = []
        end = end_of(view)
        if end is not None:
            points.append(end)
        if cleared_from is not None:
            # read up to where the last requests kept a stable point, if still in front
            if self._stable is not None and self._stable < cleared_from:
                points.append(self._stable)
        else:
            prev = self.previous_end(view)
            if prev is not None:
                points.append(prev)
        stable = before(next_clear, view) if next_clear is not None else None
        if stable is not None:
            points.append(stable)
        self._stable = stable
        unique = sorted(set(points))
        if len(unique) > MAX_MESSAGE_BREAKPOINTS:  # keep the end and the oldest ones
            unique = [*unique[: MAX_MESSAGE_BREAKPOINTS - 1], unique[-1]]
        return tuple(unique)

    def sent_request(self, view: list[Message]) -> None:
        """The request that sent `view` was answered: its prefix is now cached (as of
        when it was planned: a replay's clock is the recorded time of each call)."""
        self.sent = view
        self._last_call = self._planned_at if self._planned_at is not None else self._clock()
        self._planned_at = None

    def previous_end(self, view: list[Message]) -> BlockRef | None:
        """The previous request's last block, if this view still starts with it."""
        end = end_of(self.sent)
        if end is None:
            return None
        i, j = end
        if i >= len(view) or j >= len(view[i].content):
            return None
        if view[i].content[j] != self.sent[i].content[j]:
            return None
        return end
