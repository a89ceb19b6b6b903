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
