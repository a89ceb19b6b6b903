"""team.toml edited while the team runs: which changes the running team can take.

Adding an agent starts it; removing one stops it after its step (docs/design.md,
"team.toml while the team runs"). Anything else (the model, max_tokens, the team's name,
an existing agent's role or compaction settings, hooks) would leave the running agents
and the file disagreeing about who they are, so the whole change is refused, in one
line, and the team goes on as it was until the next `team up`. All or nothing: a change
that adds an agent and also edits the model applies neither, so the file never half
describes what runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from team.sandbox import bwrap as sandbox
from team.workspace.config import ConfigError, TeamConfig, load_config


@dataclass
class Reload:
    """What a new team.toml means for the running team."""

    config: TeamConfig
    """The configuration to run: the new one when applied, else the running one."""
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    refused: str | None = None
    """One line naming what was not applied (or why the file was not read at all)."""


def plan(old: TeamConfig, new: TeamConfig, *, membership: bool = True) -> Reload:
    """What the running team (`old`) does about `new`: take its agents, or refuse it.

    Args:
        membership: whether this team may start and stop agents at all (a node of a team
            on Redis runs the agents it was started with: it refuses any change).
    """
    old_agents = {a.name: a for a in old.agents}
    new_agents = {a.name: a for a in new.agents}
    added = [n for n in new_agents if n not in old_agents]
    removed = [n for n in old_agents if n not in new_agents]
    changed = [
        f"agent {n}"
        for n in old_agents
        if n in new_agents and old_agents[n].model_dump() != new_agents[n].model_dump()
    ]
    changed += [
        f"[{section}]"
        for section in TeamConfig.model_fields
        if section != "agents" and getattr(old, section) != getattr(new, section)
    ]
    refused = None
    if changed:
        refused = f"{', '.join(changed)} changed"
    elif old.team.lead in removed:
        refused = f"the lead {old.team.lead!r} removed"
    elif (added or removed) and not membership:
        refused = "agents added or removed on a node of a team on Redis"
    if refused:
        return Reload(old, refused=f"{_WHAT}: {refused}; {_KEPT}")
    return Reload(new, added, removed)


_WHAT = "team.toml changed while the team runs"
_KEPT = (
    "not applied, the team keeps running as it was "
    "(only adding or removing agents applies at once; restart `team up` for the rest)"
)


class ConfigWatch:
    """Notices when team.toml changes (by mtime and size), cheaply enough to poll each second.

    Polling rather than a watcher thread: the runtime's loop already wakes several times a
    second, and one `stat` a second costs nothing.
    """

    def __init__(self, path: Path, *, membership: bool = True) -> None:
        self.path = path
        self.membership = membership
        self.seen = self._stamp()

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def check(self, running: TeamConfig) -> Reload | None:
        """None when the file is unchanged since the last check; else what to do about it."""
        stamp = self._stamp()
        if stamp == self.seen:
            return None
        self.seen = stamp
        try:
            new = load_config(self.path)
        except ConfigError as e:
            return Reload(running, refused=f"{e}; {_KEPT}")
        change = plan(running, new, membership=self.membership)
        if change.added:  # as `team up` checks at start: never a silent unconfined agent
            avail = sandbox.detect()
            try:
                for name in change.added:
                    sandbox.mode_for(new, name, avail)
            except sandbox.SandboxError as e:
                return Reload(running, refused=f"{_WHAT}: {e}; {_KEPT}")
        return change
