"""team.toml as the fast commands need it, without pydantic (docs/design.md, "CLI").

`team send` and `team status` run in a new process each time, and validating team.toml
with its pydantic models cost more than the rest of their work (importing pydantic
alone ~3.8x a bare `python -c pass`; issue 27). So whenever the full loader
(`Workspace.load_config`) has validated team.toml, it leaves `.team/config.json`: the
few values those commands read (`ConfigView`), keyed by what it validated. The fast
commands (`Workspace.load_view`) take the view from there when the key still matches
and from the full loader otherwise, so every mistake in team.toml is reported by the
same loader with the same line; the snapshot can only stand for a file the loader
accepted, byte for byte.

The key: team.toml's and `.mcp.json`'s (mtime_ns, size, inode) and a SHA-256 of their
bytes (absent counts too), the team's version, and the (mtime_ns, size) of the two
modules that validate (an upgrade with new rules re-validates). Writing is best effort:
whole (tmp + rename), only into an existing `.team/`, and a read-only or full disk
leaves no file and no message.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from team import __version__

try:  # CPython's own SHA-256: hashlib would load OpenSSL first, which costs more than the rest
    from _sha256 import sha256
except ImportError:  # Python 3.12+ names it _sha2; other interpreters have hashlib only
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

if TYPE_CHECKING:
    from team.workspace.config import TeamConfig

FORMAT = 1
"""Bumped when `ConfigView` changes shape: an older snapshot then never matches."""
_VALIDATORS = (
    Path(__file__).with_name("config.py"),
    Path(__file__).parent.parent / "mcp" / "config.py",
)


@dataclass(frozen=True)
class TeamView:
    """The `[team]` values the fast commands read."""

    name: str
    backend: str
    isolation: str
    budget_usd: float | None
    lease_seconds: float


@dataclass(frozen=True)
class AgentView:
    name: str
    budget_usd: float | None


@dataclass(frozen=True)
class ServerView:
    disabled: bool


@dataclass(frozen=True)
class ConfigView:
    """What `team send`, `broadcast` and `status` read of a validated team.toml, with the
    same attribute names as `TeamConfig` (so the code they share takes either)."""

    team: TeamView
    agents: tuple[AgentView, ...]
    mcp_servers: dict[str, ServerView]

    def names(self) -> list[str]:
        return [a.name for a in self.agents]

    def agent(self, name: str) -> AgentView:
        for a in self.agents:
            if a.name == name:
                return a
        raise KeyError(name)

    @classmethod
    def of(cls, cfg: TeamConfig) -> ConfigView:
        t = cfg.team
        return cls(
            TeamView(t.name, t.backend, t.isolation, t.budget_usd, t.lease_seconds),
            tuple(AgentView(a.name, a.budget_usd) for a in cfg.agents),
            {name: ServerView(s.disabled) for name, s in cfg.mcp_servers.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConfigView:
        """Raises KeyError, TypeError or ValueError for a dict `to_dict` did not write."""
        view = cls(
            TeamView(**d["team"]),
            tuple(AgentView(**a) for a in d["agents"]),
            {name: ServerView(**s) for name, s in d["mcp_servers"].items()},
        )
        t = view.team
        names = [t.name, t.backend, t.isolation, *view.names(), *view.mcp_servers]
        amounts = [t.lease_seconds, t.budget_usd, *(a.budget_usd for a in view.agents)]
        flags = [s.disabled for s in view.mcp_servers.values()]
        if (
            not view.agents
            or not all(isinstance(n, str) for n in names)
            or not all(n is None or isinstance(n, int | float) for n in amounts)
            or not all(isinstance(f, bool) for f in flags)
        ):
            raise ValueError("not a view of team.toml")
        return view


def _file_key(path: Path) -> list[Any] | None:
    """[mtime_ns, size, inode, sha256] of `path`, or None when there is no such file.

    Raises:
        OSError: it exists but cannot be read.
    """
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except FileNotFoundError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino, sha256(data).hexdigest()]


def key(config_path: Path, mcp_json: Path) -> dict[str, Any] | None:
    """What a snapshot of this team.toml must carry to stand for it; None when it cannot
    be known (a file unreadable), so no snapshot is used or written."""
    try:
        code = []
        for module in _VALIDATORS:
            st = os.stat(module)
            code.append([st.st_mtime_ns, st.st_size])
        return {
            "format": FORMAT,
            "version": __version__,
            "code": code,
            "team.toml": _file_key(config_path),
            ".mcp.json": _file_key(mcp_json),
        }
    except OSError:
        return None


def read(snapshot: Path, current: dict[str, Any] | None) -> ConfigView | None:
    """The view the snapshot holds when its key is `current`, else None (read the file)."""
    if current is None or current["team.toml"] is None:
        return None  # no team.toml: the full loader says so, in its words
    try:
        data = json.loads(snapshot.read_bytes())
        if not isinstance(data, dict) or data.get("key") != current:
            return None
        return ConfigView.from_dict(data["view"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write(
    snapshot: Path, before: dict[str, Any] | None, after: dict[str, Any] | None, view: ConfigView
) -> None:
    """Leave the snapshot of what the loader just accepted, when the files did not change
    while it read them (`before` == `after`). Best effort: never raises."""
    if before is None or before != after or before["team.toml"] is None:
        return
    if not snapshot.parent.is_dir():
        return  # not a workspace `team init` made: make no folder for a cache
    text = json.dumps({"key": before, "view": view.to_dict()}, indent=1)
    tmp = snapshot.with_name(f".{snapshot.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        try:
            current = snapshot.read_text()
        except (OSError, ValueError):
            current = None
        if current == text:
            return  # already there: a read-only `team status` changes nothing
        tmp.write_text(text)
        os.replace(tmp, snapshot)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
