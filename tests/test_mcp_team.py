"""A team whose agents use MCP servers, run as a user runs it: `team check`, `team up`,
`team status`, `team audit`, through the simulator and through the real Anthropic SDK
against the local fake API, with our test server and with mcp-server-time from PyPI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
import sim_responder
from conftest import run_team
from fakeapi import FakeMessagesAPI
from mcp_servers import ours, third_party, write_team
from teamrun import assign, events, session_records, start_up, wait_for

from team.agents.build import Parts, build_agent
from team.agents.runtime.servers import open_pool
from team.core.events import MemorySink
from team.llm.sim import SimModel
from team.tasks import TaskBoard
from team.workspace.places import Workspace

pytestmark = pytest.mark.slow


def results(ws: Workspace, agent: str) -> dict[str, dict]:
    """Every tool result in the agent's session log, by the name of its tool."""
    out = {}
    for rec in session_records(ws, agent):
        for b in rec.get("blocks", ()):
            if b.get("type") == "tool_result":
                out.setdefault(b["name"], b)
    return out


def test_team_check_lists_each_servers_tools_and_what_fails(tmp_path):
    root = write_team(
        tmp_path,
        {
            "t": ours(),
            "odd": ours("--odd"),
            "gone": {"command": "no-such-program-here"},
            "off": {"command": "x", "disabled": True},
        },
        agents=[
            {"name": "alice", "role": "coder", "mcp": ["t"]},
            {"name": "bob", "role": "tester", "mcp": ["mcp__odd__*", "mcp__t__add"]},
        ],
    )
    r = run_team("check", "--dir", str(root), timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    t = next(ln for ln in lines if ln.startswith("MCP server t "))
    assert "8 tools: add, echo, fail, sleep, hang, image, pid, crash" in t
    assert "MCP server gone: does not start: no-such-program-here: command not found" in lines
    assert "MCP server off: disabled" in lines
    refused = [ln.strip() for ln in lines if "is not offered" in ln]
    assert len(refused) == 2 and any("'union'" in ln and "anyOf" in ln for ln in refused)
    assert "  alice sees 8 of them: " in r.stdout
    assert "  bob sees 3 of them: mcp__t__add, mcp__odd__fine" in r.stdout


@pytest.mark.parametrize(
    ("servers", "mcp_json", "line"),
    [
        ({"s": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}, None, "mcp_servers.s: SSE"),
        ({"s": {"command": "x", "url": "http://x"}}, None, "not both"),
        ({"bad name": {"command": "x"}}, None, "invalid MCP server name 'bad name'"),
        ({"s": {"command": "x", "timeout": -1}}, None, "mcp_servers.s.timeout"),
        ({}, "{not json", ".mcp.json: not valid JSON"),
        ({}, '{"mcpServers": {"a": {"command": "x", "sandbox": "off"}}}', "a.sandbox: only team"),
        ({}, '{"mcpServers": {"a": {"args": []}}}', "mcpServers.a: a stdio server needs a"),
    ],
)
def test_a_bad_server_config_is_one_line(tmp_path, servers, mcp_json, line):
    root = write_team(tmp_path, servers)
    if mcp_json is not None:
        (root / ".mcp.json").write_text(mcp_json)
    r = run_team("check", "--dir", str(root))
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert line in r.stderr


def test_an_agent_naming_a_server_that_is_not_there_is_one_line(tmp_path):
    root = write_team(tmp_path, {"t": ours()}, agents=[{"name": "a", "role": "r", "mcp": ["tt"]}])
    r = run_team("status", "--dir", str(root))
    assert r.returncode == 1
    assert "agents[0].mcp: 'tt' is not an MCP server here (servers: t" in r.stderr


def test_mcp_json_beside_team_toml_adds_servers_and_team_toml_wins(tmp_path):
    root = write_team(tmp_path, {"t": ours()})
    claude = {"mcpServers": {"t": {"command": "loses"}, "j": {"type": "stdio", **ours()}}}
    (root / ".mcp.json").write_text(json.dumps(claude))
    config = Workspace.at(root).load_config()
    assert set(config.mcp_servers) == {"t", "j"}
    assert config.mcp_servers["t"].command == sys.executable


def test_each_agent_sees_its_allowed_tools_in_its_fixed_prefix(tmp_path):
    root = write_team(
        tmp_path,
        {"t": ours()},
        agents=[
            {"name": "alice", "role": "coder"},
            {"name": "bob", "role": "tester", "mcp": ["mcp__t__a*"]},
            {"name": "carol", "role": "writer", "mcp": []},
        ],
    )
    ws = Workspace.at(root)
    config = ws.load_config()
    pool = open_pool(ws, config).start()
    try:
        parts = Parts(ws, config, SimModel(), MemorySink(), TaskBoard(ws.tasks_dir), mcp=pool)
        seen = {}
        for name in config.names():
            agent = build_agent(parts, name)
            mcp = [t.name for t in agent.seat.prefix.tools if t.name.startswith("mcp__")]
            seen[name] = (mcp, agent.seat.prefix.chars())
    finally:
        pool.close()
    assert len(seen["alice"][0]) == 8
    assert seen["bob"][0] == ["mcp__t__add"]
    assert seen["carol"][0] == []
    # the schemas count in the fixed prefix, which the compactor's estimate starts from
    assert seen["alice"][1] > seen["bob"][1] > seen["carol"][1]


def test_kill_9_of_a_server_mid_call_in_a_running_team(tmp_path):
    """The call fails in one line, the server comes back, the next call works, and the
    rest of the team never stops."""
    root = write_team(
        tmp_path,
        {"t": ours()},
        agents=[{"name": "alice", "role": "coder"}, {"name": "bob", "role": "tester"}],
        sandbox="off",  # the test kills the server by its pid, as the host sees it
    )
    ws = Workspace.at(root)
    mark = root / "sleeping.pid"
    sleep = json.dumps({"seconds": 60, "mark": str(mark)})
    assign(ws, "alice", f'Use `mcp__t__sleep {sleep}` then use `mcp__t__add {{"a": 1, "b": 2}}`')
    assign(ws, "bob", "Count the lines of team.toml")
    proc = start_up(ws, {})
    try:
        wait_for(mark.exists, timeout=120, what="the server to be in the call")

        def shown_up() -> bool:  # the team rewrites its status once a second
            return (
                "MCP server t: up (8 tools, sandbox off)"
                in run_team("status", "--dir", str(root)).stdout
            )

        wait_for(shown_up, timeout=30, what="team status to show the server up")
        os.kill(int(mark.read_text()), signal.SIGKILL)
        _, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    got = results(ws, "alice")
    failed = got["mcp__t__sleep"]
    assert failed.get("is_error") and "\n" not in failed["content"]
    assert failed["content"] == (
        "mcp__t__sleep: MCP server 't' exited during sleep; it is being restarted"
    )
    assert got["mcp__t__add"]["content"] == "3" and not got["mcp__t__add"].get("is_error")
    assert all(t.status == "completed" for t in TaskBoard(ws.tasks_dir).list())
    kinds = [k for (k,) in events(ws, "select kind from agent_events where agent = 'team'")]
    assert "mcp_down" in kinds and kinds.index("mcp_up") > kinds.index("mcp_down")
    audit = events(ws, "select tool, server, outcome, bytes from audit where server = 't'")
    assert ("mcp__t__sleep", "t", "crashed", 0) in audit
    assert ("mcp__t__add", "t", "ok", 1) in audit
    down = run_team("status", "--dir", str(root))
    assert "MCP server t: down" in down.stdout
    shown = run_team("audit", "alice", "--dir", str(root)).stdout
    assert "mcp__t__sleep crashed" in " ".join(shown.split())


def test_a_sim_team_through_the_sdk_uses_mcp_server_time_and_an_image(tmp_path):
    """The request carries the tool, the result comes back, events and audit record it."""
    root = write_team(
        tmp_path,
        {"time": {"command": third_party("mcp-server-time"), "timeout": 60}, "t": ours()},
        model="claude-sonnet-4-5",
    )
    ws = Workspace.at(root)
    convert = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    assign(
        ws,
        "alice",
        f"Use `mcp__time__convert_time {json.dumps(convert)}` and "
        'use `mcp__t__image {"width": 40, "height": 30}`',
    )
    lock = threading.Lock()

    def respond(body):
        with lock:
            return sim_responder.respond(body, ws)

    with FakeMessagesAPI(respond) as api:
        env = {"ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": api.url}
        proc = start_up(ws, env)
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert api.rejections == [], [c.error for c in api.rejections]
        requests = api.requests
    tools = {t["name"]: t for t in requests[0]["tools"]}
    schema = tools["mcp__time__convert_time"]["input_schema"]
    assert set(schema["required"]) == {"source_timezone", "time", "target_timezone"}
    sent = [
        b
        for req in requests
        for m in req["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    texts = [json.dumps(b["content"]) for b in sent]
    assert any("Asia/Tokyo" in t and "T21:00:00+09:00" in t for t in texts)
    images = [p for b in sent if isinstance(b["content"], list) for p in b["content"]]
    assert any(p["type"] == "image" and p["source"]["media_type"] == "image/png" for p in images)
    audit = events(
        ws, "select tool, server, outcome, bytes, target from audit where server is not null"
    )
    by_tool = {row[0]: row for row in audit}
    assert by_tool["mcp__time__convert_time"][1:3] == ("time", "ok")
    assert by_tool["mcp__time__convert_time"][3] > 50
    assert by_tool["mcp__time__convert_time"][4].startswith("convert_time {")
    assert by_tool["mcp__t__image"][2] == "ok"
    (task,) = TaskBoard(ws.tasks_dir).list()
    assert task.status == "completed" and "21:00" in (task.result or "")
    log = results(ws, "alice")["mcp__t__image"]
    assert log["images"][0]["width"] == 40  # the session log keeps the image


def test_a_server_down_from_the_start_is_a_readable_error_and_the_team_goes_on(tmp_path):
    broken = {"command": sys.executable, "args": ["-c", "import sys; sys.exit('no config')"]}
    root = write_team(tmp_path, {"t": ours(), "broken": broken})
    ws = Workspace.at(root)
    assign(ws, "alice", 'Use `mcp__t__echo {"text": "still fine"}`')
    r = subprocess.run(
        [sys.executable, "-m", "team", "up", "--until-idle", "--dir", str(root)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    assert "MCP server 'broken' is down: it exited: no config" in r.stdout
    assert results(ws, "alice")["mcp__t__echo"]["content"] == "still fine"
