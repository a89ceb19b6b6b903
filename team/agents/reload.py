"""team.toml edited while the team runs: which changes the running team can take.

Adding an agent starts it; removing one stops it after its step. Anything else (the
model, max_tokens, an existing agent's role or compaction settings) would leave running
agents and the file disagreeing about who they are, so it is refused, in one line, until
the next `team up`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from team.config import AgentConfig, ConfigError, TeamConfig, load_config


@dataclass
class Reload:
    """What a new team.toml means for the running team."""

    config: TeamConfig
    """The configuration to run: the old one, with the agents added and removed."""
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    refused: str | None = None
    """One line naming what was not applied (or why the file was not read at all)."""


def plan(old: TeamConfig, new: TeamConfig) -> Reload:
    """Apply membership changes of `new` to `old`; name every other change as refused."""
    old_agents = {a.name: a for a in old.agents}
    new_agents = {a.name: a for a in new.agents}
    added = [n for n in new_agents if n not in old_agents]
    removed = [n for n in old_agents if n not in new_agents]
    changed = [
        f"agent {n}"
        for n in old_agents
        if n in new_agents and _differs(old_agents[n], new_agents[n])
    ]
    for section in ("team", "compaction", "limits"):
        if getattr(old, section) != getattr(new, section):
            changed.append(f"[{section}]")
    agents: list[AgentConfig] = [old_agents[n] for n in old_agents if n not in removed]
    agents += [new_agents[n] for n in added]
    refused = None
    if changed:
        refused = (
            f"team.toml changed while the team runs: {', '.join(changed)} not applied "
            "(only adding or removing agents is; restart `team up` for the rest)"
        )
    if not agents:
        return Reload(old, refused="team.toml now lists no agents; keeping the running team")
    return Reload(old.model_copy(update={"agents": agents}), added, removed, refused)


def _differs(a: AgentConfig, b: AgentConfig) -> bool:
    return a.model_dump() != b.model_dump()


class ConfigWatch:
    """Notices when team.toml changes (by mtime and size), cheaply enough to poll each second."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = self._stamp()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def check(self, running: TeamConfig) -> Reload | None:
        """None when the file is unchanged since the last check; else what to do about it."""
        stamp = self._stamp()
        if stamp == self.seen:
            return None
        self.seen = stamp
        try:
            new = load_config(self.path)
        except ConfigError as e:
            return Reload(running, refused=f"{e}; keeping the running team as it is")
        return plan(running, new)
