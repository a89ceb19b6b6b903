"""Bearer tokens kept in the workspace (`.team/mcp.token`, `.team/web.token`)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def stored_token(path: Path) -> tuple[str, bool]:
    """The token in `path`, made on first use (0600, written whole), and whether it was
    made just now (then the caller prints it, once)."""
    try:
        token = path.read_text().strip()
        if token:
            return token, False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.replace(tmp, path)
    return token, True
