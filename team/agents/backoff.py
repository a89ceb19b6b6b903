"""How long an agent waits before it retries a failed model call or a failed write."""

from __future__ import annotations

from team.llm.base import ModelError

MAX_BACKOFF_S = 30.0
MAX_HINT_S = 600.0  # a server's retry-after is honoured up to this (a stop cuts it short)


class Backoff:
    """Exponential from 1 s up to `MAX_BACKOFF_S`, reset by the first success."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.failures = 0
        """Failed attempts since the last success (what `team status` counts)."""
        self.reason: str | None = None
        """The last failure's reason, so a new kind of failure is told, a repeat is not."""

    def next(self, error: ModelError | None = None) -> float:
        """The wait before the next attempt; the server's hint wins when it gives one
        (it knows better: a short 529, a long 429)."""
        self.failures += 1
        self.reason = error.reason if error is not None else None
        self.seconds = min(MAX_BACKOFF_S, max(1.0, self.seconds * 2))
        if error is not None and error.retry_after is not None:
            self.seconds = min(MAX_HINT_S, error.retry_after)
        return self.seconds

    def reset(self) -> None:
        self.seconds = 0.0
        self.failures = 0
        self.reason = None
