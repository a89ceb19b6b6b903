"""The sandbox through `team up`: a scripted agent (the real SDK against the local fake
server) tries what it must not, each attempt is refused, the team finishes, and
`team audit` lists every command. Then `auto` and `bwrap` on a machine without bwrap."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import run_team
from fakeapi import FakeMessagesAPI, ScriptedResponder
from teamrun import assign, check_every_task_completed, make_workspace, start_up

from team.sandbox.bwrap import detect
from team.workspace.places import Workspace

MODEL = "claude-sonnet-4-5"

pytestmark = pytest.mark.slow
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- planted"


def tool_use(prefix: str, *calls: tuple[str, dict]) -> dict:
    """One reply calling `calls`; their ids are toolu_<prefix><i> (unique per reply)."""
    blocks = [
        {"type": "tool_use", "id": f"toolu_{prefix}{i}", "name": name, "input": inp}
        for i, (name, inp) in enumerate(calls)
    ]
    return {"content": blocks, "stop_reason": "tool_use"}


def tool_results(api: FakeMessagesAPI) -> dict[str, str]:
    """Each tool result as first sent, by tool_use id (later requests may carry
    micro-compaction's placeholders instead)."""
    out: dict[str, str] = {}
    for req in api.requests:
        for m in req["messages"]:
            if isinstance(m["content"], list):
                for b in m["content"]:
                    if b.get("type") == "tool_result":
                        c = b["content"]
                        text = c if isinstance(c, str) else json.dumps(c)
                        out.setdefault(b["tool_use_id"], text)
    return out


def one_agent_workspace(root: Path, team: str = "", extra: str = "") -> Workspace:
    root.mkdir(parents=True, exist_ok=True)
    (root / "team.toml").write_text(
        f'[team]\nname = "e2e"\nmodel = "{MODEL}"\n{team}\n{extra}\n'
        '[[agents]]\nname = "alice"\nrole = "coder"\n'
    )
    return Workspace.at(root)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    return home


@pytest.fixture
def port() -> int:
    """A local server the sandboxed commands must not reach."""
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
                conn.sendall(b"hello from the host\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield sock.getsockname()[1]
    done.set()
    t.join(5)
    sock.close()


def test_each_attempt_is_refused_and_the_team_goes_on(tmp_path: Path, home: Path, port: int):
    assert detect().usable, "needs a working bubblewrap (scripts/test installs it)"
    limits = "[limits]\nprocesses = 32\nmemory_mb = 200\n"
    ws = one_agent_workspace(home / "code" / "ws", 'sandbox = "bwrap"', limits)
    commands = {
        "outside": "echo pwned > ~/outside.txt",
        "team": "echo '{}' > .team/tasks/99.json",
        "key": "cat ~/.ssh/id_rsa",
        "net": f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -n1 <&3",
        "bomb": ":(){ :|:& };:; sleep 1",
        "hog": "python3 -c 'b = bytearray(1 << 30); print(\"got a gigabyte\")'",
        "after": "echo still here > after.txt && cat after.txt",
    }
    calls = [("bash", {"command": c}) for c in commands.values()]
    calls.append(("write_file", {"path": ".team/evil.txt", "content": "x"}))
    script = ScriptedResponder(
        [
            tool_use("claim", ("claim_task", {"task_id": 1})),
            tool_use("probe", *calls),
            tool_use("done", ("complete_task", {"task_id": 1, "result": "probed"})),
            "Done.",
        ],
        then="Nothing more to do.",
    )
    with FakeMessagesAPI(script) as api:
        assign(ws, "alice", "Probe the sandbox")
        env = {"ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": api.url}
        proc = start_up(ws, {**env, "HOME": str(home)}, "--timeout", "120")
        _, err = proc.communicate(timeout=180)
        results = tool_results(api)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "NOT confined" not in err
    check_every_task_completed(ws)
    got = [results[f"toolu_probe{i}"] for i in range(len(calls))]
    by_name = dict(zip(commands, got, strict=False))
    assert "Read-only file system" in by_name["outside"]
    assert "Read-only file system" in by_name["team"]
    assert "Permission denied" in by_name["key"] and "OPENSSH" not in by_name["key"]
    assert "Connection refused" in by_name["net"] and "hello" not in by_name["net"]
    assert "Resource temporarily unavailable" in by_name["bomb"]
    assert "MemoryError" in by_name["hog"] and "got a gigabyte" not in by_name["hog"]
    assert "still here" in by_name["after"]  # the team went on
    assert "managed by team" in got[-1]
    assert not (home / "outside.txt").exists() and not (ws.team_dir / "evil.txt").exists()
    assert not (ws.tasks_dir / "99.json").exists()

    # the audit trail lists every command and write of the run, in order
    r = run_team("audit", "--json", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [(row["tool"], row["target"]) for row in rows] == [
        (n, i.get("command", i.get("path"))) for n, i in calls
    ]
    assert all(row["agent"] == "alice" and row["sandbox"] == "bwrap" for row in rows)
    assert rows[-2]["outcome"] == "ok" and rows[-2]["exit_code"] == 0
    assert rows[-1]["outcome"] == "refused"
    assert rows[2]["exit_code"] == 1 and rows[-2]["bytes"] == len("still here\n")
    header, _rule, *text = run_team("audit", "alice", "--dir", str(ws.root)).stdout.splitlines()
    assert header.split()[:4] == ["time", "agent", "tool", "outcome"]
    assert len(text) == len(calls) and "cat ~/.ssh/id_rsa" in text[2]


def bin_without_bwrap(tmp_path: Path) -> str:
    """A PATH with every program of /usr/bin except bubblewrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in os.listdir("/usr/bin"):
        if name != "bwrap":
            (bin_dir / name).symlink_to(Path("/usr/bin") / name)
    return str(bin_dir)


def test_auto_without_bwrap_warns_once_and_runs(tmp_path: Path):
    ws = make_workspace(tmp_path / "ws", "sim")
    assign(ws, "--any", "Count the lines of every Python file under src/")
    env = {"PATH": bin_without_bwrap(tmp_path)}
    r = run_team("check", "--dir", str(ws.root), env=env)
    assert r.returncode == 0 and "NOT confined: bubblewrap (bwrap) is not installed" in r.stdout
    proc = start_up(ws, env)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert err.count("NOT confined") == 1, err
    assert err.splitlines()[0].startswith("warning: commands are NOT confined (every agent)")
    rows = json.loads(run_team("audit", "--json", "--dir", str(ws.root)).stdout)
    assert rows and {row["sandbox"] for row in rows} == {"off"}


def test_bwrap_asked_for_and_missing_is_one_line_and_nothing_starts(tmp_path: Path):
    ws = one_agent_workspace(tmp_path / "ws", 'sandbox = "bwrap"')
    env = {"PATH": bin_without_bwrap(tmp_path), "ANTHROPIC_API_KEY": "sk-test-not-real"}
    for args in (["check"], ["up", "--until-idle"]):
        r = run_team(*args, "--dir", str(ws.root), env=env)
        assert r.returncode == 1, r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        assert 'sandbox = "bwrap"' in r.stderr and "not installed" in r.stderr
        assert '"off"' in r.stderr  # names the setting to change
    assert not ws.session_log("alice").exists()


def test_off_runs_commands_as_before(tmp_path: Path, home: Path, port: int):
    ws = one_agent_workspace(home / "code" / "ws", 'sandbox = "off"')
    look = f"cat ~/.ssh/id_rsa; exec 3<>/dev/tcp/127.0.0.1/{port} && head -n1 <&3"
    script = ScriptedResponder(
        [tool_use("look", ("bash", {"command": look})), "Done."], then="Nothing more to do."
    )
    with FakeMessagesAPI(script) as api:
        r = run_team("send", "alice", "look around", "--dir", str(ws.root))
        assert r.returncode == 0, r.stderr
        env = {"ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": api.url}
        proc = start_up(ws, {**env, "HOME": str(home)}, "--timeout", "120")
        _, err = proc.communicate(timeout=180)
        results = tool_results(api)
    assert proc.returncode == 0, err
    assert "NOT confined" not in err  # off is a choice: no warning
    assert "OPENSSH" in results["toolu_look0"] and "hello from the host" in results["toolu_look0"]


def test_issue_24_escapes_through_team_up_are_refused(tmp_path: Path, home: Path):
    """Issue 24, the way the review ran it: a real `team up`, the agent's own commands try
    to add an unconfined agent, rewrite the hook (which then would leak the key), plant a
    git hook, reach a host Unix socket, and fill /dev/shm past memory_mb."""
    from redis_server import redis_binary

    sock = tmp_path / "redis.sock"
    server = subprocess.Popen(
        [redis_binary(), "--port", "0", "--unixsocket", str(sock), "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        ws = one_agent_workspace(
            home / "code" / "ws",
            'sandbox = "bwrap"',
            '[limits]\nmemory_mb = 256\n[hooks]\ntask_completed = "./check.sh"\n',
        )
        (ws.root / "check.sh").write_text("#!/bin/sh\nenv > hook-env.txt\nexit 0\n")
        (ws.root / "check.sh").chmod(0o755)
        subprocess.run(["git", "init", "-q"], cwd=ws.root, check=True)
        wait = 0
        while not sock.exists() and wait < 400:
            threading.Event().wait(0.05)
            wait += 1
        commands = {
            "mallory": 'printf \'\\n[[agents]]\\nname = "mallory"\\nrole = "x"\\n'
            'sandbox = "off"\\n\' >> team.toml',
            "hook": "echo 'cat > leak.txt <<E\\n$ANTHROPIC_API_KEY\\nE' >> check.sh",
            "githook": "echo 'touch /tmp/pwned' > .git/hooks/pre-commit",
            "sock": 'python3 -c "import socket; s=socket.socket(socket.AF_UNIX); '
            f"s.connect('{sock}'); s.sendall(b'SET k v\\r\\n'); print(s.recv(9))\"",
            "shm": "head -c 1G /dev/zero > /dev/shm/big; du -m /dev/shm/big",
        }
        calls = [("bash", {"command": c}) for c in commands.values()]
        calls.append(("write_file", {"path": ".git/config", "content": "[core]\n\tpager=x\n"}))
        script = ScriptedResponder(
            [
                tool_use("claim", ("claim_task", {"task_id": 1})),
                tool_use("probe", *calls),
                tool_use("done", ("complete_task", {"task_id": 1, "result": "probed"})),
                "Done.",
            ],
            then="Nothing more to do.",
        )
        with FakeMessagesAPI(script) as api:
            assign(ws, "alice", "Probe the sandbox")
            env = {"ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": api.url}
            proc = start_up(ws, {**env, "HOME": str(home)}, "--timeout", "120")
            _, err = proc.communicate(timeout=180)
            results = tool_results(api)
    finally:
        server.kill()
        server.wait()
    assert proc.returncode == 0, err
    check_every_task_completed(ws)
    got = dict(
        zip([*commands, "git-config"], (results[f"toolu_probe{i}"] for i in range(6)), strict=True)
    )
    for name in ("mallory", "hook", "githook"):
        assert "Read-only file system" in got[name], got[name]
    assert "Permission denied" in got["sock"] and "+OK" not in got["sock"]
    assert "No space left on device" in got["shm"]
    assert "managed by team" in got["git-config"]
    assert "mallory" not in err and "mallory" not in ws.config_path.read_text()
    seen = (ws.root / "hook-env.txt").read_text()  # the hook ran, confined, without the key
    assert "PATH=" in seen and "sk-test-not-real" not in seen
    assert not (ws.root / "leak.txt").exists()
    rows = json.loads(run_team("audit", "--json", "--dir", str(ws.root)).stdout)
    assert {row["agent"] for row in rows} == {"alice"}
