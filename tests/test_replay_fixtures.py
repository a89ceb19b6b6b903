"""The one-tool-per-reply Claude Code fixtures, replayed through the CLI.

Real agents make about one tool call per reply (the sim makes several, which hides
what a clear costs), so the default strategy is judged on these: it must never bill
more than manual-only (micro and auto off). Billing is the replay's simulated cache,
calibrated on the log's own usage: a deterministic computation, not a timing.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys

import pytest
from conftest import ROOT, run_team

FIXTURES = ROOT / "bench" / "fixtures"
REPLIES = {"cc-one-tool-40": 40, "cc-one-tool-71": 71, "cc-prefix-60k": 120}
COMMITTED = list(REPLIES)


def test_the_committed_fixtures_are_what_the_generator_writes(tmp_path):
    script = ROOT / "bench" / "session_fixtures.py"
    r = subprocess.run(
        [sys.executable, str(script), "--committed", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    for name in COMMITTED:
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (
            FIXTURES / f"{name}.jsonl"
        ).read_bytes()


@pytest.mark.parametrize("name", COMMITTED)
def test_replayed_through_the_cli_default_never_bills_more_than_manual_only(name):
    r = run_team("experiment", "--replay", str(FIXTURES / f"{name}.jsonl"), "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    rows = {o["strategy"]: o for o in got["outcomes"]}
    assert {"manual-only", "reference", "default"} <= rows.keys()
    replies = REPLIES[name]
    assert got["import"]["kept"]["replies"] == replies
    assert got["format"] == "claude-code"
    # the same recorded work under every strategy: tool results come from the log
    assert len({o["tool_output_chars"] for o in rows.values()}) == 1
    assert rows["default"]["agent_calls"] == replies
    assert rows["default"]["billed_input"] <= rows["manual-only"]["billed_input"]


def test_a_pause_in_the_recording_finds_the_cache_cold_and_micro_clears_for_free(tmp_path):
    # cc-one-tool-71 has pauses longer than the 5-minute TTL. The compactor runs on the
    # recorded times, so it sees them as the replay's cache does: its first clear is on
    # a cold cache (nothing to rewrite), which is what later warm clears are paid from.
    path = FIXTURES / "cc-one-tool-71.jsonl"
    r = run_team("experiment", "--replay", str(path), "--keep", str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    conn = sqlite3.connect(tmp_path / "default" / ".team" / "events.db")
    try:
        clears = conn.execute(
            "SELECT rewrite_tokens FROM compactions WHERE layer = 'micro' ORDER BY ts, id"
        ).fetchall()
    finally:
        conn.close()
    assert clears and clears[0][0] == 0


def test_a_60k_prefix_on_a_50k_threshold_compacts_once_per_25k_of_growth(tmp_path):
    # issue 25: a fixed prefix above the threshold made every reply a compaction (a
    # summary and a fresh context each time, for a context that stayed the same size)
    path = FIXTURES / "cc-prefix-60k.jsonl"
    r = run_team("experiment", "--replay", str(path), "--keep", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["calibration"]["main"]["prefix_tokens"] > 55_000
    rows = {o["strategy"]: o for o in got["outcomes"]}
    assert rows["default"]["billed_input"] <= rows["manual-only"]["billed_input"]
    conn = sqlite3.connect(tmp_path / "default" / ".team" / "events.db")
    try:
        autos = conn.execute(
            "SELECT tokens_before, tokens_after FROM compactions "
            "WHERE layer = 'auto' AND success ORDER BY ts, id"
        ).fetchall()
    finally:
        conn.close()
    prefix = got["calibration"]["main"]["prefix_tokens"]
    grown = rows["manual-only"]["peak_context"] - prefix  # the compactable part, at most
    assert 1 <= len(autos) <= grown // 25_000
    for (_, after), (before, _) in itertools.pairwise(autos):
        assert before - after >= 25_000  # the set growth between two, every time
    assert all(before >= 50_000 for before, _ in autos)
