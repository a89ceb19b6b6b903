"""The live view of `team up` on a TTY: the status table, and above it a feed of events.

Claims, completions, messages, compactions and warnings scroll by above the table,
printed as ordinary lines, so nothing is overwritten when the table redraws. Agent
threads only queue lines (`LiveFeed.emit`); the main thread prints them (`LiveView.tick`),
so the terminal has one writer and the table is redrawn after each batch.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from team.agents.console.printer import EventPrinter
from team.agents.console.status_table import status_lines
from team.core.events import Event

FEED_BACKLOG = 1000
"""Lines kept between two ticks; a burst beyond that drops the oldest (counted)."""


def feed_line(event: Event) -> str | None:
    """One line for the feed (time, agent, what happened), or None for a quiet event."""
    text = EventPrinter.format(event)
    if not text:
        return None
    stamp = time.strftime("%H:%M:%S", time.localtime(event.ts))
    return f"{stamp} {event.agent:<12} {text}"


class LiveFeed:
    """An `EventSink` that queues a line per notable event, for the main thread to print."""

    def __init__(self, backlog: int = FEED_BACKLOG) -> None:
        self._lines: deque[str] = deque(maxlen=backlog)
        self._lock = threading.Lock()
        self.dropped = 0

    def emit(self, event: Event) -> None:
        line = feed_line(event)
        if line is None:
            return
        with self._lock:
            if len(self._lines) == self._lines.maxlen:
                self.dropped += 1
            self._lines.append(line)

    def drain(self) -> list[str]:
        with self._lock:
            lines, dropped = list(self._lines), self.dropped
            self._lines.clear()
            self.dropped = 0
        if dropped:
            lines.insert(0, f"({dropped} earlier events not shown: see team stats)")
        return lines


class LiveView:
    """The table and the feed on one rich console.

    Args:
        feed: where the run's events queue their lines.
        console: a rich Console (the terminal; a test passes one writing to a buffer).
    """

    def __init__(self, feed: LiveFeed, console: Any = None) -> None:
        from rich.console import Console
        from rich.live import Live

        self.feed = feed
        self.console = console or Console()
        # auto_refresh off: the table changes only at a tick, and one writer is simpler
        self.live = Live(console=self.console, auto_refresh=False, transient=False)

    def __enter__(self) -> LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(*exc)

    def tick(self, status: dict) -> None:
        """Print the events queued since the last tick above the table, then redraw it."""
        from rich.text import Text

        for line in self.feed.drain():
            self.live.console.print(Text(line), soft_wrap=True)
        # fitted to the terminal as it is now: a narrowed window drops columns, not text
        table = "\n".join(status_lines(status, self.console.width))
        self.live.update(Text(table, no_wrap=True, overflow="ellipsis"), refresh=True)
