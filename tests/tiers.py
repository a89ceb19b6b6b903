"""The two backends as test fixtures see them: one object per tier, same operations.

`Tier.open()` is what a new process does: a fresh backend with nothing remembered, so
a test that opens twice sees what a restart sees.
"""

from __future__ import annotations

import sys
from pathlib import Path

from team.backends.base import FilesBackend, RedisBackend, open_backend
from team.workspace.config import TeamConfig, parse_config
from team.workspace.places import Workspace

HERE = Path(__file__).parent
PROC = HERE / "inbox_proc.py"
AGENTS = ("alice", "bob", "carol")


def team_config(spec: str, name: str = "contract") -> TeamConfig:
    return parse_config(
        {
            "team": {"name": name, "backend": spec},
            "agents": [{"name": n, "role": "r"} for n in AGENTS],
        }
    )


class Tier:
    """One backend under test, in the workspace `root`."""

    def __init__(self, spec: str, root: Path) -> None:
        self.spec = spec
        self.ws = Workspace.at(root)
        self.config = team_config(spec)
        self.kind = "files" if spec == "files" else "redis"

    def open(self, **kw) -> FilesBackend | RedisBackend:
        return open_backend(self.ws, self.config, **kw)

    def box(self, agent: str = "alice", **kw):
        return self.open(**kw).mailbox(agent)

    def proc_args(self, *args: str) -> list[str]:
        """A command line for tests/inbox_proc.py against this tier."""
        return [sys.executable, str(PROC), str(self.ws.root), self.spec, *args]

    def inject_malformed(self, agent: str) -> int:
        """Put undecodable mail in `agent`'s inbox the raw way; returns how many."""
        if self.kind == "files":
            new = self.ws.inbox_dir(agent) / "new"
            new.mkdir(parents=True, exist_ok=True)
            (new / "00000000000000000001.garbage.json").write_bytes(b"{not json")
            (new / "00000000000000000002.missing.json").write_bytes(b'{"content": "no sender"}')
            return 2
        box = self.box(agent)
        box.link.client.xadd(box.key, {"m": "{not json"})
        box.link.client.xadd(box.key, {"other": "field"})
        return 2

    def bad_count(self, agent: str) -> int:
        if self.kind == "files":
            bad = self.ws.inbox_dir(agent) / "bad"
            return len(list(bad.iterdir())) if bad.exists() else 0
        return len(self.box(agent).bad())
