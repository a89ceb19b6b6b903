"""The MCP client pool against real servers over stdio and HTTP: tools, errors, timeouts,
images, a server killed mid-call or hanging, one that never starts, the sandbox."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp_servers import OURS, third_party

from team.agents.runtime.servers import launch
from team.mcp.config import McpServerConfig
from team.mcp.pool import McpPool
from team.mcp.session import McpCallError
from team.sandbox import bwrap
from team.workspace.config import parse_config
from team.workspace.places import Workspace

pytestmark = pytest.mark.slow


def ours(*args: str, **extra) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[OURS, *args], **extra)


def wait_for(check, what: str, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if out := check():
            return out
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    p = McpPool({"t": ours(timeout=30)}, logs=logs, backoff=(0.1, 1.0)).start()
    p.wait_started()
    yield p
    p.close()


def test_the_tools_come_with_their_schemas(pool):
    tools = {t.model_name: t for t in pool.tools()}
    assert set(tools) >= {"mcp__t__add", "mcp__t__fail", "mcp__t__sleep", "mcp__t__image"}
    add = tools["mcp__t__add"]
    assert add.name == "add" and add.description == "Add two integers."
    b = add.input_schema["properties"]["b"]
    assert (b["minimum"], b["maximum"]) == (0, 1000)
    assert add.input_schema["required"] == ["a", "b"]
    assert pool.status()["t"]["state"] == "up"


def test_results_errors_and_bad_input(pool):
    assert pool.call("t", "add", {"a": 2, "b": 40}).text == "42"
    failed = pool.call("t", "fail", {"message": "disk on fire"})
    assert failed.is_error and "disk on fire" in failed.text
    wrong = pool.call("t", "add", {"a": 1, "b": 5000})  # the server checks its own schema
    assert wrong.is_error and "less than or equal to 1000" in wrong.text
    unknown = pool.call("t", "no_such_tool", {})  # MCPServer says so as a tool error
    assert unknown.is_error and "no_such_tool" in unknown.text


def test_an_image_comes_back_as_an_image(pool):
    reply = pool.call("t", "image", {"width": 30, "height": 20})
    (image,) = reply.images
    assert (image.media_type, image.width, image.height) == ("image/png", 30, 20)
    assert reply.size == image.bytes + len(reply.text)


def test_a_call_past_its_timeout_fails_in_one_line_and_the_server_goes_on(pool):
    start = time.monotonic()
    with pytest.raises(McpCallError) as e:
        pool.call("t", "sleep", {"seconds": 30}, timeout=1)
    assert e.value.kind == "timeout" and "\n" not in str(e.value)
    assert str(e.value) == "sleep timed out after 1s (MCP server 't')"
    assert time.monotonic() - start < 10
    assert pool.call("t", "echo", {"text": "still here"}).text == "still here"


def test_calls_from_many_threads_share_the_one_session(pool):
    out: list[str] = []

    def sleep() -> None:
        out.append(pool.call("t", "sleep", {"seconds": 3}).text)

    threads = [threading.Thread(target=sleep) for _ in range(4)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == ["slept 3.0"] * 4
    assert time.monotonic() - start < 9  # they overlapped: one after another is 12 s


def test_kill_9_mid_call_fails_that_call_and_the_next_one_works(tmp_path):
    with McpPool({"t": ours(timeout=60)}, logs=tmp_path, backoff=(0.1, 1.0)) as pool:
        pid = int(pool.call("t", "pid", {}).text)
        threading.Timer(0.5, os.kill, (pid, 9)).start()
        start = time.monotonic()
        with pytest.raises(McpCallError) as e:
            pool.call("t", "sleep", {"seconds": 30})
        assert time.monotonic() - start < 10  # at once, not at the timeout
        assert e.value.kind == "crashed" and "\n" not in str(e.value)
        assert pool.call("t", "echo", {"text": "back"}).text == "back"
        new = int(pool.call("t", "pid", {}).text)
        assert new != pid
        st = pool.status()["t"]
        assert st["state"] == "up" and st["restarts"] == 1


def test_a_server_killed_while_idle_is_restarted_before_anyone_calls(tmp_path):
    with McpPool({"t": ours()}, logs=tmp_path, backoff=(0.1, 1.0)) as pool:
        pid = int(pool.call("t", "pid", {}).text)
        os.kill(pid, 9)
        wait_for(lambda: pool.status()["t"]["restarts"] == 1, "the restart")
        wait_for(lambda: pool.status()["t"]["state"] == "up", "the server to be up again")


def test_a_hung_server_is_restarted(tmp_path):
    with McpPool({"t": ours(timeout=60)}, logs=tmp_path, backoff=(0.1, 1.0)) as pool:
        pool.wait_started()
        with pytest.raises(McpCallError) as e:
            pool.call("t", "hang", {}, timeout=1)
        assert e.value.kind == "timeout"
        # the probe after the timeout finds it deaf: it is restarted, and works again
        assert pool.call("t", "echo", {"text": "alive"}).text == "alive"
        assert "hangs" in pool.status()["t"]["last_error"]


def test_a_server_that_cannot_start_is_down_with_its_reason(tmp_path):
    servers = {
        "gone": McpServerConfig(command="no-such-program-here"),
        "broken": McpServerConfig(command=sys.executable, args=["-c", "import no_such_module"]),
    }
    with McpPool(servers, logs=tmp_path, backoff=(0.1, 1.0)) as pool:
        pool.wait_started()
        st = pool.status()
        assert st["gone"]["state"] == "down"
        assert st["gone"]["last_error"] == "no-such-program-here: command not found"
        # its own last words, from its stderr log
        assert "No module named 'no_such_module'" in st["broken"]["last_error"]
        start = time.monotonic()
        with pytest.raises(McpCallError) as e:
            pool.call("gone", "anything", {})
        assert time.monotonic() - start < 30  # down: no waiting out the 120 s timeout
        assert str(e.value) == (
            "MCP server 'gone' is down (no-such-program-here: command not found)"
        )
        assert pool.tools() == []


def test_tools_the_api_would_refuse_are_not_offered(tmp_path):
    with McpPool({"odd": ours("--odd")}, logs=tmp_path) as pool:
        names = [t.model_name for t in pool.tools()]
        assert names == ["mcp__odd__fine", "mcp__odd__dotted_name_with_slash"]
        refused = pool.status()["odd"]["refused"]
        assert set(refused) == {"union", "brackets"}
        assert "anyOf at the top level" in refused["union"]
        # the sanitised name still calls the server's own
        reply = pool.call("odd", "dotted.name/with slash", {"q": "x"})
        assert reply.text == "dotted.name/with slash called with {'q': 'x'}"


def test_streamable_http(tmp_path):
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, OURS, "--http", str(port_file)])
    try:
        port = wait_for(lambda: port_file.exists() and port_file.read_text(), "the port")
        cfg = McpServerConfig(url=f"http://127.0.0.1:{port}/mcp", headers={"X-Test": "1"})
        with McpPool({"web": cfg}) as pool:
            assert pool.call("web", "add", {"a": 1, "b": 2}).text == "3"
            assert pool.status()["web"]["transport"] == "http"
    finally:
        proc.kill()
        proc.wait()


def test_a_variable_in_the_config_comes_from_the_environment(tmp_path):
    cfg = McpServerConfig(command="${PY}", args=[OURS], env={"GREETING": "${MISSING:-hi}"})
    with McpPool({"t": cfg}, environ={"PY": sys.executable}, logs=tmp_path) as pool:
        assert pool.call("t", "add", {"a": 1, "b": 1}).text == "2"
    unset = McpServerConfig(command="${NOT_SET_ANYWHERE}")
    with McpPool({"u": unset}, environ={}, logs=tmp_path) as pool:
        pool.wait_started()
        assert pool.status()["u"]["last_error"] == "${NOT_SET_ANYWHERE} is not set"


def sandboxed_pool(tmp_path: Path, server: dict, **team) -> tuple[McpPool, Workspace]:
    data = {
        "team": {"sandbox": "bwrap", **team},
        "agents": [{"name": "alice", "role": "coder"}],
        "mcp_servers": {"s": server},
    }
    config = parse_config(data)
    ws = Workspace.at(tmp_path)
    pool = McpPool(
        config.mcp_servers, launch=lambda _n, cfg: launch(ws, config, cfg), logs=tmp_path / "l"
    )
    return pool, ws


@pytest.mark.skipif(not bwrap.detect().usable, reason="bubblewrap cannot run here")
def test_a_stdio_server_runs_in_the_sandbox_unless_team_toml_lets_it_out(tmp_path):
    server = {"command": sys.executable, "args": [OURS]}
    pool, _ = sandboxed_pool(tmp_path, server)
    with pool:
        assert int(pool.call("s", "pid", {}).text) < 10  # its own pid namespace
        assert pool.status()["s"]["sandbox"] == "bwrap"
    pool, _ = sandboxed_pool(tmp_path, {**server, "sandbox": "off"})
    with pool:
        assert int(pool.call("s", "pid", {}).text) > 10
        assert pool.status()["s"]["sandbox"] == "off"


@pytest.mark.skipif(not bwrap.detect().usable, reason="bubblewrap cannot run here")
def test_a_server_kept_under_tmp_still_runs_in_the_sandbox(tmp_path):
    """The sandbox's /tmp is private: a script kept in the host's /tmp (a clone there,
    say), and the virtualenv of the program that runs it, are shown to the server
    read-only, or it could not start."""
    home = Path("/tmp") / f"team-mcp-{os.getpid()}-{tmp_path.name}"
    try:
        home.mkdir()
        script = home / "server.py"
        shutil.copy(OURS, script)
        pool, _ = sandboxed_pool(tmp_path, {"command": sys.executable, "args": [str(script)]})
        with pool:
            assert int(pool.call("s", "pid", {}).text) < 10  # in the sandbox, and it started
            assert pool.status()["s"]["sandbox"] == "bwrap"
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_a_programs_home_is_its_virtualenv(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "tool").write_text("#!/bin/sh\n")
    (venv / "bin" / "python").symlink_to(sys.executable)  # links out of the venv
    assert bwrap.program_home(str(venv / "bin" / "tool")) == venv.resolve()
    assert bwrap.program_home(str(venv / "bin" / "python")) == venv.resolve()
    assert bwrap.program_home("/bin/sh") == Path("/bin/sh").parent.resolve()


@pytest.mark.skipif(not bwrap.detect().usable, reason="bubblewrap cannot run here")
def test_a_sandboxed_third_party_server_reads_but_cannot_write_git(tmp_path):
    """mcp-server-git under bwrap reads the workspace's repository, but its `.git` is
    read-only to it as to every sandboxed command (issue 24: a planted hook or config
    would run on the person's next commit), and so is a repository outside."""
    outside = tmp_path / "outside"
    ws_root = tmp_path / "ws"
    for repo in (outside, ws_root):
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (repo / "a.txt").write_text("hello\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    server = {"command": third_party("mcp-server-git"), "env": env, "timeout": 60}
    pool, _ = sandboxed_pool(ws_root, server)
    with pool:
        status = pool.call("s", "git_status", {"repo_path": str(ws_root)})
        assert not status.is_error and "a.txt" in status.text, status.text
        added = pool.call("s", "git_add", {"repo_path": str(ws_root), "files": ["a.txt"]})
        assert added.is_error and "Read-only file system" in added.text, added.text
        assert not (ws_root / ".git" / "index").exists()
        refused = pool.call("s", "git_add", {"repo_path": str(outside), "files": ["a.txt"]})
        assert refused.is_error  # read-only outside the workspace
