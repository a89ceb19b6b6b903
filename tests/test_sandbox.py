"""The sandbox through the tools, against the real bubblewrap: what it refuses, its limits,
its audit trail, and `off` / `auto` when bubblewrap is missing."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from team.agents.tools.toolbox import Toolbox, ToolResult
from team.core.events import AuditEvent, MemorySink
from team.sandbox.bwrap import (
    Availability,
    Sandbox,
    SandboxError,
    detect,
    mode_for,
    preflight,
)
from team.tasks import TaskBoard
from team.teamwork import Crew
from team.workspace.config import parse_config
from team.workspace.places import Workspace

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key"
SMALL_LIMITS = "[limits]\nprocesses = 32\nmemory_mb = 200\ncpu_s = 1\nfile_mb = 1\noutput_mb = 1\n"


@pytest.fixture(autouse=True, scope="module")
def _bwrap_works() -> None:
    avail = detect()
    if not avail.usable:
        pytest.fail(f"these tests need a working bubblewrap: {avail.problem} (scripts/test)")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A test HOME with a planted key, a history, and a harmless file."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    (home / ".bash_history").write_text("export TOKEN=hunter2\n")
    (home / "notes.txt").write_text("just notes\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("HISTFILE", raising=False)
    return home


def workspace(tmp_path: Path, team: str = "", extra: str = "") -> Workspace:
    root = tmp_path / "ws"
    root.mkdir(parents=True, exist_ok=True)
    text = f'[team]\nname = "t"\n{team}\n{extra}\n'
    text += '[[agents]]\nname = "alice"\nrole = "coder"\n'
    text += '[[agents]]\nname = "bob"\nrole = "tester"\n'
    (root / "team.toml").write_text(text)
    return Workspace.at(root)


def toolbox(ws: Workspace, agent: str = "alice", **kw: object) -> tuple[Toolbox, MemorySink]:
    sink = MemorySink()
    config = ws.load_config()
    box = Toolbox(Crew(ws, config, TaskBoard(ws.tasks_dir), sink), agent, **kw)  # type: ignore[arg-type]
    return box, sink


def bash(box: Toolbox, command: str) -> ToolResult:
    return box.run("bash", {"command": command})


def still_works(box: Toolbox) -> None:
    """The team goes on: the next command of the same agent runs normally."""
    out = bash(box, "echo still here").content
    assert "still here" in out and "[exit code 0]" in out


# -- the write scope ----------------------------------------------------------------------


def test_commands_write_only_inside_the_workspace(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path)
    ws.team_dir.mkdir()
    ws.transcripts_root.mkdir()
    box, _ = toolbox(ws)
    assert box.sandbox.mode == "bwrap"
    out = bash(box, "echo x > inside.txt && echo wrote").content
    assert "wrote" in out and (ws.root / "inside.txt").read_text() == "x\n"
    for target in ["~/outside.txt", ".team/evil.json", ".transcripts/evil.jsonl", "/etc/evil"]:
        out = bash(box, f"echo pwned > {target}").content
        assert "Read-only file system" in out and "[exit code 1]" in out, target
    assert not (home / "outside.txt").exists() and not Path("/etc/evil").exists()
    assert not (ws.team_dir / "evil.json").exists()
    assert not (ws.transcripts_root / "evil.jsonl").exists()
    # the workspace sits in /tmp here, so its parent is the agent's private /tmp
    bash(box, "echo pwned > ../outside.txt")
    assert not (tmp_path / "outside.txt").exists()
    # nor through a symlink, nor by remounting: the sandbox holds no capabilities
    (ws.root / "teamlink").symlink_to(ws.team_dir)
    assert "Read-only" in bash(box, "touch teamlink/x").content
    out = bash(box, "mount -o remount,rw .team; touch .team/x").content
    assert not (ws.team_dir / "x").exists(), out
    still_works(box)


def test_file_tools_keep_the_same_scope(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path, 'deny_read = ["secrets"]')
    (ws.root / "secrets").mkdir()
    (ws.root / "secrets" / "prod.key").write_text("k3y")
    box, sink = toolbox(ws)
    for path in [".team/tasks/9.json", ".transcripts/alice/x.jsonl"]:
        res = box.run("write_file", {"path": path, "content": "{}"})
        assert res.is_error and "managed by team" in res.content
    for tool, inp in [
        ("read_file", {"path": "secrets/prod.key"}),
        ("write_file", {"path": "secrets/new.key", "content": "x"}),
    ]:
        res = box.run(tool, inp)
        assert res.is_error and "deny_read" in res.content, res.content
    # and bash agrees: the folder is there, its content is not
    out = bash(box, "cat secrets/prod.key; ls secrets").content
    assert "k3y" not in out and "Permission denied" in out
    refused = [e for e in sink.of(AuditEvent) if e.outcome == "refused"]
    assert [e.target for e in refused] == [
        ".team/tasks/9.json",
        ".transcripts/alice/x.jsonl",
        "secrets/new.key",
    ]


def test_another_agents_worktree_is_not_writable(tmp_path: Path, home: Path) -> None:
    """The sandbox takes the writable root and the paths never written as parameters:
    an agent whose root is its own worktree cannot write a teammate's."""
    ws = workspace(tmp_path)
    trees = ws.team_dir / "worktrees"
    (trees / "alice").mkdir(parents=True)
    (trees / "bob").mkdir(parents=True)
    protected = (*ws.protected, trees / "bob")
    sandbox = Sandbox.for_agent(
        ws, ws.load_config(), "alice", root=trees / "alice", protected=protected
    )
    box, _ = toolbox(ws, sandbox=sandbox)
    out = bash(box, "pwd; echo mine > a.txt; echo theirs > ../bob/b.txt").content
    assert out.splitlines()[0] == str(trees / "alice")
    assert (trees / "alice" / "a.txt").read_text() == "mine\n"
    assert "Read-only" in out and not (trees / "bob" / "b.txt").exists()
    res = box.run("write_file", {"path": "../bob/b.txt", "content": "theirs"})
    assert res.is_error and not (trees / "bob" / "b.txt").exists()
    assert not box.run("write_file", {"path": "a.txt", "content": "ok"}).is_error


def test_tmp_is_private_to_the_agent(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path)
    alice, _ = toolbox(ws, "alice")
    bob, _ = toolbox(ws, "bob")
    marker = f"team-sandbox-test-{os.getpid()}"
    assert "[exit code 0]" in bash(alice, f"echo a > /tmp/{marker}").content
    assert "a" in bash(alice, f"cat /tmp/{marker}").content  # kept between its commands
    assert "No such file" in bash(bob, f"cat /tmp/{marker}").content
    assert not Path("/tmp", marker).exists()


# -- deny_read ----------------------------------------------------------------------------


def test_a_planted_ssh_key_cannot_be_read(tmp_path: Path, home: Path) -> None:
    ws = workspace(home / "code")  # in HOME, so that its parent is not the private /tmp
    (home / "code" / ".env").write_text("AWS_SECRET=above")  # a .env above the workspace
    (ws.root / ".env").write_text("LOCAL=ok")  # the project's own
    box, _ = toolbox(ws)
    out = bash(box, "cat ~/.ssh/id_rsa; ls ~/.ssh; cat ~/.bash_history; cat ../.env").content
    assert "OPENSSH" not in out and "hunter2" not in out and "above" not in out
    assert out.count("Permission denied") == 4, out
    out = bash(box, "cat ~/notes.txt .env").content  # the rest of HOME stays readable
    assert "just notes" in out and "LOCAL=ok" in out
    still_works(box)


# -- network ------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[int]:
    """A TCP server on loopback that answers every connection with 'hello'."""
    sock = socket.create_server(("127.0.0.1", 0))
    sock.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"hello\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield sock.getsockname()[1]
    done.set()
    t.join(5)
    sock.close()


def connect(port: int) -> str:
    return f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -n1 <&3"


def test_no_network_unless_network_is_true(tmp_path: Path, home: Path, server: int) -> None:
    extra = '[[agents]]\nname = "carol"\nrole = "fetcher"\nnetwork = true\n'
    ws = workspace(tmp_path, extra=extra)
    alice, _ = toolbox(ws, "alice")
    out = bash(alice, connect(server)).content
    assert "hello" not in out and "Connection refused" in out
    still_works(alice)
    carol, _ = toolbox(ws, "carol")  # the agent's own setting overrides the team's
    assert "hello" in bash(carol, connect(server)).content


# -- limits -------------------------------------------------------------------------------


def test_a_fork_bomb_fails_that_command_only(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path, extra=SMALL_LIMITS)
    box, _ = toolbox(ws, bash_timeout=20.0)
    # the sleep keeps the sandbox up while the bomb runs into the limit (the sandbox
    # ends, and kills the bomb, when its first shell exits)
    res = bash(box, ":(){ :|:& };:; sleep 1")
    assert "Resource temporarily unavailable" in res.content  # the limit, not the timeout
    still_works(box)


def test_a_memory_hog_fails_that_command_only(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path, extra=SMALL_LIMITS)
    box, _ = toolbox(ws)
    res = bash(box, "python3 -c 'b = bytearray(1 << 30); print(\"got a gigabyte\")'")
    assert "MemoryError" in res.content and "got a gigabyte" not in res.content
    assert "[exit code 1]" in res.content
    still_works(box)


def test_cpu_file_size_and_output_limits(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path, extra=SMALL_LIMITS)
    box, sink = toolbox(ws, bash_timeout=60.0)
    spin = bash(box, "while :; do :; done").content  # 1 s of CPU, then SIGXCPU
    assert "[exit code 152]" in spin
    big = bash(box, "head -c 3000000 /dev/zero > big.bin").content
    assert "File size limit exceeded" in big or "[exit code 153]" in big
    assert (ws.root / "big.bin").stat().st_size <= 1024 * 1024
    res = bash(box, "yes")
    assert res.is_error and "1 MiB output limit" in res.content
    assert [e.outcome for e in sink.of(AuditEvent) if e.outcome != "started"] == [
        "failed",
        "failed",
        "output_limit",
    ]
    still_works(box)


# -- audit --------------------------------------------------------------------------------


def test_every_command_and_write_is_audited(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path)
    box, sink = toolbox(ws, bash_timeout=1.0)
    bash(box, "echo hello")
    bash(box, "exit 4")
    bash(box, "sleep 30")
    box.run("write_file", {"path": "a.txt", "content": "12345"})
    box.run("edit_file", {"path": "a.txt", "old_text": "345", "new_text": "3456789"})
    box.run("read_file", {"path": "a.txt"})  # reads are not writes: not audited
    rows = sink.of(AuditEvent)
    got = [(e.tool, e.target, e.outcome, e.exit_code, e.bytes) for e in rows]
    assert got == [  # each command's row before it runs, then its outcome's
        ("bash", "echo hello", "started", None, 0),
        ("bash", "echo hello", "ok", 0, 6),
        ("bash", "exit 4", "started", None, 0),
        ("bash", "exit 4", "failed", 4, 0),
        ("bash", "sleep 30", "started", None, 0),
        ("bash", "sleep 30", "timeout", None, 0),
        ("write_file", "a.txt", "ok", None, 5),
        ("edit_file", "a.txt", "ok", None, 9),
    ]
    assert all(e.agent == "alice" and e.sandbox == "bwrap" for e in rows)
    assert rows[5].duration_s >= 1.0


# -- modes --------------------------------------------------------------------------------


def test_off_behaves_as_before(tmp_path: Path, home: Path, server: int) -> None:
    ws = workspace(tmp_path, 'sandbox = "off"')
    box, sink = toolbox(ws)
    assert box.sandbox.mode == "off"
    out = bash(box, f"echo x > ../outside.txt; cat ~/.ssh/id_rsa; {connect(server)}").content
    assert (tmp_path / "outside.txt").exists()
    assert "OPENSSH" in out and "hello" in out
    assert [e.sandbox for e in sink.of(AuditEvent)] == ["off", "off"]


def test_modes_without_bwrap(tmp_path: Path) -> None:
    """Without bubblewrap, simulated through the seam that finds it: a PATH without it."""
    (tmp_path / "bin").mkdir()
    missing = detect(path=str(tmp_path / "bin"))
    assert not missing.usable and "not installed" in (missing.problem or "")
    ws = workspace(tmp_path)
    config = ws.load_config()
    assert mode_for(config, "alice", missing) == "off"
    warning = preflight(config, missing)
    assert warning and "NOT confined" in warning and "\n" not in warning
    explicit = parse_config(
        {
            "team": {"sandbox": "bwrap"},
            "agents": [{"name": "alice", "role": "r"}, {"name": "bob", "role": "r"}],
        }
    )
    with pytest.raises(SandboxError, match=r'sandbox = "bwrap" .*not installed.*"off"'):
        preflight(explicit, missing)
    broken = Availability("/usr/bin/bwrap", "bwrap: setting up uid map: Permission denied")
    with pytest.raises(SandboxError, match="uid map"):
        Sandbox.for_agent(ws, explicit, "alice", avail=broken)


def test_a_bwrap_that_cannot_sandbox_is_named(tmp_path: Path) -> None:
    """bwrap present but unable (user namespaces off): its own words, in one line."""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    broken = detect(path=str(fake.parent))
    assert broken.bwrap == str(fake) and not broken.usable
    assert "No permissions to creating new namespace" in (broken.problem or "")
    ws = workspace(tmp_path, 'sandbox = "bwrap"')
    with pytest.raises(SandboxError) as e:
        preflight(ws.load_config(), broken)
    assert "\n" not in str(e.value) and "No permissions" in str(e.value)
