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
    outcome: str  # "ok", "failed", "refused", "timeout", "stopped", "output_limit"; MCP:
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


class SqliteEventLog:
    """An `EventSink` that appends to `.team/events.db` from one writer thread.

    `emit` only enqueues, so an agent thread never waits on SQLite. `close` drains the
    queue, so no event emitted before it is lost.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._q: queue.Queue[Event | None] = queue.Queue()
        self._conn = connect(path)
        # It only appends, touching the last pages of each table and index, so a small
        # page cache does (SQLite's default grows to 2 MB with the database).
        self._conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        self._thread = threading.Thread(target=self._run, name="events-writer", daemon=True)
        self._thread.start()

    def emit(self, event: Event) -> None:
        self._q.put(event)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until everything emitted so far is written."""
        done = threading.Event()
        self._q.put(_Marker(done))  # type: ignore[arg-type]
        done.wait(timeout)

    def close(self) -> None:
        self._q.put(None)
        self._thread.join(timeout=30)
        self._conn.close()

    def _run(self) -> None:
        while True:
            item = self._q.get()
            batch = [item]
            while not self._q.empty() and len(batch) < 500:
                batch.append(self._q.get_nowait())
            stop = False
            try:
                with self._conn:
                    for ev in batch:
                        if ev is None:
                            stop = True
                        elif not isinstance(ev, _Marker):
                            self._write(ev)
            except sqlite3.Error as e:  # e.g. disk full at commit: lose the batch, not the writer
                log.warning("could not record %d events: %s", len(batch), e)
            for ev in batch:
                if isinstance(ev, _Marker):
                    ev.done.set()
            if stop:
                return

    def _write(self, ev: Event) -> None:
        try:
            insert(self._conn, ev)
        except sqlite3.Error as e:  # never let a bad event stop the writer
            log.warning("could not record %s event: %s", ev.table, e)


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
