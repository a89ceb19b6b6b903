"""Typo'd model ids: `team check` warns in one line naming the nearest known id, `team up`
warns and refuses a real model without a key before loading the SDK, and
`team check --online` asks the API's model list (the local fake API, never the network)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import run_team, write_team
from fakeapi import FakeMessagesAPI

TYPO = "claude-sonet-4-5"
NEAREST = "did you mean claude-sonnet-4-5?"


def test_check_warns_about_a_typo_and_still_exits_0(tmp_path: Path) -> None:
    write_team(tmp_path, model=TYPO)
    r = run_team("check", "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("team: warning: ") and TYPO in line and NEAREST in line
    # a known id, dated or not, and the sim say nothing
    for model in ("claude-sonnet-4-5", "claude-haiku-4-5-20251001", "sim"):
        write_team(tmp_path, model=model)
        r = run_team("check", "--dir", str(tmp_path))
        assert r.returncode == 0 and r.stderr == "", (model, r.stderr)


def test_init_warns_about_a_typo(tmp_path: Path) -> None:
    r = run_team("init", "--model", TYPO, "--dir", str(tmp_path))
    assert r.returncode == 0 and (tmp_path / "team.toml").exists()
    assert NEAREST in r.stderr


def test_up_without_a_key_says_so_before_loading_the_sdk(tmp_path: Path) -> None:
    """The no-key line comes before `import anthropic` (seconds) and the runtime."""
    write_team(tmp_path, model=TYPO)
    probe = (
        "import atexit, sys, runpy\n"
        "atexit.register(lambda: print('LOADED', *sorted({m.split('.')[0] for m in sys.modules"
        " if m.split('.')[0] in ('anthropic', 'httpx')} | ({'runtime'} if"
        " 'team.agents.runtime.launch' in sys.modules else set()))))\n"
        "sys.argv[0] = 'team'\n"
        "runpy.run_module('team', run_name='__main__', alter_sys=True)\n"
    )
    env = {"HOME": str(tmp_path)}  # no ~/.config/anthropic profile folder
    r = subprocess.run(
        [sys.executable, "-c", probe, "up", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, **env},
    )
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"team: warning: model {TYPO!r} is not in the model table (team/llm/prices.py): " + NEAREST,
        "team: error: ANTHROPIC_API_KEY is not set; set it, or run offline with --model sim",
    ]
    assert r.stdout.strip() == "LOADED"  # neither the SDK nor the runtime


def test_check_online_asks_the_api_model_list(tmp_path: Path) -> None:
    with FakeMessagesAPI(models=("claude-sonnet-4-5-20250929", "claude-opus-9-0")) as api:
        env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.url}
        write_team(tmp_path, model=TYPO)
        r = run_team("check", "--online", "--dir", str(tmp_path), env=env)
        assert r.returncode == 0, r.stderr
        assert r.stderr.strip() == (
            f"team: warning: the API does not serve model {TYPO!r}: "
            "did you mean claude-sonnet-4-5-20250929?"
        )
        write_team(tmp_path, model="claude-sonnet-4-5")  # served, as its dated id
        assert run_team("check", "--online", "--dir", str(tmp_path), env=env).stderr == ""
        # newer than the price table, but served: said so, as a cost caveat
        write_team(tmp_path, model="claude-opus-9-0")
        r = run_team("check", "--online", "--dir", str(tmp_path), env=env)
        assert "served by the API but has no prices in the table" in r.stderr
    # the API unreachable: one line, and the table's answer
    write_team(tmp_path, model=TYPO)
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    r = run_team("check", "--online", "--dir", str(tmp_path), env=env)
    assert r.returncode == 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and "could not ask the API" in lines[0] and NEAREST in lines[1]


def test_check_online_without_a_key_checks_the_table(tmp_path: Path) -> None:
    write_team(tmp_path, model=TYPO)
    r = run_team("check", "--online", "--dir", str(tmp_path), env={"HOME": str(tmp_path)})
    assert r.returncode == 0
    first, second = r.stderr.strip().splitlines()
    assert "ANTHROPIC_API_KEY is not set" in first and "model table only" in first
    assert NEAREST in second
