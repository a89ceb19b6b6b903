"""A session log written before the records were typed (commit aa32f4f, by `team demo`)
still loads, reads in `team log`, and resumes under `team up` without being rewritten."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import run_team

from team.agents.session.log import SessionLog
from team.workspace.config import render_config
from team.workspace.places import Workspace

OLD_LOG = Path(__file__).parent / "fixtures" / "pre_records_session.jsonl"


def _workspace(tmp_path: Path) -> Workspace:
    ws = Workspace.at(tmp_path)
    agents = [("alice", "coder"), ("bob", "tester"), ("carol", "reviewer")]
    (tmp_path / "team.toml").write_text(render_config("demo", "sim", agents, threshold=6000))
    ws.session_log("bob").parent.mkdir(parents=True)
    shutil.copy(OLD_LOG, ws.session_log("bob"))
    return ws


def test_the_old_log_loads_whole(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    log = SessionLog(ws.session_log("bob"))
    history = log.load()
    assert not log.skipped
    # the log holds one manual compaction: the live segment starts with bob's identity
    assert history.segment == 1
    first = history.messages[0].text()
    assert first.startswith("<identity>You are 'bob', role: tester")
    assert "Summary of everything before this point" in first
    assert history.messages[-1].role == "assistant"


def test_team_log_reads_it_and_marks_the_compaction(tmp_path: Path) -> None:
    _workspace(tmp_path)
    out = run_team("log", "bob", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "compact" in out.stdout.lower()
    assert "Check that tests/test_inventory.py covers every function" in out.stdout
    assert out.stderr == ""


def test_team_up_resumes_it_and_only_appends(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    old = OLD_LOG.read_bytes()
    sent = run_team("send", "bob", "Say which task you finished last.", cwd=tmp_path)
    assert sent.returncode == 0, sent.stderr
    up = run_team("up", "--until-idle", "--idle-grace", "0.5", cwd=tmp_path, timeout=120)
    assert up.returncode == 0, up.stderr
    assert "repaired" not in up.stdout + up.stderr  # nothing to mend: the format is current
    now = ws.session_log("bob").read_bytes()
    assert now.startswith(old)  # never rewritten: the old records stay as they were
    added = [json.loads(line) for line in now[len(old) :].decode().splitlines() if line]
    took = [r for r in added if r["t"] == "user" and r.get("inbox")]
    assert took, "bob never took the message in"
    assert any(r["t"] == "assistant" for r in added)  # and answered it
