"""team.toml edited while the team runs: which changes the running team can take.

Adding an agent starts it; removing one stops it after its step (docs/design.md,
"team.toml while the team runs"). Anything else (the model, max_tokens, the team's name,
an existing agent's role or compaction settings, hooks) would leave the running agents
and the file disagreeing about who they are, so the whole change is refused, in one
line, and the team goes on as it was until the next `team up`. All or nothing: a change
that adds an agent and also edits the model applies neither, so the file never half
describes what runs.

An added agent confined less than the team's own settings say (`sandbox = "off"` or
`network = true` of its own) is held: one warning, and it starts only once the person
approves that very file (`team approve-config`, which records its SHA-256 in
`.team/config.approved`, a folder no agent can write) or restarts the team. A sandboxed
command cannot write team.toml at all (team.sandbox.rules); the hold is for whatever else
could (an unconfined agent or MCP server, a tool that edits files for the agent).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from team.core.errors import UserError, os_error_line
from team.sandbox import bwrap as sandbox
from team.workspace.config import ConfigError, TeamConfig, load_config
from team.workspace.places import Workspace

APPROVED = "config.approved"


@dataclass
class Reload:
    """What a new team.toml means for the running team."""

    config: TeamConfig
    """The configuration to run: the new one when applied, else the running one."""
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    refused: str | None = None
    """One line naming what was not applied (or why the file was not read at all)."""


def plan(
    old: TeamConfig, new: TeamConfig, *, membership: bool = True, approved: bool = False
) -> Reload:
    """What the running team (`old`) does about `new`: take its agents, or refuse it.

    Args:
        membership: whether this team may start and stop agents at all (a node of a team
            on Redis runs the agents it was started with: it refuses any change).
        approved: the person approved this very file (`team approve-config`): an added
            agent may then be confined less than the team's settings say.
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
    loose = [f"{n} ({', '.join(why)})" for n in added if (why := loosened(new, n))]
    if loose and not approved:
        return Reload(old, refused=f"{_WHAT}: {_HELD.format(', '.join(loose))}")
    return Reload(new, added, removed)


def loosened(config: TeamConfig, agent: str) -> list[str]:
    """What of `agent`'s own settings confines it less than the team's (empty: nothing)."""
    a, team = config.agent(agent), config.team
    why = []
    if a.sandbox == "off" and team.sandbox != "off":
        why.append('sandbox = "off"')
    if a.network and not team.network:
        why.append("network = true")
    return why


_HELD = (
    "agent(s) added with looser confinement than the team's: {}; held, not started "
    "(run `team approve-config` to start them, or restart `team up`)"
)


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
        self.approval = path.parent / ".team" / APPROVED
        self.membership = membership
        self.seen = self._stamp()

    def _stamp(self) -> tuple[tuple[int, int, int] | None, ...]:
        out = []
        for path in (self.path, self.approval):
            try:
                st = path.stat()
            except OSError:
                out.append(None)
                continue
            out.append((st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def check(self, running: TeamConfig) -> Reload | None:
        """None when the file is unchanged since the last check; else what to do about it."""
        stamp = self._stamp()
        if stamp == self.seen:
            return None
        self.seen = stamp
        try:
            raw = self.path.read_bytes()
            new = load_config(self.path)
        except OSError as e:
            return Reload(running, refused=f"{self.path}: {os_error_line(e)}; {_KEPT}")
        except ConfigError as e:
            return Reload(running, refused=f"{e}; {_KEPT}")
        approved = _approved(self.approval) == digest(raw)
        change = plan(running, new, membership=self.membership, approved=approved)
        if change.added:  # as `team up` checks at start: never a silent unconfined agent
            avail = sandbox.detect()
            try:
                for name in change.added:
                    sandbox.mode_for(new, name, avail)
            except sandbox.SandboxError as e:
                return Reload(running, refused=f"{_WHAT}: {e}; {_KEPT}")
        return change


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _approved(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def approve(ws: Workspace) -> str:
    """Approve team.toml as it is now: a running team applies it within a second, held
    agents included. Returns the line to print.

    Raises:
        UserError: team.toml cannot be read or is not valid (nothing is approved).
    """
    try:
        raw = ws.config_path.read_bytes()
    except OSError as e:
        raise UserError(f"{ws.config_path}: {os_error_line(e)}") from None
    config = load_config(ws.config_path)  # one line for a file the team would refuse
    sha = digest(raw)
    ws.team_dir.mkdir(parents=True, exist_ok=True)
    target = ws.team_dir / APPROVED
    tmp = target.with_name(f".{APPROVED}.{os.getpid()}.tmp")
    tmp.write_text(sha + "\n")
    os.replace(tmp, target)
    loose = [f"{n} ({', '.join(w)})" for n in config.names() if (w := loosened(config, n))]
    line = f"approved team.toml (sha256 {sha[:12]})"
    if loose:
        line += f", with looser confinement for: {', '.join(loose)}"
    return line + "; a running team applies it within a second"
