"""The sandbox around `bash`: bubblewrap with a write scope, hidden secrets, no network.

A sandboxed command sees the whole filesystem read-only, except its writable root (the
workspace, or the agent's worktree); paths that must not be written (`.team/`,
`.transcripts/`, other agents' worktrees) stay read-only even inside that root; the
`deny_read` paths are replaced by empty, unreadable stand-ins; `/tmp` is a private
tmpfs; there is no network unless `network = true`; it holds no capabilities, and it
runs in its own PID namespace, so killing bubblewrap kills everything the command
started. The file tools check the same `Scope` (see fs_tools), so the two ways to the
disk agree. What this does not cover is in `docs/design.md` (Safety) and the README.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from team.core.errors import UserError
from team.sandbox import limits, rules, seccomp
from team.workspace.config import LimitsConfig, TeamConfig
from team.workspace.places import Workspace

Mode = Literal["bwrap", "off"]

# Secrets a command has no business reading. Shell and REPL histories hold pasted
# tokens as often as the files meant for them do.
DEFAULT_DENY_READ = (
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.gnupg",
    "~/.netrc",
    "~/.docker/config.json",
    "~/.git-credentials",
    "~/.bash_history",
    "~/.zsh_history",
    "~/.histfile",
    "~/.local/share/fish/fish_history",
    "~/.python_history",
    "~/.node_repl_history",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.sqlite_history",
)


class SandboxError(UserError):
    """The sandbox was asked for and cannot start here; the line names the setting."""


@dataclass(frozen=True)
class Scope:
    """Where one agent's commands and file tools may write and what they may not read.

    Args:
        root: the writable root (the workspace, or the agent's worktree).
        protected: paths never written, even inside `root` (`.team/`, `.transcripts/`,
            other agents' worktrees).
        deny_read: paths never read (files or folders), wherever they are.
        tmp: the folder a sandboxed command sees as /tmp (kept between the agent's
            commands, shared with no one); None gives each command an empty tmpfs.
        writable: folders outside `root` a command may write too (the git objects, refs
            and worktree entry a worktree agent commits with: team.sandbox.rules).
        shown: folders under /tmp a command reads (the virtualenv a server runs from),
            bound read-only over the private /tmp that would hide them.
    """

    root: Path
    protected: tuple[Path, ...] = ()
    deny_read: tuple[Path, ...] = ()
    tmp: Path | None = None
    writable: tuple[Path, ...] = ()
    shown: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Availability:
    """Whether bubblewrap works on this machine, and why not when it does not."""

    bwrap: str | None
    problem: str | None = None

    @property
    def usable(self) -> bool:
        return self.bwrap is not None and self.problem is None


def detect(path: str | None = None) -> Availability:
    """Find bwrap on `path` (default $PATH) and check that it can make a sandbox here."""
    exe = shutil.which("bwrap", path=path)
    if exe is None:
        return Availability(None, "bubblewrap (bwrap) is not installed")
    return Availability(exe, _probe(exe))


@functools.cache
def _probe(exe: str) -> str | None:
    """None when a minimal sandbox starts, else bwrap's own words for why not."""
    try:
        r = subprocess.run(
            _confined([*_base_args(exe, network=False), "true"], network=False),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{exe} cannot run: {e}"
    if r.returncode == 0:
        return None
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    why = lines[-1] if lines else f"exit code {r.returncode}"
    return f"{exe} cannot make a sandbox here ({why}; are user namespaces disabled?)"


def mode_for(config: TeamConfig, agent: str, avail: Availability) -> Mode:
    """The mode `agent` gets. Raises SandboxError when "bwrap" was asked for and cannot
    work: never a silent fallback to unconfined commands."""
    setting = config.agent(agent).sandbox or config.team.sandbox
    if setting == "off":
        return "off"
    if avail.usable:
        return "bwrap"
    if setting == "bwrap":
        where = "[team]" if config.agent(agent).sandbox is None else f"agent {agent}"
        raise SandboxError(
            f'sandbox = "bwrap" ({where}) but {avail.problem}: install bubblewrap, or '
            'set sandbox = "auto" or "off" in team.toml'
        )
    return "off"


def preflight(config: TeamConfig, avail: Availability) -> str | None:
    """Check every agent before `team up` starts any; returns the one warning to print
    when "auto" leaves some agents' commands unconfined."""
    loose = [a for a in config.names() if mode_for(config, a, avail) == "off"]
    auto = [a for a in loose if (config.agent(a).sandbox or config.team.sandbox) == "auto"]
    if not auto:
        return None
    who = "every agent" if len(auto) == len(config.names()) else ", ".join(auto)
    return (
        f"warning: commands are NOT confined ({who}): {avail.problem}. Install "
        'bubblewrap, or set sandbox = "off" in team.toml to say that is intended.'
    )


def network_for(config: TeamConfig, agent: str) -> bool:
    own = config.agent(agent).network
    return config.team.network if own is None else own


def deny_paths(config: TeamConfig, root: Path) -> tuple[Path, ...]:
    """The built-in secrets, the team's `deny_read`, and `.env` files above `root` and
    in the home folder (one inside the workspace is the project's own)."""
    home = Path.home()
    out: list[Path] = []
    for spec in (*DEFAULT_DENY_READ, *config.team.deny_read):
        p = Path(spec).expanduser()
        out.append(p if p.is_absolute() else root / p)
    if hist := os.environ.get("HISTFILE"):
        out.append(Path(hist).expanduser())
    out += [d / ".env" for d in (home, *root.resolve().parents) if not d.is_relative_to(root)]
    seen: dict[Path, None] = {}
    for p in out:
        seen.setdefault(_real(p), None)
    return tuple(seen)


def _real(p: Path) -> Path:
    return p.resolve() if p.exists() or p.is_symlink() else p.absolute()


@dataclass
class Sandbox:
    """How one agent's `bash` commands are started. `bwrap=None` means unconfined."""

    scope: Scope
    bwrap: str | None = None
    network: bool = False
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    cgroup_base: Path | None = None

    @property
    def mode(self) -> Mode:
        return "off" if self.bwrap is None else "bwrap"

    @classmethod
    def for_agent(
        cls,
        ws: Workspace,
        config: TeamConfig,
        agent: str,
        *,
        root: Path | None = None,
        protected: tuple[Path, ...] | None = None,
        avail: Availability | None = None,
    ) -> Sandbox:
        """The sandbox `config` gives `agent`: writable `root` (default the workspace),
        never writing `protected` (default `.team/` and `.transcripts/`) nor the team's
        rules and git's configuration (team.sandbox.rules)."""
        root = (root or ws.root).resolve()
        protected = ws.protected if protected is None else protected
        git = rules.git_paths(root)
        protected = (*protected, *rules.rule_files(ws, config), *git.readonly)
        mode = mode_for(config, agent, avail or detect())
        if mode == "off":  # as before the sandbox existed: only the file tools' own guard
            return cls(Scope(root, tuple(protected)))
        tmp = ws.agent_tmp(agent)
        scope = Scope(root, tuple(protected), deny_paths(config, root), tmp, git.writable)
        return cls(
            scope,
            bwrap=(avail or detect()).bwrap,
            network=network_for(config, agent),
            limits=config.limits,
            cgroup_base=limits.pids_cgroup_base() if os.geteuid() == 0 else None,
        )

    @classmethod
    def for_hooks(
        cls, ws: Workspace, config: TeamConfig, *, avail: Availability | None = None
    ) -> Sandbox:
        """The sandbox `[hooks]` commands run in: the team's own mode (`[team] sandbox`,
        no agent's), writable as the shared workspace is for an agent, the rules and
        `.git` read-only (a hook that could rewrite itself would be the agent's), the
        team's network setting, the same limits; an empty /tmp each time."""
        root = ws.root.resolve()
        git = rules.git_paths(root)
        protected = (*ws.protected, *rules.rule_files(ws, config), *git.readonly)
        setting = config.team.sandbox
        avail = avail or detect() if setting != "off" else None
        if avail is None or (setting == "auto" and not avail.usable):
            return cls(Scope(root, protected))
        if not avail.usable:
            raise SandboxError(f'sandbox = "bwrap" ([team]) but {avail.problem}')
        return cls(
            Scope(root, protected, deny_paths(config, root), None, git.writable),
            bwrap=avail.bwrap,
            network=config.team.network,
            limits=config.limits,
            cgroup_base=limits.pids_cgroup_base() if os.geteuid() == 0 else None,
        )

    @contextlib.contextmanager
    def argv(self, command: str) -> Iterator[list[str]]:
        """The argv that runs `command` (bash text) under this sandbox."""
        shell = shutil.which("bash") or "/bin/sh"
        if self.bwrap is None:
            yield [shell, "-c", command]
            return
        rl = limits.Rlimits.of(self.limits)
        inner = [shell, "-c", rl.prelude(), "bash", command]
        if self.scope.tmp is not None:
            self.scope.tmp.mkdir(parents=True, exist_ok=True)
        shm = self.limits.memory_mb * 1024 * 1024
        base = _base_args(self.bwrap, network=self.network, tmp=self.scope.tmp, shm=shm)
        argv = _confined([*base, *self._mounts(), "--", *inner], network=self.network)
        with limits.pids_cgroup(self.cgroup_base, rl.processes) as procs:
            yield argv if procs is None else limits.join_argv(procs, argv)

    def _mounts(self) -> list[str]:
        s = self.scope
        ops: list[tuple[Path, int, list[str]]] = []  # (path, order at equal depth, args)
        home = Path.home().resolve()
        for p in (home, *s.shown):
            if p.is_relative_to("/tmp") and p.is_dir():
                ops.append((p, 0, ["--ro-bind", str(p), str(p)]))  # private /tmp hid it
        ops.append((s.root, 1, ["--bind", str(s.root), str(s.root)]))
        for p in s.writable:
            if p.is_dir():
                ops.append((p, 1, ["--bind", str(p), str(p)]))
        for p in s.protected:
            if p.exists():
                real = str(p.resolve())
                ops.append((Path(real), 2, ["--ro-bind", real, real]))
        shown = (s.root, home, *s.shown)
        for p in s.deny_read:
            if p.is_relative_to("/tmp") and not any(p.is_relative_to(d) for d in shown):
                continue  # the private /tmp hides it already
            if p.is_dir():
                ops.append((p, 3, ["--perms", "0000", "--tmpfs", str(p), "--remount-ro", str(p)]))
            elif p.exists():
                # a device node bound without --dev-bind cannot be opened: EACCES
                ops.append((p, 3, ["--ro-bind", "/dev/null", str(p)]))
        # parents before children, so a path inside another mount overrides it
        ops.sort(key=lambda op: (len(op[0].parts), op[1]))
        out = ["--chdir", str(s.root)]
        for _, _, args in ops:
            out += args
        return out

    def describe(self) -> str:
        """One line for `team check`."""
        if self.bwrap is None:
            return "off (commands run unconfined, as you)"
        if self.network:
            net = "network on"
        elif seccomp.program() is not None:
            net = "no network, no Unix sockets"
        else:
            net = "no network (Unix sockets NOT filtered on this machine)"
        return f"bwrap ({self.bwrap}), {net}"


def program_home(exe: str) -> Path:
    """The folder a program needs to run: its virtualenv when it is in one, else its own."""
    where = Path(exe).parent.resolve()  # a venv's bin/python links out of the venv: not it
    for folder in (where, *list(where.parents)[:2]):
        if (folder / "pyvenv.cfg").is_file():
            return folder
    return where


# /run holds the host's sockets (D-Bus, Docker, systemd): a command gets an empty one
_RUN_BYTES = 1024 * 1024


def _base_args(
    exe: str, *, network: bool, tmp: Path | None = None, shm: int = 64 * 1024 * 1024
) -> list[str]:
    # --unshare-all: user (when possible), ipc, pid, net, uts, cgroup namespaces.
    # --cap-drop ALL: as root bwrap would keep its capabilities, and CAP_SYS_ADMIN
    # could simply remount the read-only paths writable.
    args = [exe, "--die-with-parent", "--unshare-all", *_userns_args(exe), "--cap-drop", "ALL"]
    if network:
        args.append("--share-net")
    args += ["--ro-bind", "/", "/", "--proc", "/proc"]
    # /proc/sys is the kernel's, not the namespace's: as root, core_pattern and the
    # like would be writable from inside (a command run on the host's next crash)
    args += ["--ro-bind", "/proc/sys", "/proc/sys"]
    # /dev/shm and /run are tmpfs of a bounded size (a tmpfs is memory that no rlimit
    # counts), and /dev itself read-only, so no file outside them holds memory either
    args += ["--dev", "/dev", "--size", str(shm), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    for run in ("/run", "/var/run"):
        if Path(run).is_dir() and not Path(run).is_symlink():
            args += ["--size", str(_RUN_BYTES), "--tmpfs", run]
    if tmp is None:
        return [*args, "--size", str(shm), "--tmpfs", "/tmp"]
    return [*args, "--bind", str(tmp), "/tmp"]


def _confined(argv: list[str], *, network: bool) -> list[str]:
    """`argv` (bubblewrap's) with the seccomp filter that refuses Unix sockets, when the
    command has no network and the machine has a filter (team.sandbox.seccomp)."""
    path = None if network else seccomp.filter_file()
    if path is None:
        return argv
    exe, *rest = argv
    return seccomp.wrap(path, [exe, "--seccomp", str(seccomp.FD), *rest])


@functools.cache
def _userns_args(exe: str) -> tuple[str, ...]:
    """A user namespace in which no further one can be made (`--disable-userns`, from
    bubblewrap 0.8), where this bubblewrap and kernel can; else none (as before)."""
    want = ("--unshare-user", "--disable-userns")
    try:
        r = subprocess.run(
            [exe, *want, "--ro-bind", "/", "/", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return want if r.returncode == 0 else ()


def summary(ws: Workspace, config: TeamConfig, avail: Availability) -> list[str]:
    """What `team check` says about confinement: the mode each agent gets (agents that
    share one are listed together) and, when anything is sandboxed, the limits."""
    by_line: dict[str, list[str]] = {}
    boxes = [Sandbox.for_agent(ws, config, a, avail=avail) for a in config.names()]
    for name, box in zip(config.names(), boxes, strict=True):
        line = box.describe()
        if box.bwrap is None and (config.agent(name).sandbox or config.team.sandbox) == "auto":
            line = f"auto, but commands are NOT confined: {avail.problem}"
        by_line.setdefault(line, []).append(name)
    if len(by_line) == 1:
        lines = [f"sandbox: {next(iter(by_line))}"]
    else:
        lines = [f"sandbox for {', '.join(names)}: {line}" for line, names in by_line.items()]
    if any(box.bwrap for box in boxes):
        base = next(box.cgroup_base for box in boxes if box.bwrap)
        lines.append(f"limits per command: {limits.describe(config.limits, base)}")
    return lines
