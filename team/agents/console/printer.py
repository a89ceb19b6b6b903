"""What `team up` prints: plain event lines (no TTY), a live table (TTY), and the run summary."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import TextIO

from team.agents.console.status_table import status_lines  # noqa: F401  (its old home)
from team.core.events import AgentEvent, CompactionEvent, DeliveryEvent, Event, ModelCallEvent


class RunCounter:
    """An `EventSink` that tallies one run for the closing summary."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.tokens: Counter[str] = Counter()
        self.compactions: Counter[str] = Counter()
        self.failed_compactions = 0
        self.messages = 0
        self.call_errors = 0
        self.crashes = 0

    def emit(self, event: Event) -> None:
        with self._lock:
            if isinstance(event, ModelCallEvent):
                if event.error:
                    self.call_errors += 1
                    return
                self.calls[event.purpose] += 1
                self.tokens["input"] += event.input_tokens
                self.tokens["output"] += event.output_tokens
                self.tokens["cache read"] += event.cache_read_tokens
                self.tokens["cache write"] += event.cache_write_tokens
            elif isinstance(event, CompactionEvent):
                if event.success:
                    self.compactions[event.layer] += 1
                else:
                    self.failed_compactions += 1
            elif isinstance(event, DeliveryEvent):
                if event.kind == "received" and event.msg_type != "shutdown_request":
                    self.messages += 1
            elif isinstance(event, AgentEvent) and event.kind == "crashed":
                self.crashes += 1

    def summary(self, tasks_done: int, tasks_total: int, elapsed: float) -> str:
        t = self.tokens
        layers = ", ".join(f"{k} {self.compactions[k]}" for k in ("micro", "auto", "manual"))
        lines = [
            f"run finished in {elapsed:.1f}s",
            f"  tasks:       {tasks_done} of {tasks_total} completed",
            f"  messages:    {self.messages} delivered",
            f"  model calls: {self.calls['agent']} agent, {self.calls['summary']} summary"
            + (f", {self.call_errors} failed" if self.call_errors else ""),
            f"  compactions: {layers}"
            + (f" ({self.failed_compactions} failed)" if self.failed_compactions else ""),
            f"  tokens:      {t['input']:,} input, {t['output']:,} output, "
            f"{t['cache read']:,} cache read, {t['cache write']:,} cache write",
        ]
        if self.crashes:
            lines.append(f"  agent crashes (restarted): {self.crashes}")
        return "\n".join(lines)


class EventPrinter:
    """An `EventSink` that prints one plain line per notable event (for logs and pipes)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        line = self.format(event)
        if line:
            stamp = time.strftime("%H:%M:%S", time.localtime(event.ts))
            with self._lock:
                print(f"{stamp} {event.agent:<12} {line}", file=self.out, flush=True)

    @staticmethod
    def format(event: Event) -> str | None:
        if isinstance(event, CompactionEvent):
            if not event.success:
                return f"compaction {event.layer} FAILED: {event.error}"
            if event.layer == "micro":
                n = event.results_cleared
                return (
                    f"micro: {n} old tool result{'s' if n != 1 else ''} cleared "
                    f"({event.tokens_before:,} -> {event.tokens_after:,} tokens)"
                )
            return (
                f"compaction {event.layer}: {event.tokens_before:,} -> "
                f"{event.tokens_after:,} tokens, transcript {event.transcript}"
            )
        if isinstance(event, DeliveryEvent) and event.kind == "received":
            return f"<- {event.msg_type} from {event.sender}"
        # a failed model call is shown by the loop's warning (with its retry), not twice
        if isinstance(event, AgentEvent):
            return f"{event.kind}{': ' + event.detail if event.detail else ''}"
        return None
