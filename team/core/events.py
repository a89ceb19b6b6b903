"""Events: what happened, for study. A small sink protocol and the SQLite log behind it.

`.team/events.db` is SQLite in WAL mode with one writer thread, so agent threads never
wait on the disk and readers (`team stats`, `sqlite3`) never block the writer.
"""

from __future__ import annotations

import json
import logging
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from team.core.errors import UserError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelCallEvent:
    agent: str
    purpose: str  # "agent" or "summary"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    estimate: int = 0  # our estimate of the context before the call
    duration_s: float = 0.0
    error: str | None = None
    cache_ttl: str | None = None  # "5m" or "1h": the writes' price (None in older rows: 5m)
    ts: float = field(default_factory=time.time)
    table = "model_calls"


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    agent: str
    layer: str  # "micro", "auto" or "manual"
    trigger: str  # why it ran: "threshold", "tool", "view", ...
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    transcript: str | None = None
    summary_chars: int = 0
    duration_s: float = 0.0
    success: bool = True
    error: str | None = None
    results_cleared: int = 0  # micro only
    rewrite_tokens: int = 0  # micro only: cached tokens the clear makes the provider rewrite
    cache_ttl: str | None = None  # micro only: the lifetime those rewrites are written for
    retention: float | None = None  # share of ids/names/paths kept (see compaction.retention)
    retention_tasks: float | None = None  # ... of task ids alone
    retention_names: float | None = None  # ... of teammate names alone
    retention_paths: float | None = None  # ... of file paths alone
    ts: float = field(default_factory=time.time)
    table = "compactions"


@dataclass(frozen=True, slots=True)
class DeliveryEvent:
    agent: str  # the recipient
    sender: str
    msg_id: str
    kind: str  # "sent" or "received"
    msg_type: str = "message"
    latency_s: float | None = None  # received only: receive time - message timestamp
    ts: float = field(default_factory=time.time)
    table = "deliveries"


@dataclass(frozen=True, slots=True)
class AgentEvent:
    agent: str
    kind: str  # "started", "idle", "crashed", "restarted", "auto_paused", "stopped", ...
    detail: str = ""
    ts: float = field(default_factory=time.time)
    table = "agent_events"


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One command, file write or MCP call an agent made (`team audit` reads these)."""

    agent: str
    tool: str  # "bash", "write_file", "edit_file", or an MCP tool (mcp__<server>__<tool>)
    target: str  # the command line, the path as the model wrote it, or the MCP tool's own
    # name and its arguments as JSON
    outcome: str  # "started" (bash, before it runs), "ok", "failed", "refused", "timeout",
    # "stopped", "output_limit"; MCP:
    # "ok", "error" (the tool said it failed), "timeout", "crashed", "down", "refused", "unknown"
    exit_code: int | None = None  # bash only; None when the command was killed
    duration_s: float = 0.0
    bytes: int = 0  # output printed (bash), the file's size after the write, the MCP result
    sandbox: str = "off"  # "bwrap" or "off"
    detail: str | None = None  # why a write was refused, or an MCP call failed
    server: str | None = None  # the MCP server called (None for the agent's own tools)
    ts: float = field(default_factory=time.time)
    table = "audit"


Event = ModelCallEvent | CompactionEvent | DeliveryEvent | AgentEvent | AuditEvent
EVENT_TYPES: tuple[type, ...] = (
    ModelCallEvent,
    CompactionEvent,
    DeliveryEvent,
    AgentEvent,
    AuditEvent,
)


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


class MemorySink:
    """Keeps events in a list: for tests and for the experiment runner."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        with self._lock:
            return [e for e in self.events if isinstance(e, kind)]


class FanoutSink:
    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = sinks

    def emit(self, event: Event) -> None:
        for s in self.sinks:
            s.emit(event)


def _columns(kind: type) -> list[tuple[str, str]]:
    cols = []
    for name, ann in kind.__annotations__.items():
        if name == "table":
            continue
        base = str(ann).split("|")[0].strip()
        sql = {"int": "INTEGER", "float": "REAL", "str": "TEXT", "bool": "INTEGER"}.get(
            base, "TEXT"
        )
        cols.append((name, sql))
    return cols


def schema_sql() -> str:
    """CREATE statements for every event table (documented in the README)."""
    stmts = []
    for kind in EVENT_TYPES:
        cols = ", ".join(f"{n} {t}" for n, t in _columns(kind))
        stmts.append(f"CREATE TABLE IF NOT EXISTS {kind.table} (id INTEGER PRIMARY KEY, {cols});")
        stmts.append(f"CREATE INDEX IF NOT EXISTS {kind.table}_agent ON {kind.table}(agent, ts);")
    return "\n".join(stmts)


def connect(path: Path) -> sqlite3.Connection:
    """Open (and create if needed) an events database for reading or writing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(schema_sql())
    _add_missing_columns(conn)
    return conn


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open an existing events database for reading only, its rows as `sqlite3.Row`.

    Read-only, so a reader can run while a team writes (WAL readers never block the
    writer) and a typo'd `--dir` never leaves an empty database behind.

    Raises:
        sqlite3.Error: there is no database there, or it cannot be opened.
    """
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    return conn


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """An events database opened read-only for a command that reports on it, then closed.

    Raises:
        UserError: no events database there, or one that cannot be opened or read.
    """
    if not path.is_file():
        raise UserError(f"no events recorded yet: {path} does not exist (run `team up` first)")
    try:
        conn = connect_read_only(path)
    except sqlite3.Error as e:
        raise UserError(f"cannot open {path}: {e}") from e
    try:
        yield conn
    except sqlite3.Error as e:
        raise UserError(f"cannot read {path}: {e}") from e
    finally:
        conn.close()


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The tables a database has: one made by an older version may lack some, which
    just means nothing of that kind was recorded."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """A database from an older version gains the columns added since (all nullable)."""
    for kind in EVENT_TYPES:
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({kind.table})")}
        for name, sql_type in _columns(kind):
            if name not in have:
                conn.execute(f"ALTER TABLE {kind.table} ADD COLUMN {name} {sql_type}")


WRITER_CACHE_KIB = 256
HELD_MAX = 10_000
"""Events kept in memory while events.db cannot be written (a full disk); the oldest go
first past this, and are counted."""
RETRY_S = (0.5, 1.0, 2.0, 5.0)
"""The waits between write attempts while events.db fails: the last one repeats, so an
idle team on a full disk tries once every 5 s, whatever it emits meanwhile."""


class SqliteEventLog:
    """An `EventSink` that appends to `.team/events.db` from one writer thread.

    `emit` only enqueues, so an agent thread never waits on SQLite. `close` drains the
    queue, so no event emitted before it is lost.

    When a write fails (a full disk, a read-only or locked file) the events are held in
    memory (up to `HELD_MAX`, the oldest dropped and counted past that) and written on a
    later try, every `RETRY_S` at most. One warning says the outage began and one says it
    ended, whatever the number of events in between: the warning is itself an event, so a
    warning per failed write would feed itself (one failed write, one warning, one more
    failed write). `health` is the outage for `team status`.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._q: queue.Queue[Event | None] = queue.Queue()
        self._conn = connect(path)
        # It only appends, touching the last pages of each table and index, so a small
        # page cache does (SQLite's default grows to 2 MB with the database).
        self._conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        self._held: deque[Event] = deque()
        self._lock = threading.Lock()  # `health` reads what the writer thread changes
        self._failing_since: float | None = None
        self._error = ""
        self._tries = 0  # failed write attempts in this outage
        self._next_try = 0.0  # monotonic: no attempt before this while failing
        self.dropped = 0  # events let go because more than HELD_MAX were held
        self.failed_writes = 0  # failed write attempts, all outages
        self.outages = 0
        self._thread = threading.Thread(target=self._run, name="events-writer", daemon=True)
        self._thread.start()

    def emit(self, event: Event) -> None:
        self._q.put(event)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until everything emitted so far is written (or held, while failing)."""
        done = threading.Event()
        self._q.put(_Marker(done))  # type: ignore[arg-type]
        done.wait(timeout)

    def close(self) -> None:
        self._q.put(None)
        self._thread.join(timeout=30)
        self._conn.close()

    def health(self) -> dict[str, Any] | None:
        """None if no write ever failed; else the outage now (`failing_since` set) or the
        last one: events held, dropped, failed attempts."""
        with self._lock:
            if not self.outages:
                return None
            return {
                "failing_since": self._failing_since,
                "error": self._error,
                "held": len(self._held),
                "dropped": self.dropped,
                "failed_writes": self.failed_writes,
                "outages": self.outages,
            }

    def _run(self) -> None:
        while True:
            wait = None
            if self._held:
                wait = max(0.0, self._next_try - time.monotonic())
            try:
                batch = [self._q.get(timeout=wait)]
            except queue.Empty:
                batch = []  # time to try the held events again
            while not self._q.empty() and len(batch) < 500:
                batch.append(self._q.get_nowait())
            stop = None in batch
            events = [ev for ev in batch if ev is not None and not isinstance(ev, _Marker)]
            with self._lock:
                self._hold(events)
            if self._held and (stop or time.monotonic() >= self._next_try):
                self._write_held(last=stop)
            for ev in batch:
                if isinstance(ev, _Marker):
                    ev.done.set()
            if stop:
                return

    def _hold(self, events: list[Event]) -> None:
        self._held.extend(events)
        over = len(self._held) - HELD_MAX
        for _ in range(max(0, over)):
            self._held.popleft()
        self.dropped += max(0, over)

    def _write_held(self, last: bool) -> None:
        events = list(self._held)
        try:
            with self._conn:
                for ev in events:
                    self._write(ev)
        except sqlite3.Error as e:  # e.g. disk full at commit: keep them, not lose the writer
            self._failed(e, last)
            return
        with self._lock:
            for _ in events:
                self._held.popleft()
            was, self._failing_since = self._failing_since, None
        if was is not None:
            log.warning(
                "events.db is writable again after %s and %d tries: wrote %d held events%s",
                _took(time.time() - was),
                self._tries,
                len(events),
                f", {self.dropped} dropped (over {HELD_MAX:,} held)" if self.dropped else "",
            )

    def _failed(self, e: sqlite3.Error, last: bool) -> None:
        with self._lock:
            self.failed_writes += 1
            first = self._failing_since is None
            if first:
                self._failing_since, self._tries = time.time(), 0
                self.outages += 1
            self._tries += 1
            self._error = str(e)
            self._next_try = time.monotonic() + RETRY_S[min(self._tries, len(RETRY_S)) - 1]
        if first:
            log.warning(
                "cannot record events in %s (%s): holding them in memory (up to %s) and "
                "trying again every few seconds",
                self.path,
                e,
                f"{HELD_MAX:,}",
            )
        if last:
            log.warning(
                "%d events were not recorded: %s is still failing (%s)",
                len(self._held) + self.dropped,
                self.path,
                e,
            )

    def _write(self, ev: Event) -> None:
        try:
            insert(self._conn, ev)
        except sqlite3.Error as e:  # never let a bad event stop the writer
            if _outage(e):
                raise  # the database itself (full, read-only, locked): hold and retry
            log.warning("could not record %s event: %s", ev.table, e)


OUTAGE_CODES = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_BUSY", "SQLITE_LOCKED")


def _outage(e: sqlite3.Error) -> bool:
    """An error of the database file rather than of one event: held and tried again."""
    name = getattr(e, "sqlite_errorname", "") or ""
    return name.startswith(OUTAGE_CODES) or "disk is full" in str(e)


def _took(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"


def insert(conn: sqlite3.Connection, ev: Event) -> None:
    row = asdict(ev)
    for k, v in row.items():
        if isinstance(v, dict | list):
            row[k] = json.dumps(v)
    names = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    conn.execute(f"INSERT INTO {ev.table} ({names}) VALUES ({marks})", tuple(row.values()))


@dataclass
class _Marker:
    done: threading.Event


@contextmanager
def optional_log(path: Path) -> Iterator[SqliteEventLog | None]:
    """The event log for one user change (a send, an assign), or None when the db cannot
    be opened: a busy or broken events.db never blocks the change it would record."""
    try:
        sink = SqliteEventLog(path)
    except (sqlite3.Error, OSError):
        yield None
        return
    try:
        yield sink
    finally:
        sink.close()
