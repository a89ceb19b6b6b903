"""`team send`, `broadcast`, `inbox` and `status` stay off pydantic, the SDK and
matplotlib (issue 27), and the team.toml snapshot they read (.team/config.json) never
hides a broken team.toml: each edit is judged by the full loader, with its own line.

Every command runs as a user runs it, in a subprocess of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_team
from test_workspace_faults import one_clear_line, run_as_reader, shared_dir, tree

from team.workspace.places import Workspace

HEAVY = ("pydantic", "pydantic_core", "anthropic", "matplotlib", "numpy")
PROBE = (
    "import atexit, json, sys, runpy\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
    "sys.argv[0] = 'team'\n"
    "runpy.run_module('team', run_name='__main__', alter_sys=True)\n"
)
"""Runs `python -m team ARGS` and writes the modules it loaded, as it exits."""


def modules(ws: Path, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    out = ws / "modules.json"
    r = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args, "--dir", str(ws)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r, set(json.loads(out.read_text()))


def heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if m.split(".")[0] in HEAVY)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace as a user makes one: `team init`, then a first message (.team/ exists)."""
    root = tmp_path / "ws"
    assert (
        run_team("init", "--agents", "alice:coder,bob:tester", "--dir", str(root)).returncode == 0
    )
    assert run_team("send", "alice", "first", "--dir", str(root)).returncode == 0
    return root


def test_send_status_and_inbox_load_no_pydantic_sdk_or_matplotlib(ws: Path) -> None:
    assert run_team("status", "--dir", str(ws)).returncode == 0  # validates, leaves the snapshot
    for args in (
        ["send", "alice", "hello"],
        ["send", "user", "done", "--from", "bob"],
        ["broadcast", "all hands", "--from", "alice"],
        ["status"],
        ["status", "--json"],
        ["inbox", "alice"],
        ["inbox", "user", "--json"],
    ):
        r, mods = modules(ws, *args)
        assert r.returncode == 0, (args, r.stderr)
        assert heavy(mods) == [], (args, heavy(mods))
    r = run_team("inbox", "alice", "--dir", str(ws))
    assert "hello" in r.stdout and "first" in r.stdout
    # the full loader still runs where it is needed: `team check` validates, with pydantic
    r, mods = modules(ws, "check")
    assert r.returncode == 0 and "pydantic" in mods


def test_the_snapshot_changes_no_output(ws: Path) -> None:
    snapshot = Workspace.at(ws).config_snapshot
    run_team("send", "bob", "hi", "--from", "alice", "--dir", str(ws))
    cached = [run_team(*a, "--dir", str(ws)).stdout for a in (["status", "--json"], ["status"])]
    assert snapshot.exists()
    snapshot.unlink()
    full = [run_team(*a, "--dir", str(ws)).stdout for a in (["status", "--json"], ["status"])]
    assert cached == full
    assert json.loads(cached[0])["agents"]["bob"]["pending"] == 1


def _error(ws: Path, *args: str) -> str:
    return one_clear_line(run_team(*args, "--dir", str(ws)))


def test_a_bad_key_right_after_a_cached_run_gives_its_error_line(ws: Path) -> None:
    assert run_team("status", "--dir", str(ws)).returncode == 0
    _, mods = modules(ws, "status")
    assert "pydantic" not in mods  # the run before the edit was a cached one
    toml = ws / "team.toml"
    toml.write_text(toml.read_text().replace("[team]\n", '[team]\ncolour = "red"\n'))
    line = _error(ws, "check")
    assert "team.colour: unknown key" in line
    for args in (["send", "alice", "hi"], ["status"], ["status", "--json"], ["inbox", "bob"]):
        assert _error(ws, *args) == line, args
    assert "hi" not in run_team("inbox", "alice", "--dir", str(ws)).stdout


def test_an_edit_that_keeps_size_time_and_inode_is_still_caught(ws: Path) -> None:
    """A hostile edit: same length, written in place, the old mtime put back."""
    assert run_team("status", "--dir", str(ws)).returncode == 0
    toml = ws / "team.toml"
    st = os.stat(toml)
    text = toml.read_bytes()
    assert b"max_tokens = 8000" in text
    with open(toml, "r+b") as f:
        f.write(text.replace(b"max_tokens = 8000", b"max_tokens = -800"))
    os.utime(toml, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(toml)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
    )
    line = _error(ws, "check")
    assert "team.max_tokens" in line
    assert _error(ws, "send", "alice", "hi") == line
    assert _error(ws, "status") == line


def test_a_new_agent_and_a_bad_mcp_json_are_seen_at_once(ws: Path) -> None:
    assert run_team("status", "--dir", str(ws)).returncode == 0
    toml = ws / "team.toml"
    toml.write_text(toml.read_text() + '\n[[agents]]\nname = "carol"\nrole = "reviewer"\n')
    assert run_team("send", "carol", "welcome", "--dir", str(ws)).returncode == 0
    assert "carol" in run_team("status", "--dir", str(ws)).stdout
    (ws / ".mcp.json").write_text("{not json")
    line = _error(ws, "check")
    assert ".mcp.json: not valid JSON" in line
    assert _error(ws, "send", "carol", "again") == line
    (ws / ".mcp.json").unlink()
    assert run_team("send", "carol", "again", "--dir", str(ws)).returncode == 0


def test_a_missing_team_toml_is_the_loaders_line_whatever_the_snapshot_says(ws: Path) -> None:
    assert run_team("status", "--dir", str(ws)).returncode == 0
    (ws / "team.toml").unlink()
    line = _error(ws, "status")
    assert "no such file (run `team init` to write one)" in line
    assert _error(ws, "send", "alice", "hi") == line


@pytest.mark.parametrize(
    "junk",
    [
        b"",
        b"{not json",
        b"[]",
        b'{"key": null, "view": {}}',
        b"\xff\xfe",
    ],
)
def test_a_damaged_snapshot_is_read_past_and_rewritten(ws: Path, junk: bytes) -> None:
    snapshot = Workspace.at(ws).config_snapshot
    assert run_team("status", "--dir", str(ws)).returncode == 0
    good = snapshot.read_bytes()
    snapshot.write_bytes(junk)
    r = run_team("status", "--json", "--dir", str(ws))
    assert r.returncode == 0 and r.stderr == ""
    assert sorted(json.loads(r.stdout)["agents"]) == ["alice", "bob"]
    assert snapshot.read_bytes() == good


def test_a_forged_view_under_a_stale_key_is_not_believed(ws: Path) -> None:
    """A snapshot that names an agent team.toml does not have, keyed to an older file."""
    snapshot = Workspace.at(ws).config_snapshot
    assert run_team("status", "--dir", str(ws)).returncode == 0
    data = json.loads(snapshot.read_text())
    data["view"]["agents"].append({"name": "mallory", "budget_usd": None})
    data["key"]["team.toml"][3] = "0" * 64
    snapshot.write_text(json.dumps(data))
    line = _error(ws, "send", "mallory", "hi")
    assert "unknown agent 'mallory'" in line
    assert not (ws / ".team" / "inbox" / "mallory").exists()


def test_no_team_dir_no_snapshot(tmp_path: Path) -> None:
    """`team check` on a hand-written team.toml makes no .team/ for its cache."""
    root = tmp_path / "ws"
    assert run_team("init", "--agents", "alice:coder", "--dir", str(root)).returncode == 0
    assert run_team("check", "--dir", str(root)).returncode == 0
    assert not (root / ".team").exists()


def test_a_read_only_workspace_after_an_edit_still_answers_and_changes_nothing() -> None:
    with shared_dir() as d:
        root = d / "ws"
        assert (
            run_team("init", "--agents", "alice:coder,bob:tester", "--dir", str(root)).returncode
            == 0
        )
        assert run_team("send", "alice", "first", "--dir", str(root)).returncode == 0
        assert run_team("status", "--dir", str(root)).returncode == 0
        toml = root / "team.toml"
        toml.write_text(toml.read_text().replace('role = "coder"', 'role = "writer"'))
        for p in [root, *root.rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        before = tree(root)
        ws = Workspace.at(root)
        r = run_as_reader("status", "--json", ws=ws)  # stale snapshot, and none can be written
        assert r.returncode == 0 and r.stderr == "", r.stderr
        assert json.loads(r.stdout)["agents"]["alice"]["pending"] == 1
        err = one_clear_line(run_as_reader("send", "bob", "hello", ws=ws))
        assert "permission denied" in err or "read-only" in err, err
        assert tree(root) == before
        assert not [p for p in root.rglob("*.tmp")]
