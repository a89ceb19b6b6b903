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
