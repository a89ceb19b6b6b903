"""Where things live on disk (DESIGN §1). One object, so no path is spelled twice."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from team.config import CONFIG_FILE, ConfigError, TeamConfig, load_config

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
