"""Shared fixtures. No test here may reach the network: the SDK only ever sees loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_real_api(monkeypatch):
    """A stray real key or base URL must never reach a test."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # discard port: refused


def run_team(
    *args: str,
    cwd: Path | None = None,
    env: dict | None = None,
    timeout: float = 60,
    input: str | None = None,
) -> subprocess.CompletedProcess:
    """Run the CLI as a user would: a subprocess, text output."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "team", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )


def write_team(root: Path, agents: str = "alice:coder,bob:tester", model: str = "sim") -> Path:
    """The team.toml `team init --agents AGENTS` writes (tests/test_init_cli.py runs the
    command itself), without a process: most tests only need a team to exist."""
    from team.workspace.config import render_config

    pairs = [tuple(a.split(":")) for a in agents.split(",")]
    root.mkdir(parents=True, exist_ok=True)
    (root / "team.toml").write_text(render_config("demo", model, pairs))
    return root


def send_mail(root: Path, to: str, text: str, sender: str = "user") -> None:
    """What `team send` does, in process (tests/test_mailbox_cli.py runs the command): for
    tests about something else, where a process per message only costs time."""
    from team.backends.post import send
    from team.workspace.places import Workspace

    ws = Workspace.at(root)
    send(ws, ws.load_config(), to, text, sender=sender)


def add_task(root: Path, text: str, owner: str | None = None, blocked_by=()) -> int:
    """`team assign OWNER TEXT` (or `--any`) in process: the library call the command
    makes (tests/test_tasks_cli.py runs the command itself)."""
    from team.backends.base import open_backend
    from team.teamwork import Crew, Teamwork
    from team.workspace.places import Workspace

    ws = Workspace.at(root)
    config = ws.load_config()
    backend = open_backend(ws, config)
    try:
        task, _ = Teamwork(Crew(ws, config, backend.board())).assign(
            text, owner, blocked_by=blocked_by
        )
    finally:
        backend.close()
    return task.id


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """One real redis-server per test process (xdist worker), on a free loopback port."""
    from redis_server import RedisServer

    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server) -> str:
    """The server's URL, with its data wiped before each test."""
    with redis_server.client() as client:
        client.flushall()
    return redis_server.url
