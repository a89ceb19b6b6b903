"""One git worktree per agent (`[team] isolation = "worktree"`; docs/design.md, "Workspaces").

Each agent works in `.team/worktrees/<agent>` on branch `team/<agent>`, made from the
repository's HEAD the first time the team starts and reused afterwards. When the agent
completes a task its worktree is committed, so its work is on its branch; `team merge
AGENT` merges that branch into the current branch of the main checkout, or, on a
conflict, aborts the merge and says where: nothing is changed and nothing is lost.
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from team.core.errors import UserError
from team.workspace.places import TEAM_DIR, TRANSCRIPTS_DIR, Workspace

GIT_TIMEOUT = 120.0
IGNORED = (f"{TEAM_DIR}/", f"{TRANSCRIPTS_DIR}/")
# git run by the team in an agent's worktree runs nothing the worktree could name: no hook,
# no fsmonitor, no pager, no external diff or textconv driver (the sandbox keeps the
# configuration read-only too; this holds also for an agent whose sandbox is off)
_AGENTS = (
    *("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"),
    *("-c", "core.pager=cat", "-c", "diff.external=", "--no-pager"),
)
_ADDING = threading.Lock()  # agent threads start together; git locks its worktree list


class WorktreeError(UserError):
    """A worktree operation that cannot be done; the message is the one line to show."""


@dataclass(frozen=True)
class WorktreeStatus:
    branch: str
    changes: int
    """Files with uncommitted changes (untracked ones included)."""
    ahead: int
    """Commits on the branch that the main checkout's HEAD does not have."""


def branch_of(agent: str) -> str:
    return f"team/{agent}"


def repo_root(path: Path) -> Path | None:
    """The top of the git repository that holds `path`, or None."""
    r = _git(path, "rev-parse", "--show-toplevel", check=False)
    return Path(r.stdout.strip()).resolve() if r.returncode == 0 else None


def require_repo(ws: Workspace) -> Path:
    """The repository's top folder; one clear line when worktree mode cannot work here."""
    top = repo_root(ws.root)
    if top is None:
        raise WorktreeError(
            f'isolation = "worktree" needs a git repository, and {ws.root} is not in one '
            '(run `git init` and commit, or set isolation = "shared")'
        )
    if _git(top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        raise WorktreeError(
            f'isolation = "worktree" needs a first commit in {top} to branch from '
            "(commit something first)"
        )
    return top


def agent_root(ws: Workspace, agent: str) -> Path:
    """Where `agent` works: its worktree, at the same place inside it as the workspace."""
    top = repo_root(ws.root) or ws.root
    return ws.worktree_dir(agent) / ws.root.relative_to(top)


def ensure(ws: Workspace, agent: str) -> Path:
    """Make (or reuse) `agent`'s worktree and branch; returns the agent's root in it."""
    top = require_repo(ws)
    wt = ws.worktree_dir(agent)
    with _ADDING:
        _exclude_team_files(top)
        if not (wt / ".git").exists():
            _add(top, wt, agent)
    root = agent_root(ws, agent)
    root.mkdir(parents=True, exist_ok=True)
    return root


def _add(top: Path, wt: Path, agent: str) -> None:
    """`git worktree add`: on the agent's branch if it exists, else a new one from HEAD."""
    wt.parent.mkdir(parents=True, exist_ok=True)
    _git(top, "worktree", "prune", check=False)  # a worktree folder deleted by hand
    branch = branch_of(agent)
    exists = _git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    if exists.returncode == 0:
        _git(top, "worktree", "add", str(wt), branch)
    else:
        _git(top, "worktree", "add", "-b", branch, str(wt), "HEAD")


def status(ws: Workspace, agent: str) -> WorktreeStatus | None:
    """The agent's branch and uncommitted changes; None if it has no worktree yet."""
    wt = ws.worktree_dir(agent)
    if not (wt / ".git").exists():
        return None
    changes = _git(wt, *_AGENTS, "status", "--porcelain", check=False).stdout.splitlines()
    top = repo_root(ws.root) or ws.root
    ahead = _git(top, "rev-list", "--count", f"HEAD..{branch_of(agent)}", check=False)
    count = int(ahead.stdout.strip()) if ahead.returncode == 0 and ahead.stdout.strip() else 0
    return WorktreeStatus(branch_of(agent), len(changes), count)


def commit_all(path: Path, agent: str, message: str) -> str | None:
    """Commit everything in the worktree at `path` as `agent`; the commit id, or None if
    there was nothing to commit."""
    _git(path, *_AGENTS, "add", "-A")
    if _git(path, *_AGENTS, "diff", "--cached", "--quiet", check=False).returncode == 0:
        return None
    _git(
        path,
        *_AGENTS,
        "-c",
        f"user.name={agent}",
        "-c",
        f"user.email={agent}@team.invalid",
        "commit",
        "--quiet",
        "--no-verify",
        "-m",
        message,
    )
    return _git(path, "rev-parse", "--short", "HEAD").stdout.strip()


def merge(ws: Workspace, agent: str) -> str:
    """Merge `team/<agent>` into the main checkout's current branch; one line on success.

    Raises:
        WorktreeError: not a repository, no such branch, uncommitted changes in the
            agent's worktree or in the main checkout, or a conflict (the merge is aborted,
            so nothing changes).
    """
    top = require_repo(ws)
    branch = branch_of(agent)
    if _git(
        top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False
    ).returncode:
        raise WorktreeError(f"{agent} has no branch {branch} yet (it has not worked here)")
    st = status(ws, agent)
    if st is not None and st.changes:
        raise WorktreeError(
            f"{agent}'s worktree has {st.changes} uncommitted change(s); nothing was merged "
            f"(commit them in {ws.worktree_dir(agent)}, or let {agent} finish its task)"
        )
    dirty = _git(top, "status", "--porcelain", "--untracked-files=no", check=False).stdout
    if dirty.strip():
        n = len(dirty.splitlines())
        raise WorktreeError(
            f"{top} has {n} uncommitted change(s); commit or stash them before merging {agent}"
        )
    if st is not None and st.ahead == 0:
        return f"nothing to merge: {branch} has no commits that are not already here"
    r = _git(
        top,
        "-c",
        "user.name=team",
        "-c",
        "user.email=team@team.invalid",
        "merge",
        "--no-ff",
        "--no-edit",
        "-m",
        f"team: merge {agent}'s work ({branch})",
        branch,
        check=False,
    )
    if r.returncode == 0:
        return f"merged {branch} ({st.ahead if st else '?'} commit(s)) into {_current(top)}"
    conflicted = _git(top, "diff", "--name-only", "--diff-filter=U", check=False).stdout.split()
    if conflicted:
        _git(top, "merge", "--abort", check=False)
        raise WorktreeError(
            f"merging {branch} conflicts in {', '.join(conflicted)}; the merge was aborted and "
            f"nothing changed ({agent}'s work stays on {branch}: merge it by hand with "
            f"`git merge {branch}`)"
        )
    why = (r.stderr.strip() or r.stdout.strip()).splitlines()
    raise WorktreeError(f"git could not merge {branch}: {why[0] if why else 'unknown error'}")


def _current(top: Path) -> str:
    r = _git(top, "rev-parse", "--abbrev-ref", "HEAD", check=False)
    return r.stdout.strip() or "HEAD"


def _exclude_team_files(top: Path) -> None:
    """Keep .team/ and .transcripts/ out of `git status` without touching .gitignore."""
    r = _git(top, "rev-parse", "--git-path", "info/exclude", check=False)
    if r.returncode != 0:
        return
    path = Path(r.stdout.strip())
    if not path.is_absolute():
        path = top / path
    text = path.read_text() if path.exists() else ""
    missing = [p for p in IGNORED if p not in text.split()]
    if missing:
        path.parent.mkdir(parents=True, exist_ok=True)
        sep = "" if not text or text.endswith("\n") else "\n"
        path.write_text(text + sep + "".join(f"{p}\n" for p in missing))


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        r = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            env=_git_env(),
        )
    except FileNotFoundError:
        raise WorktreeError("git is not installed (worktree isolation needs it)") from None
    except subprocess.TimeoutExpired:
        raise WorktreeError(f"git {args[0]} took longer than {GIT_TIMEOUT:g}s") from None
    if check and r.returncode != 0:
        why = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise WorktreeError(f"git {args[0]} failed: {why[0] if why else r.returncode}")
    return r


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env
