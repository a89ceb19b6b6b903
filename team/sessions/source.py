"""Reading a log file: JSON or JSON Lines, with one clear line for what is wrong."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from team.sessions.model import ImportReport, LogError


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
    """Every line of a JSONL file that is a JSON object, with its line number.

    A cut last line (a log still being written, or a crash) is dropped and reported.
    Any other unreadable line is an error naming it, unless `repair` drops it.
    """
    out = []
    lines = text.split("\n")
    last = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            if i == last and not text.endswith("\n"):
                report.dropped["cut last line"] += 1
                continue
            if not repair:
                raise LogError(path, i + 1, f"not JSON ({e.msg}); --repair drops it") from None
            report.repaired.append(f"dropped unreadable line {i + 1}")
            continue
        if not isinstance(obj, dict):
            if not repair:
                raise LogError(path, i + 1, "not a JSON object; --repair drops it")
            report.repaired.append(f"dropped line {i + 1} (not a JSON object)")
            continue
        out.append((i + 1, obj))
    return out


def json_document(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise LogError(path, getattr(e, "lineno", None), f"not JSON ({e.msg})") from None


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


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0
