"""`team experiment`'s results kept in the workspace: one JSON file a run, written whole.

`.team/experiments/<UTC time>-<kind>.json` holds what `team experiment --json` prints
plus when it ran; the Study page of `team web` reads them (newest first). A file is
written to a temporary name beside it and renamed, so a reader sees all of it or none.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from team.workspace.places import Workspace


def save(ws: Workspace, kind: str, result: dict[str, Any], now: float | None = None) -> Path:
    """Write one run's result under `ws`; its path. `kind`: "sim" or "replay"."""
    now = time.time() if now is None else now
    folder = ws.experiments_dir
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    path = folder / f"{stamp}-{kind}.json"
    n = 1
    while path.exists():  # two runs in one second
        n += 1
        path = folder / f"{stamp}-{kind}-{n}.json"
    tmp = folder / f".{path.name}.{os.getpid()}.tmp"
    data = {"saved": now, "kind": kind, **result}
    try:
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def saved_runs(ws: Workspace, limit: int) -> list[tuple[Path, dict[str, Any] | None]]:
    """The newest `limit` saved runs, newest first: (path, its data, or None if unreadable)."""
    try:
        paths = sorted(ws.experiments_dir.glob("*.json"), reverse=True)[:limit]
    except OSError:
        return []
    out = []
    for path in paths:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = None
        out.append((path, data if isinstance(data, dict) else None))
    return out
