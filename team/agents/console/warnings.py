"""Warnings through one path: log records become events, which the run's sinks render.

Without this, `team up` printed each model failure twice when piped (a log line on
stderr and an event line on stdout), and on a TTY the live table drew over log lines
written straight to the terminal. Routed through the event sink, a warning is recorded
in events.db (`agent_events`, kind `warning` or `error`) and shown once, by whichever
view the run has: the plain printer, or the live view's feed.
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

from team.core.events import AgentEvent, EventSink

AGENT_THREAD = "agent-"  # the runtime names each agent's thread agent-<name>


class EventLogHandler(logging.Handler):
    """A logging handler that emits every record as an `AgentEvent`.

    Args:
        sink: where the events go (the run's fan-out sink).
        trace_path: a record with a traceback (an agent crash) writes it here, appended,
            since a traceback is for a bug report, not for the live view.
    """

    def __init__(self, sink: EventSink, trace_path: Path | None = None) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink
        self.trace_path = trace_path

    def emit(self, record: logging.LogRecord) -> None:
        try:
            thread = record.threadName or ""
            agent = thread.removeprefix(AGENT_THREAD) if thread.startswith(AGENT_THREAD) else "team"
            line = " ".join(record.getMessage().split())
            line = line.removeprefix(f"{agent}: ")  # the agent column already says who
            if record.exc_info and self.trace_path is not None:
                self._keep_trace(record, line)
                line += f" (traceback in {self.trace_path.name})"
            kind = "error" if record.levelno >= logging.ERROR else "warning"
            self.sink.emit(AgentEvent(agent, kind, line, ts=record.created))
        except Exception:  # a warning must never take down what it warns about
            self.handleError(record)

    def _keep_trace(self, record: logging.LogRecord, line: str) -> None:
        text = "".join(traceback.format_exception(*record.exc_info))  # type: ignore[misc]
        try:
            with open(self.trace_path, "a", encoding="utf-8") as f:  # type: ignore[arg-type]
                f.write(f"--- {record.created:.3f} {record.threadName}: {line}\n{text}")
        except OSError:
            pass  # a full disk: the one-line event still says what happened


def route_warnings(sink: EventSink, trace_path: Path | None = None) -> EventLogHandler:
    """Send warnings (and worse) of the whole process to `sink`, and nowhere else."""
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    handler = EventLogHandler(sink, trace_path)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    return handler
