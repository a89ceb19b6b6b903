"""What an agent must never write because it decides what runs or how it is confined.

team.toml, `.mcp.json` and the scripts its hooks name are the team's rules: an agent that
could rewrite them would start an unconfined agent, or have its hook run code for it.
Git's own configuration is the same kind of thing: a `.git/hooks/pre-commit`, a
`core.hooksPath`, `core.fsmonitor` or `core.pager` runs on the person's next `git`
command. Each of these is read-only to every sandboxed command and refused by the file
tools (both take them from `Sandbox.for_agent`).

Git, as chosen (docs/design.md, "Safety"): a shared workspace's `.git` is read-only to
its agents as a whole (they read history, they do not commit; worktree isolation is the
way for agents to commit). A worktree agent commits in its own worktree: its gitdir entry
(`.git/worktrees/<name>`: HEAD, index) and the repository's `objects/`, `refs/` and
`logs/` are bound writable, while the entry's `commondir`, `gitdir` and `config.worktree`
and the worktree's own `.git` file (which say where the configuration is) stay read-only,
as does everything else in `.git`: `config`, `hooks/`, `info/`, other worktrees' entries.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from team.workspace.config import TeamConfig
from team.workspace.places import Workspace


def rule_files(ws: Workspace, config: TeamConfig) -> tuple[Path, ...]:
    """team.toml, `.mcp.json`, and every file in the workspace a hook command names."""
    out = [ws.config_path, ws.mcp_json_path]
    for command in (config.hooks.task_completed, config.hooks.teammate_idle):
        out += hook_files(ws.root, command)
    return tuple(dict.fromkeys(out))


def hook_files(root: Path, command: str | None) -> list[Path]:
    """The files a hook command names (`./check.sh`, `python3 ci/x.py`, `/opt/ci/check`),
    relative ones taken from `root`: read-only in the sandbox (and shown there, should
    they be in the host's /tmp, which the sandbox replaces)."""
    if not command:
        return []
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out = []
    for i, word in enumerate(words):
        p = Path(word).expanduser()
        p = p if p.is_absolute() else root / p
        with contextlib.suppress(OSError, ValueError):
            if not p.is_file() or p.resolve().is_relative_to("/proc"):
                continue
            # the program and the scripts it is given, not the data files it writes
            if i == 0 or p.suffix in SCRIPTS or os.access(p, os.X_OK):
                out.append(p.resolve())
    return out


SCRIPTS = {".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua"}


@dataclass(frozen=True)
class GitPaths:
    """For one writable root: what of git must stay read-only, and what must be writable
    (outside the root) for its agent to commit."""

    readonly: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()


def git_paths(root: Path) -> GitPaths:
    """Find the repository `root` is in (its `.git` at `root` or above) and say what to bind."""
    for top in (root, *root.parents):
        dotgit = top / ".git"
        if dotgit.is_dir():
            # a main checkout: its .git read-only wherever it is (above root it is anyway)
            return GitPaths(readonly=(dotgit,))
        if dotgit.is_file():
            return _worktree(dotgit)
    return GitPaths()


def _worktree(dotgit: Path) -> GitPaths:
    try:
        line = dotgit.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return GitPaths(readonly=(dotgit,))
    if not line.startswith("gitdir:"):
        return GitPaths(readonly=(dotgit,))
    gitdir = Path(line.removeprefix("gitdir:").strip())
    gitdir = (gitdir if gitdir.is_absolute() else dotgit.parent / gitdir).resolve()
    try:
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    except OSError:
        return GitPaths(readonly=(dotgit,))
    # an empty config.worktree, read-only: one the agent made would configure git wherever
    # the repository has extensions.worktreeConfig
    with contextlib.suppress(OSError):
        (gitdir / "config.worktree").touch(exist_ok=True)
    # the whole repository read-only first (shown, too, when it is under the host's /tmp,
    # which the sandbox replaces), then what a commit writes, then what configures git
    readonly = (common, dotgit, *(gitdir / n for n in ("commondir", "gitdir", "config.worktree")))
    writable = (gitdir, *(common / n for n in ("objects", "refs", "logs")))
    return GitPaths(readonly, tuple(p for p in writable if p.is_dir()))
