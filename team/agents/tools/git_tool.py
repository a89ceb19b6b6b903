"""`git_commit`: the git path the team runs for an agent in the shared workspace.

A shared workspace's `.git` is read-only inside the sandbox (team.sandbox.rules), so an
agent's own `git commit` fails there. This tool commits for it, on the host, outside the
sandbox, and so it trusts nothing the agent controls:

- a fixed argv: the agent chooses the message (given to git on stdin, `--file=-`) and
  the paths (after `--`, read literally: `--literal-pathspecs`), never an option;
- hooks, fsmonitor, the pager, signing and the system and global configuration off
  (`-c core.hooksPath=/dev/null`, `GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`),
  the repository named explicitly (`--git-dir`, `--work-tree`: no discovery);
- a minimal environment (PATH, the locale, the author): no API key, no `GIT_*` of the
  team's own environment;
- each path inside the workspace: relative, no `..`, no component that is a symlink,
  nothing under `.git`, `.team` or `.transcripts`;
- the author and committer are the agent (`<agent> <agent@team.invalid>`).
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from team.core.errors import UserError

MAX_MESSAGE = 10_000
MAX_PATHS = 200
OFF_LIMITS = frozenset({".git", ".team", ".transcripts"})
SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "commit.gpgSign=false",
    "core.editor=false",
    "credential.helper=",
    "diff.ignoreSubmodules=all",  # never look inside a gitlink (its own config, filters)
    "submodule.recurse=false",
    "status.submoduleSummary=false",
)


class GitRefused(UserError):
    """The call was refused before git ran (one line the model can act on)."""


@dataclass(frozen=True)
class CommitResult:
    exit_code: int
    output: str
    argv: tuple[str, ...]  # the last git command run (for the audit)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def check_message(message: object) -> str:
    if not isinstance(message, str) or not message.strip():
        raise GitRefused("message must be a non-empty string")
    if "\0" in message:
        raise GitRefused("message must not contain NUL")
    if len(message) > MAX_MESSAGE:
        raise GitRefused(f"message is longer than {MAX_MESSAGE} characters")
    return message


def check_paths(root: Path, paths: object) -> list[str]:
    """The paths as git will get them (relative, normalised), or `GitRefused`."""
    if paths is None:
        return []
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise GitRefused("paths must be a list of strings")
    if len(paths) > MAX_PATHS:
        raise GitRefused(f"at most {MAX_PATHS} paths")
    return [_check_path(root, p) for p in paths]


def _check_path(root: Path, raw: str) -> str:
    if not raw.strip() or "\0" in raw or "\n" in raw:
        raise GitRefused(f"bad path {raw!r}")
    pure = PurePosixPath(raw)
    if pure.is_absolute():
        raise GitRefused(f"{raw!r}: paths are relative to the workspace root")
    parts = [p for p in pure.parts if p != "."]
    if not parts:
        raise GitRefused(f"{raw!r}: name a file or folder inside the workspace")
    if ".." in parts:
        raise GitRefused(f"{raw!r}: '..' is not allowed")
    if parts[0] in OFF_LIMITS:
        raise GitRefused(f"{raw!r}: {parts[0]} is off limits")
    here = root
    for part in parts:  # no component may be a symlink: it could lead out of the workspace
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            break  # a deleted file can be committed; nothing below it exists either
        if stat.S_ISLNK(mode):
            raise GitRefused(f"{raw!r}: {here.relative_to(root)} is a symlink")
        if stat.S_ISDIR(mode) and os.path.lexists(here / ".git"):
            raise GitRefused(f"{raw!r}: {here.relative_to(root)} is an embedded git repository")
    else:
        if here.is_dir() and _has_dotgit(here):
            raise GitRefused(f"{raw!r}: holds an embedded git repository")
    return "/".join(parts)


def _has_dotgit(folder: Path) -> bool:
    """An embedded repository anywhere below: git would add it as a gitlink and, later,
    run git inside it, under that repository's own configuration."""
    walk = os.walk(folder)  # symlinks are not followed
    return any(".git" in dirs or ".git" in files for _here, dirs, files in walk)


def git_env(agent: str) -> dict[str, str]:
    """The whole environment git gets: nothing of the team's own."""
    who = {"name": agent, "email": f"{agent}@team.invalid"}
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_AUTHOR_NAME": who["name"],
        "GIT_AUTHOR_EMAIL": who["email"],
        "GIT_COMMITTER_NAME": who["name"],
        "GIT_COMMITTER_EMAIL": who["email"],
    }


def repo_of(root: Path) -> Path:
    """The workspace's own `.git` folder (a main checkout at the root), or `GitRefused`."""
    dotgit = root / ".git"
    if dotgit.is_symlink() or not dotgit.is_dir():
        raise GitRefused("the workspace is not a git repository (no .git folder at its root)")
    return dotgit


def commit(
    root: Path, agent: str, message: str, paths: list[str], *, timeout: float = 60.0
) -> CommitResult:
    """Stage `paths` (all of them: new, changed, deleted) and commit them, or with no
    paths commit every tracked file that changed (`commit -a`). `message` and `paths`
    must have been checked (`check_message`, `check_paths`)."""
    dotgit = repo_of(root)
    base = ["git", f"--git-dir={dotgit}", f"--work-tree={root}", "--no-pager"]
    base += [arg for c in SAFE_CONFIG for arg in ("-c", c)]
    env = git_env(agent)
    steps: list[tuple[list[str], str | None]] = []
    if paths:
        steps.append(([*base, "add", "--all", "--", *paths], None))
        steps.append(([*base, "commit", "--file=-", "--", *paths], message))
    else:
        steps.append(([*base, "commit", "--all", "--file=-"], message))
    out: list[str] = []
    argv: list[str] = []
    for argv, stdin in steps:
        try:
            done = subprocess.run(
                argv,
                cwd=root,
                env=env,
                input=stdin if stdin is not None else "",
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return CommitResult(124, f"git timed out after {timeout:g}s", tuple(argv))
        except OSError as e:
            return CommitResult(127, f"git cannot run: {e}", tuple(argv))
        out.append((done.stdout + done.stderr).strip())
        if done.returncode != 0:
            return CommitResult(done.returncode, "\n".join(o for o in out if o), tuple(argv))
    return CommitResult(0, "\n".join(o for o in out if o), tuple(argv))
