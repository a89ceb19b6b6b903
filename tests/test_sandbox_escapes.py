"""Issue 24's escapes 1-4 and 6 (and 9), tried the way the review did, through the tools
with the real bubblewrap, and what a hostile agent tries next: each is refused. Escape 5
(racing the file tools) is test_sandbox_race.py; through a real `team up`,
test_sandbox_e2e.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_team
from redis_server import redis_binary
from test_sandbox import SECRET, bash, home, toolbox, workspace  # noqa: F401 (home: fixture)

from team.agents.runtime.reload import ConfigWatch, approve
from team.sandbox.bwrap import Sandbox
from team.tasks import TaskBoard
from team.workspace import worktrees
from team.workspace.places import Workspace

MALLORY = '\n[[agents]]\nname = "mallory"\nrole = "x"\nsandbox = "off"\n'


def refused(out: str) -> bool:
    return "Read-only file system" in out or "Permission denied" in out


# -- 1: the agent cannot change its own rules ------------------------------------------------


def test_team_toml_mcp_json_and_hook_scripts_are_read_only(tmp_path: Path, home: Path) -> None:  # noqa: F811
    ws = workspace(tmp_path, 'sandbox = "bwrap"', '[hooks]\ntask_completed = "./check.sh"\n')
    (ws.root / "check.sh").write_text("#!/bin/sh\nexit 0\n")
    (ws.root / "check.sh").chmod(0o755)
    (ws.root / ".mcp.json").write_text('{"mcpServers": {}}')
    box, _ = toolbox(ws)
    before = {p: p.read_bytes() for p in (ws.config_path, ws.root / ".mcp.json")}
    for command in (
        f"echo '{MALLORY}' >> team.toml",
        "sed -i s/x/y/ team.toml",  # a rename over it
        "mv team.toml t && echo moved",
        "echo 'env > leak' >> check.sh",
        "echo '{}' > .mcp.json",
    ):
        out = bash(box, command).content
        assert "[exit code 0]" not in out, (command, out)
    for path in ("team.toml", ".mcp.json", "check.sh"):
        r = box.run("write_file", {"path": path, "content": "x"})
        assert r.is_error and "managed by team" in r.content, r.content
    r = box.run("edit_file", {"path": "team.toml", "old_text": "coder", "new_text": "x"})
    assert r.is_error and "managed by team" in r.content
    assert {p: p.read_bytes() for p in before} == before
    assert (ws.root / "check.sh").read_text() == "#!/bin/sh\nexit 0\n"


def test_an_added_looser_agent_is_held_until_approved(tmp_path: Path) -> None:
    """Whatever could still write team.toml (the person, an unconfined tool): an added
    agent with sandbox = "off" is held with one warning; `approve` lets it in."""
    ws = workspace(tmp_path, 'sandbox = "bwrap"')
    running = ws.load_config()
    watch = ConfigWatch(ws.config_path)
    with ws.config_path.open("a") as f:
        f.write(MALLORY)
    change = watch.check(running)
    assert change is not None and change.added == [] and "held" in change.refused
    assert 'mallory (sandbox = "off")' in change.refused
    assert watch.check(running) is None  # one warning: nothing new, nothing said
    assert "approved team.toml" in approve(ws)
    change = watch.check(running)
    assert change is not None and change.refused is None and change.added == ["mallory"]
    # an approval is for that file only: a later edit is held again
    with ws.config_path.open("a") as f:
        f.write('\n[[agents]]\nname = "eve"\nrole = "x"\nnetwork = true\n')
    change = watch.check(change.config)
    assert change is not None and "eve (network = true)" in change.refused


# -- 2: hooks run confined, without the API key ---------------------------------------------


def test_hooks_run_confined_with_a_minimal_environment(
    tmp_path: Path,
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-real")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-not-real")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-not-real")
    hook = "./check.sh"
    ws = workspace(tmp_path, 'sandbox = "bwrap"', f'[hooks]\ntask_completed = "{hook}"\n')
    (ws.root / "check.sh").write_text(
        "#!/bin/sh\nenv > env.txt\ncat ~/.ssh/id_rsa >> env.txt\n"
        f"echo pwned > {home}/outside.txt\necho x >> check.sh\nexit 0\n"
    )
    (ws.root / "check.sh").chmod(0o755)
    box, _ = toolbox(ws, "bob")
    TaskBoard(ws.tasks_dir).create("x", owner="bob")
    assert not box.run("claim_task", {"task_id": 1}).is_error
    assert not box.run("complete_task", {"task_id": 1, "result": "done"}).is_error
    seen = (ws.root / "env.txt").read_text()
    assert "PATH=" in seen  # the hook did run
    for secret in ("sk-ant-not-real", "sk-other-not-real", "ghp-not-real", SECRET):
        assert secret not in seen
    assert not (home / "outside.txt").exists()
    assert (ws.root / "check.sh").read_text().count("echo x") == 1  # not appended to


def test_no_child_gets_the_keys(tmp_path: Path, home: Path, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-real")
    monkeypatch.setenv("MY_SERVICE_API_KEY", "svc-not-real")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-not-real")
    ws = workspace(tmp_path, 'sandbox = "bwrap"')
    box, _ = toolbox(ws)
    out = bash(box, "env; cat /proc/self/environ /proc/1/environ 2>/dev/null | tr '\\0' '\\n'")
    for secret in ("sk-ant-not-real", "svc-not-real", "xoxb-not-real"):
        assert secret not in out.content


# -- 3 and 9: .git read-only; worktree agents commit, planted hooks never run ----------------


def git(cwd: Path, *args: str) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def repo(tmp_path: Path, team: str) -> Workspace:
    ws = workspace(tmp_path, team)
    (ws.root / "app.py").write_text("print(1)\n")
    git(ws.root, "init", "-q", "-b", "main")
    git(ws.root, "add", ".")
    git(ws.root, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "first")
    return ws


PLANT = {
    "hook": "printf 'touch {m}' > {git}/hooks/pre-commit && chmod +x {git}/hooks/pre-commit",
    "hooksPath": "git config core.hooksPath /tmp",
    "fsmonitor": "git config core.fsmonitor 'touch {m}'",
    "pager": "git config core.pager 'touch {m}'",
    "commondir": "echo /tmp > {git}/commondir",
}


def test_git_config_and_hooks_are_read_only_in_the_shared_workspace(
    tmp_path: Path,
    home: Path,  # noqa: F811
) -> None:
    ws = repo(tmp_path, 'sandbox = "bwrap"')
    marker = tmp_path / "hook-ran"
    box, _ = toolbox(ws)
    for name, cmd in PLANT.items():
        out = bash(box, cmd.format(m=marker, git=".git")).content
        assert "[exit code 0]" not in out, (name, out)
    for path in (".git/hooks/pre-commit", ".git/config", ".git/info/attributes"):
        r = box.run("write_file", {"path": path, "content": "[core]\n\tpager = touch x\n"})
        assert r.is_error and "managed by team" in r.content
    # the person's own git: nothing planted runs
    (ws.root / "app.py").write_text("print(2)\n")
    git(ws.root, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qam", "mine")
    git(ws.root, "log", "-p")
    assert not marker.exists()


def test_a_worktree_agent_commits_and_merges_and_planted_hooks_never_run(
    tmp_path: Path,
    home: Path,  # noqa: F811
) -> None:
    ws = repo(tmp_path, 'sandbox = "bwrap"\nisolation = "worktree"')
    root = worktrees.ensure(ws, "alice")
    box, _ = toolbox(ws, root=root)
    assert box.sandbox.mode == "bwrap" and box.root == root.resolve()
    marker = tmp_path / "hook-ran"
    common = ws.root / ".git"
    gitdir = common / "worktrees" / "alice"
    plants = {k: v.format(m=marker, git=common) for k, v in PLANT.items()}
    plants["commondir"] = f"echo /tmp > {gitdir}/commondir"
    plants["dotgit"] = "echo 'gitdir: /tmp' > .git"
    plants["worktree-config"] = f"echo '[core]' > {gitdir}/config.worktree"
    for name, cmd in plants.items():
        out = bash(box, cmd).content
        assert "[exit code 0]" not in out, (name, out)
    out = bash(
        box,
        "echo 'print(3)' > app.py && git add -A && "
        "git -c user.name=alice -c user.email=a@x commit -qm 'alice works' && git log --oneline",
    ).content
    assert "alice works" in out and "[exit code 0]" in out, out
    r = run_team("merge", "alice", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    assert (ws.root / "app.py").read_text() == "print(3)\n"
    # the person's git, in the main checkout and in the worktree: nothing planted runs
    git(ws.root, "status")
    git(root, "status")
    git(ws.root, "log", "-p")
    assert not marker.exists()


# -- 4: no host Unix sockets without network ------------------------------------------------


@pytest.fixture
def unix_redis(tmp_path: Path):
    """redis-server on Unix sockets: outside the workspace, inside it, and in the host's /tmp."""
    ws_root = tmp_path / "ws"
    ws_root.mkdir(parents=True, exist_ok=True)
    socks = {
        "outside": tmp_path / "outside.sock",
        "inside": ws_root / "inside.sock",
        "tmp": Path(f"/tmp/team-test-{os.getpid()}-{time.monotonic_ns()}.sock"),
    }
    procs = []
    for name, sock in socks.items():
        d = tmp_path / f"redis-{name}"
        d.mkdir()
        procs.append(
            subprocess.Popen(
                [redis_binary(), "--port", "0", "--unixsocket", str(sock), "--dir", str(d)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    try:
        deadline = time.monotonic() + 20
        while not all(s.exists() for s in socks.values()):
            assert time.monotonic() < deadline, "redis-server did not make its sockets"
            time.sleep(0.05)
        yield socks
    finally:
        for p in procs:
            p.kill()
            p.wait()
        socks["tmp"].unlink(missing_ok=True)


SET = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "s.connect(sys.argv[1])\n"
    "s.sendall(b'SET k v\\r\\n')\n"
    "print(s.recv(100))\n"
)


def test_host_unix_sockets_cannot_be_reached(tmp_path: Path, home: Path, unix_redis) -> None:  # noqa: F811
    ws = workspace(tmp_path, 'sandbox = "bwrap"')
    (ws.root / "set.py").write_text(SET)
    box, _ = toolbox(ws)
    for name, sock in unix_redis.items():
        # the host can: the servers are up
        out = subprocess.run(
            [sys.executable, str(ws.root / "set.py"), str(sock)],
            text=True,
            capture_output=True,
            timeout=30,
        ).stdout
        assert "+OK" in out, name
        out = bash(box, f"python3 set.py {sock}").content
        assert "+OK" not in out and "[exit code 0]" not in out, (name, out)
    out = bash(box, "find /run/ /var/run/ -mindepth 1 | wc -l").content
    assert out.split()[0] == "0"
    # io_uring would make sockets without socket(2)
    out = bash(
        box,
        "python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); "
        "print(l.syscall(425, 8, ctypes.create_string_buffer(120)), ctypes.get_errno())'",
    ).content
    assert out.split()[:2] == ["-1", "13"], out  # EACCES: the filter's, not the kernel's


# -- 6: memory_mb counts tmpfs ------------------------------------------------------------------


def test_tmpfs_is_bounded_by_memory_mb(tmp_path: Path, home: Path) -> None:  # noqa: F811
    ws = workspace(tmp_path, 'sandbox = "bwrap"', "[limits]\nmemory_mb = 256\n")
    box, _ = toolbox(ws)
    for where in ("/dev/shm", "/run", "/dev"):
        out = bash(
            box, f"head -c 1G /dev/zero > {where}/big; ls -l {where}/big; du -m {where}/big"
        ).content
        assert "No space left" in out or "Read-only" in out, (where, out)
        sizes = [int(w) for w in out.split() if w.isdigit()]
        assert all(s <= 256 * 1024 * 1024 for s in sizes), out
    hook_box = Sandbox.for_hooks(ws, ws.load_config())  # its /tmp is a tmpfs too
    from team.agents.tools.shell import run_command

    r = run_command(
        "head -c 1G /dev/zero > /tmp/big", ws.root, timeout=60, output_cap=2000, sandbox=hook_box
    )
    assert "No space left" in r.output, r.output


# -- what a hostile agent tries next --------------------------------------------------------


def test_what_a_hostile_agent_tries_next(tmp_path: Path, home: Path) -> None:  # noqa: F811
    ws = workspace(tmp_path, 'sandbox = "bwrap"')
    ws.transcripts_dir("alice").mkdir(parents=True)
    box, _ = toolbox(ws)
    probes = {
        # kernel settings are not namespaced: as root, core_pattern runs on the host
        "sysctl": "echo '|/bin/sh -c id' > /proc/sys/kernel/core_pattern",
        "sysrq": "echo b > /proc/sysrq-trigger",
        "userns": "unshare -U -r true",
        "setuid": "su -c id root </dev/null",
        "mount": "mount -t tmpfs none /mnt",
        "cgroup": "mkdir /sys/fs/cgroup/team-escape",
        "transcripts": "ln -sfn .transcripts/alice t && echo x > t/forged.jsonl",
        "dotteam": "ln -sfn .team/inbox l && mkdir -p l/alice/new && echo x > l/alice/new/m",
    }
    for name, cmd in probes.items():
        out = bash(box, cmd).content
        assert "[exit code 0]" not in out, (name, out)
    assert Path("/proc/sys/kernel/core_pattern").read_text().strip() != "|/bin/sh -c id"
    bash(box, "ln -sfn .transcripts/alice t2")
    r = box.run("write_file", {"path": "t2/forged.jsonl", "content": "{}"})
    assert r.is_error and "managed by team" in r.content
    assert list(ws.transcripts_dir("alice").iterdir()) == []
    out = bash(box, "grep -E 'NoNewPrivs|CapEff' /proc/self/status").content
    assert "NoNewPrivs:\t1" in out and "CapEff:\t0000000000000000" in out
    assert (
        "managed by team" in box.run("write_file", {"path": ".mcp.json", "content": "{}"}).content
    )
    assert json.loads("{}") == {}
