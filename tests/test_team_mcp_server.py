"""`team mcp` driven by the SDK's own client, the server in a subprocess as an MCP client
starts it: list the tools, assign a task, a running sim team does it, status and the
person's inbox show it. And the HTTP transport with its bearer token."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import anyio
import httpx2
import pytest
from conftest import run_team, write_team
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.slow

TOOLS = {
    "assign",
    "send",
    "broadcast",
    "tasks",
    "task",
    "status",
    "inbox",
    "log",
    "approve",
    "reject",
    "stats",
}


def data(result) -> object:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        out = result.structured_content
        return out.get("result", out) if isinstance(out, dict) and len(out) == 1 else out
    return json.loads(result.content[0].text)


async def until(check, what: str, timeout: float = 120.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if out := await check():
            return out
        await anyio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_an_mcp_client_drives_a_running_team(tmp_path):
    root = write_team(tmp_path / "ws")
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "team", "mcp", "--dir", str(root)]
    )
    up = subprocess.Popen(
        [sys.executable, "-m", "team", "up", "--dir", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    async def drive() -> None:
        async with Client(server, read_timeout_seconds=60) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == TOOLS
            assert tools["assign"].input_schema["required"] == ["subject"]

            async def running():
                return data(await c.call_tool("status", {}))["running"]

            await until(running, "the team to be up")
            ask = 'Use `send_message {"to": "user", "content": "the answer is 42"}` please'
            task = data(await c.call_tool("assign", {"subject": ask, "agent": "alice"}))
            assert task["owner"] == "alice" and task["status"] == "pending"

            async def done():
                t = data(await c.call_tool("task", {"task_id": task["id"]}))
                return t if t["status"] == "completed" else None

            finished = await until(done, "the task to be completed")
            assert finished["owner"] == "alice"

            async def worked():  # the running team rewrites its status once a second
                st = data(await c.call_tool("status", {}))
                return st if st["agents"]["alice"].get("calls") else None

            status = await until(worked, "status to show alice's work")
            assert status["running"] and set(status["agents"]) == {"alice", "bob"}
            mail = data(await c.call_tool("inbox", {"agent": "user"}))
            mine = [m for m in mail if m["from"] == "alice"]
            assert mine and mine[0]["content"] == "the answer is 42"
            taken = data(await c.call_tool("inbox", {"agent": "user", "ack": True}))
            assert [m["id"] for m in taken] == [m["id"] for m in mail]
            assert data(await c.call_tool("inbox", {"agent": "user"})) == []
            log = await c.call_tool("log", {"agent": "alice", "last": 200})
            assert "send_message" in log.content[0].text
            # a user error is the tool's error, in the CLI's one line
            wrong = await c.call_tool("assign", {"subject": "x", "agent": "zed"})
            assert wrong.is_error and "unknown agent 'zed'" in wrong.content[0].text
            nope = await c.call_tool("approve", {"task_id": task["id"]})
            assert nope.is_error and "\n" not in nope.content[0].text
            resources = (await c.list_resources()).resources
            assert {str(r.uri) for r in resources} == {
                "team://agents/alice/transcripts",
                "team://agents/bob/transcripts",
            }
            listing = await c.read_resource("team://agents/alice/transcripts")
            assert isinstance(json.loads(listing.contents[0].text), list)

    try:
        anyio.run(drive)
    finally:
        r = run_team("down", "--dir", str(root), timeout=90)
        up.wait(timeout=60)
    assert r.returncode == 0, r.stderr
    assert up.returncode == 0, up.stderr


def test_http_wants_the_bearer_token(tmp_path):
    root = write_team(tmp_path / "ws")
    proc = subprocess.Popen(
        [sys.executable, "-m", "team", "mcp", "--http", "--port", "0", "--dir", str(root)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        url = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)[1]
        token = (root / ".team" / "mcp.token").read_text().strip()
        assert (root / ".team" / "mcp.token").stat().st_mode & 0o077 == 0

        async def connect(headers: dict) -> list[str]:
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as c,
            ):
                return [t.name for t in (await c.list_tools()).tools]

        assert set(anyio.run(connect, {"Authorization": f"Bearer {token}"})) == TOOLS
        with pytest.raises((MCPError, BaseExceptionGroup)):
            anyio.run(connect, {"Authorization": "Bearer wrong"})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
