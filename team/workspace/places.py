"""Where things live on disk (docs/design.md, "Files on disk"); no path is spelled twice."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from team.core.errors import UserError, os_error_line
from team.workspace.filenames import CONFIG_FILE, MCP_JSON

if TYPE_CHECKING:  # pydantic: imported by the full loader only (`team send` reads a view)
    from team.workspace.config import TeamConfig
    from team.workspace.snapshot import ConfigView

USER = "user"
TEAM_DIR = ".team"
TRANSCRIPTS_DIR = ".transcripts"
SESSION_LOG = "session.jsonl"


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
    def mcp_json_path(self) -> Path:
        return self.root / MCP_JSON

    @property
    def team_dir(self) -> Path:
        return self.root / TEAM_DIR

    @property
    def lock_path(self) -> Path:
        return self.team_dir / "team.lock"

    @property
    def errors_log(self) -> Path:
        """Every warning of a running team, one line each (`team up` also shows them)."""
        return self.team_dir / "errors.log"

    @property
    def config_snapshot(self) -> Path:
        """What the fast commands read of team.toml once it was validated (`load_view`)."""
        return self.team_dir / "config.json"

    @property
    def status_path(self) -> Path:
        return self.team_dir / "status.json"

    @property
    def inbox_root(self) -> Path:
        return self.team_dir / "inbox"

    def inbox_dir(self, agent: str) -> Path:
        return self.inbox_root / agent

    @property
    def agents_root(self) -> Path:
        return self.team_dir / "agents"

    def agent_dir(self, agent: str) -> Path:
        return self.agents_root / agent

    def session_log(self, agent: str) -> Path:
        return self.agent_dir(agent) / SESSION_LOG

    def session_logs(self) -> list[Path]:
        """Every session log here, in the order of the agents' names."""
        return sorted(self.agents_root.glob(f"*/{SESSION_LOG}"))

    def results_dir(self, agent: str) -> Path:
        """Tool results and messages too large for the agent's context, kept whole."""
        return self.agent_dir(agent) / "results"

    def agent_tmp(self, agent: str) -> Path:
        """The agent's own /tmp in the sandbox."""
        return self.agent_dir(agent) / "tmp"

    @classmethod
    def of_agent_file(cls, path: Path) -> tuple[Workspace, str] | None:
        """The workspace and the agent whose folder holds `path`
        (`.team/agents/<agent>/<file>`, such as its session log), or None."""
        parts = path.parts
        if len(parts) >= 4 and parts[-4:-2] == (TEAM_DIR, "agents"):
            return cls.at(Path(*parts[:-4])), parts[-2]
        return None

    @property
    def outbox_dir(self) -> Path:
        """A Redis node's notices waiting for Redis (team.backends.outbox)."""
        return self.team_dir / "outbox"

    @property
    def mcp_logs(self) -> Path:
        """What each stdio MCP server writes to its stderr: `<server>.log` (team.mcp.pool)."""
        return self.team_dir / "mcp"

    @property
    def mcp_token(self) -> Path:
        """The bearer token `team mcp --http` asks its clients for."""
        return self.team_dir / "mcp.token"

    @property
    def web_token(self) -> Path:
        """The token `team web` asks for when it serves off the loopback (0600)."""
        return self.team_dir / "web.token"

    @property
    def tasks_dir(self) -> Path:
        return self.team_dir / "tasks"

    @property
    def events_db(self) -> Path:
        return self.team_dir / "events.db"

    @property
    def experiments_dir(self) -> Path:
        """`team experiment`'s saved results, one JSON file a run (the Study page's)."""
        return self.team_dir / "experiments"

    @property
    def report_png(self) -> Path:
        """Where `team report` draws by default (its HTML page goes beside it)."""
        return self.team_dir / "report.png"

    def worktree_dir(self, agent: str) -> Path:
        """`agent`'s git worktree (isolation = "worktree")."""
        return self.team_dir / "worktrees" / agent

    @property
    def import_record(self) -> Path:
        """What `team import` made this workspace from (team.sessions.workspace)."""
        return self.team_dir / "import.json"

    @property
    def demo_mark(self) -> Path:
        """Present in a folder `team demo` made, which it may therefore delete."""
        return self.team_dir / "demo"

    @property
    def transcripts_root(self) -> Path:
        return self.root / TRANSCRIPTS_DIR

    def transcripts_dir(self, agent: str) -> Path:
        return self.transcripts_root / agent

    @staticmethod
    def transcript_agent(path: Path) -> str | None:
        """The agent whose transcript `path` is (`.transcripts/<agent>/<file>`, in any
        workspace), or None."""
        return path.parent.name if path.parent.parent.name == TRANSCRIPTS_DIR else None

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
        """team.toml, validated (every problem is a `ConfigError` with one line); also
        leaves the snapshot `load_view` reads (team.workspace.snapshot)."""
        from team.workspace import snapshot
        from team.workspace.config import load_config

        before = snapshot.key(self.config_path, self.mcp_json_path)
        cfg = load_config(self.config_path)
        after = snapshot.key(self.config_path, self.mcp_json_path)
        snapshot.write(self.config_snapshot, before, after, snapshot.ConfigView.of(cfg))
        return cfg

    def load_view(self) -> ConfigView:
        """What `team send` and `team status` read of team.toml: from the snapshot when it
        stands for the file as it is now, else from `load_config` (its errors, its lines)."""
        from team.workspace import snapshot

        key = snapshot.key(self.config_path, self.mcp_json_path)
        view = snapshot.read(self.config_snapshot, key)
        return view if view is not None else snapshot.ConfigView.of(self.load_config())

    def require_agent(self, config: TeamConfig | ConfigView, name: str) -> None:
        """Unknown agent names are errors, never a silently created inbox.

        `user` is the person at the CLI: agents may write to it (reports, shutdown
        answers) and `team inbox user` reads it.
        """
        if name not in config.names() and name != USER:
            from team.workspace.config import ConfigError

            known = ", ".join(config.names())
            raise ConfigError(f"unknown agent {name!r} (this team has: {known})")
