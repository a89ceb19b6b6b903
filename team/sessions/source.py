"""Reading a log file: JSON or JSON Lines, with one clear line for what is wrong."""

from __future__ import annotations

import json
import os
import re
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from team.core.errors import UserError
from team.sessions.model import ImportReport, LogError

# What a record of an unexpected shape makes code that reads it trip on (a list where a
# name was, a number where a list was, nesting thousands deep, an int past float range).
_TRIPS = (
    TypeError,
    AttributeError,
    LookupError,
    ValueError,
    ArithmeticError,
    RecursionError,
    StopIteration,
    AssertionError,
)


@contextmanager
def foreign(path: Path | str):
    """Reading or replaying another agent's log: a record our code trips on is one line
    naming the file, never a traceback, and the traceback is kept in a file for a report.
    (Each reader checks the shapes it knows; this is for those nobody has seen yet.)"""
    try:
        yield
    except UserError:
        raise
    except _TRIPS as e:
        fd, where = tempfile.mkstemp(prefix="team-replay-", suffix=".traceback.txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as f:
            f.write(f"{path}\n\n{traceback.format_exc()}")
        what = f"{type(e).__name__}: {str(e)[:160]}"
        raise LogError(
            path, None, f"a record this version cannot read ({what}); the traceback is in {where}"
        ) from None


# A lone UTF-16 surrogate ("\ud83d" left by a tool output cut inside an emoji) decodes to
# a string no UTF-8 file or SQLite text can hold: it becomes U+FFFD as it is read (a pair
# decodes to its one character and is not touched).
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(obj: Any) -> Any:
    """`obj` with every lone surrogate in its strings (keys too) replaced, in place."""
    fix = _fixed
    if isinstance(obj, str):
        return fix(obj)
    stack = [obj]
    while stack:  # no recursion: a log can nest deeper than the stack
        o = stack.pop()
        if isinstance(o, dict):
            for k in list(o):
                v = o.pop(k) if _SURROGATE.search(k) else o[k]
                v = fix(v) if isinstance(v, str) else v
                o[fix(k)] = v
                if isinstance(v, dict | list):
                    stack.append(v)
        elif isinstance(o, list):
            for i, v in enumerate(o):
                if isinstance(v, str):
                    o[i] = fix(v)
                elif isinstance(v, dict | list):
                    stack.append(v)
    return obj


def _fixed(s: str) -> str:
    return _SURROGATE.sub("\ufffd", s) if _SURROGATE.search(s) else s


def loads(text: str) -> Any:
    """`json.loads`, with lone surrogates replaced (see `_ESCAPED_SURROGATE`)."""
    obj = json.loads(text)
    return _no_surrogates(obj) if _ESCAPED_SURROGATE.search(text) else obj


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise LogError(path, None, f"not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise LogError(path, None, f"cannot read: {e.strerror or e}") from None


def json_lines(
    path: Path, text: str, *, repair: bool, report: ImportReport
) -> list[tuple[int, dict[str, Any]]]:
    """Every line of a JSONL text that is a JSON object, with its line number.

    A cut last line (a log still being written, or a crash) is dropped and reported.
    Any other unreadable line is an error naming it, unless `repair` drops it.
    """
    raw = text.encode("utf-8", "surrogatepass").split(b"\n")
    return _objects(path, iter(raw), repair, report, text.endswith("\n"))


def stream_lines(
    path: Path, *, repair: bool, report: ImportReport
) -> list[tuple[int, dict[str, Any]]]:
    """`json_lines` of a file read one line at a time, each line slimmed as it is read
    (`slim`), so a 50 MB log costs what its conversation costs, not its progress lines
    and the second copy of every tool result Claude Code keeps."""
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            ends_with_newline = f.tell() == 0
            if f.tell():
                f.seek(-1, 2)
                ends_with_newline = f.read(1) == b"\n"
            f.seek(0)
            return _objects(path, f, repair, report, ends_with_newline)
    except OSError as e:
        raise LogError(path, None, f"cannot read: {e.strerror or e}") from None


def _objects(
    path: Path, lines: Iterator[bytes], repair: bool, report: ImportReport, complete: bool
) -> list[tuple[int, dict[str, Any]]]:
    out: list[tuple[int, dict[str, Any]]] = []
    pending: tuple[int, str] | None = None  # the last bad line: a cut last line if last
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if pending is not None:
            _bad(path, *pending, repair, report)
            pending = None
        try:
            obj = loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            pending = (i, "not UTF-8 text")
            continue
        except ValueError as e:
            pending = (i, f"not JSON ({getattr(e, 'msg', e)})")
            continue
        except RecursionError:
            pending = (i, "not JSON (nested too deep)")
            continue
        if not isinstance(obj, dict):  # valid JSON, nothing broken: no record, no repair
            report.dropped["lines that are JSON but not a record (skipped)"] += 1
            continue
        out.append((i, slim(obj)))
    if pending is not None:
        if not complete:
            report.dropped["cut last line"] += 1
        else:
            _bad(path, *pending, repair, report)
    return out


def _bad(path: Path, line: int, problem: str, repair: bool, report: ImportReport) -> None:
    if not repair:
        raise LogError(path, line, f"{problem}; --repair drops it")
    report.repaired.append(f"dropped unreadable line {line}")
    report.dropped_lines.append(line)


# Lines no reader needs but their links: Claude Code's hook progress, file snapshots and
# queue operations, and the UI copies of a Codex conversation.
_LINK_FIELDS = ("type", "uuid", "parentUuid", "logicalParentUuid", "sessionId", "isSidechain")
_NOT_CONVERSATION = frozenset({"progress", "file-history-snapshot", "queue-operation"})
_CODEX_EVENTS_KEPT = frozenset({"token_count", "context_compacted"})


def slim(obj: dict[str, Any]) -> dict[str, Any]:
    """A line with what no reader uses left out (see `_NOT_CONVERSATION`)."""
    kind = obj.get("type")
    if kind in _NOT_CONVERSATION:
        return {k: obj[k] for k in _LINK_FIELDS if k in obj}
    if kind == "event_msg" and isinstance(obj.get("payload"), dict):
        sub = obj["payload"].get("type")
        if sub not in _CODEX_EVENTS_KEPT:
            return {"type": kind, "payload": {"type": sub}}
    obj.pop("toolUseResult", None)  # Claude Code's second copy of a tool result
    return obj


def json_document(path: Path, text: str) -> Any:
    try:
        return loads(text)
    except ValueError as e:
        raise LogError(path, getattr(e, "lineno", None), f"not JSON ({e.msg})") from None
    except RecursionError:
        raise LogError(path, None, "not JSON (nested too deep)") from None


def epoch(value: Any) -> float | None:
    """An ISO 8601 time ("2025-12-03T18:27:04.359Z") or epoch number, as epoch seconds."""
    if isinstance(value, int | float):
        return float(value) / (1000.0 if value > 1e11 else 1.0)  # milliseconds too
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


MAX_COUNT = 10**15  # tokens, times: far past any real log, and inside float range


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and 0 < value <= MAX_COUNT else 0
