"""Where things live on disk (docs/design.md, "Files on disk"); no path is spelled twice."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from team.core.errors import UserError, os_error_line
from team.workspace.config import CONFIG_FILE, ConfigError, TeamConfig, load_config

USER = "user"


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def at(cls, root: Path | str) -> Workspace:
        return cls(Path(root).resolve())

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def team_dir(self) -> Path:
        return self.root / ".team"

    @property
    def lock_path(self) -> Path:
        return self.team_dir / "team.lock"

    @property
    def errors_log(self) -> Path:
        """Every warning of a running team, one line each (`team up` also shows them)."""
        return self.team_dir / "errors.log"

    @property
    def status_path(self) -> Path:
        return self.team_dir / "status.json"

    @property
    def inbox_root(self) -> Path:
        return self.team_dir / "inbox"

    def inbox_dir(self, agent: str) -> Path:
        return self.inbox_root / agent

    def agent_dir(self, agent: str) -> Path:
        return self.team_dir / "agents" / agent

    def session_log(self, agent: str) -> Path:
        return self.agent_dir(agent) / "session.jsonl"

    @property
    def outbox_dir(self) -> Path:
        """A Redis node's notices waiting for Redis (team.backends.outbox)."""
        return self.team_dir / "outbox"

    @property
    def tasks_dir(self) -> Path:
        return self.team_dir / "tasks"

    @property
    def events_db(self) -> Path:
        return self.team_dir / "events.db"

    @property
    def transcripts_root(self) -> Path:
        return self.root / ".transcripts"

    def transcripts_dir(self, agent: str) -> Path:
        return self.transcripts_root / agent

    @property
    def protected(self) -> tuple[Path, ...]:
        """Folders the file tools must never write under."""
        return (self.team_dir, self.transcripts_root)

    def check_writable(self) -> None:
        """Fail early, in one line, when `.team/` cannot be written.

        A read-only or full workspace would otherwise fail half-way through starting,
        in whichever write came first.

        Raises:
            UserError: the folder cannot be created, or a small file cannot be written in it.
        """
        probe = self.team_dir / f".write-check-{os.getpid()}"
        try:
            self.team_dir.mkdir(parents=True, exist_ok=True)
            try:
                with open(probe, "wb") as f:
                    f.write(b"\0" * 4096)
                    f.flush()
                    os.fsync(f.fileno())
            finally:
                probe.unlink(missing_ok=True)
        except OSError as e:
            e.filename = None  # the probe's name is ours, not something to look for
            raise UserError(f"cannot write to {self.team_dir}: {os_error_line(e)}") from None

    def load_config(self) -> TeamConfig:
        return load_config(self.config_path)

    def require_agent(self, config: TeamConfig, name: str) -> None:
        """Unknown agent names are errors, never a silently created inbox.

        `user` is the person at the CLI: agents may write to it (reports, shutdown
        answers) and `team inbox user` reads it.
        """
        if name not in config.names() and name != USER:
            known = ", ".join(config.names())
            raise ConfigError(f"unknown agent {name!r} (this team has: {known})")
