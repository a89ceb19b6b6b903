"""The MCP servers the tests run: ours (tests/mcp_server.py, on team's own SDK) and the
third-party ones scripts/test installs from PyPI into .venv-mcp-servers."""

from __future__ import annotations

import sys
from pathlib import Path

import tomli_w

ROOT = Path(__file__).resolve().parent.parent
OURS = str(ROOT / "tests" / "mcp_server.py")
VENV = ROOT / ".venv-mcp-servers"


def ours(*args: str, **extra) -> dict:
    """A team.toml table for the test server (stdio, this interpreter)."""
    return {"command": sys.executable, "args": [OURS, *args], **extra}


def third_party(program: str) -> str:
    """The path of a PyPI server's program, or fail saying how to install it."""
    path = VENV / "bin" / program
    if not path.exists():
        raise AssertionError(f"{path} is missing: scripts/test installs the MCP servers")
    return str(path)


def write_team(
    root: Path, servers: dict[str, dict], agents: list[dict] | None = None, **team
) -> Path:
    """A team.toml with these [mcp_servers] (and `agents`, default one sim coder)."""
    root.mkdir(parents=True, exist_ok=True)
    doc = {
        "team": {"name": "mcp", "model": "sim", **team},
        "compaction": {"min_chars": 100},
        "agents": agents or [{"name": "alice", "role": "coder"}],
        "mcp_servers": servers,
    }
    (root / "team.toml").write_text(tomli_w.dumps(doc))
    return root
