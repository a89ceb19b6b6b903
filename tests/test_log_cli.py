"""`team log` and `team transcripts show` on real session logs and transcripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_team, write_team

from team.compaction.transcripts import TranscriptStore
from team.core.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock

BIG = "line of build output\n" * 200  # 4,200 characters


def _records() -> list[dict]:
    """A segment of tool calls, a compaction, and a new segment: the session-log format."""
    recs: list[dict] = [
        {"t": "user", "blocks": [{"type": "text", "text": "Please fix the parser (#1)"}]}
    ]
    for i in range(5):
        use = ToolUseBlock(f"t{i}", "bash", {"command": f"make step{i}"})
        # the request this reply answers had replaced the results the loop names here
        cleared = ["t0"] if i == 4 else []
        recs.append(
            {
                "t": "assistant",
                "message": Message("assistant", (TextBlock(f"step {i}"), use)).to_dict(),
                "usage": {"input_tokens": 100},
                "cleared": cleared,
            }
        )
        result = ToolResultBlock(f"t{i}", f"result {i}\n" + BIG + f"END{i}", "bash")
        recs.append({"t": "user", "blocks": [result.to_dict()]})
    first = Message.user("<identity>You are 'alice'</identity>\nSummary: fixed step 0-4")
    recs.append(
        {
            "t": "compaction",
            "layer": "auto",
            "trigger": "threshold",
            "transcript": ".transcripts/alice/0001-x-auto.jsonl",
            "tokens_before": 52_000,
            "tokens_after": 1_900,
            "first": first.to_dict(),
        }
    )
    recs.append(
        {
            "t": "assistant",
            "message": Message.assistant("Carrying on after the summary").to_dict(),
            "usage": {},
        }
    )
    return recs


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    write_team(tmp_path)
    log = tmp_path / ".team" / "agents" / "alice" / "session.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    return tmp_path


def test_log_shows_what_the_model_saw_and_marks_compactions(ws: Path) -> None:
    r = run_team("log", "alice", "--dir", str(ws))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Please fix the parser (#1)" in out and "[alice -> bash]" in out
    # t0 was replaced in what the model saw: its placeholder, not its text
    assert "[Previous: used bash]" in out and "END0" not in out and "result 0" not in out
    # long results are cut for a person, with a note saying how to see them
    assert "result 1" in out and "END1" not in out and "--full shows all" in out
    marker = out.index("auto compaction: 52,000 -> 1,900 tokens")
    assert ".transcripts/alice/0001-x-auto.jsonl" in out[marker:]
    assert out.index("Summary: fixed step 0-4") > marker
    assert out.index("Carrying on after the summary") > marker


def test_log_full_shows_the_stored_text(ws: Path) -> None:
    r = run_team("log", "alice", "--full", "--dir", str(ws))
    assert r.returncode == 0, r.stderr
    for i in range(5):
        assert f"END{i}" in r.stdout
    assert "[Previous: used" not in r.stdout
    assert r.stdout.count("line of build output") == 5 * 200


def test_log_of_an_agent_without_a_conversation_is_one_line(ws: Path) -> None:
    for agent, expected in (("bob", "no conversation yet"), ("nobody", "unknown agent")):
        r = run_team("log", agent, "--dir", str(ws))
        assert r.returncode == 1 and expected in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_log_follow_prints_records_as_they_are_appended(ws: Path) -> None:
    log = ws / ".team" / "agents" / "alice" / "session.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "team", "log", "alice", "--follow", "--dir", str(ws)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert proc.stdout is not None
        seen = ""
        while "Carrying on after the summary" not in seen:
            seen += proc.stdout.readline()
        rec = {"t": "user", "blocks": [{"type": "text", "text": "a new message from bob"}]}
        with open(log, "a") as f:
            f.write(json.dumps(rec) + "\n")
        deadline = time.monotonic() + 30
        while "a new message from bob" not in seen and time.monotonic() < deadline:
            seen += proc.stdout.readline()
        assert "a new message from bob" in seen
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode in (0, -15)


def test_transcripts_show_renders_a_transcript(ws: Path) -> None:
    msgs = [
        Message.user("Fix #1"),
        Message("assistant", (ToolUseBlock("u1", "read_file", {"path": "src/p.py"}),)),
        Message("user", (ToolResultBlock("u1", "def parse():\n" + BIG, "read_file"),)),
    ]
    path = TranscriptStore(ws / ".transcripts" / "alice").write(msgs, "auto")
    listed = run_team("transcripts", "alice", "--json", "--dir", str(ws))
    [entry] = json.loads(listed.stdout)
    rel = str(Path(entry["path"]).relative_to(ws))
    r = run_team("transcripts", "show", rel, "--dir", str(ws))
    assert r.returncode == 0, r.stderr
    assert '[alice -> read_file] {"path": "src/p.py"}' in r.stdout
    assert "def parse():" in r.stdout and "--full shows all" in r.stdout
    full = run_team("transcripts", "show", str(path), "--full", "--dir", str(ws))
    assert full.stdout.count("line of build output") == 200
    missing = run_team("transcripts", "show", "nope.jsonl", "--dir", str(ws))
    assert missing.returncode == 1 and "no such transcript" in missing.stderr


def long_log(ws: Path, replies: int = 300) -> None:
    log = ws / ".team" / "agents" / "alice" / "session.jsonl"
    with open(log, "a") as f:
        for i in range(replies):
            msg = Message.assistant(f"reply number {i}")
            f.write(json.dumps({"t": "assistant", "message": msg.to_dict(), "usage": {}}) + "\n")


def test_log_n_shows_the_last_lines_and_says_how_to_see_the_rest(ws: Path) -> None:
    long_log(ws)
    r = run_team("log", "alice", "-n", "5", "--dir", str(ws))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 6 and "reply number 299" in lines[-1]
    assert "earlier lines not shown: -n N shows more, team log alice shows them all" in lines[0]
    whole = run_team("log", "alice", "--dir", str(ws)).stdout
    assert "reply number 0" in whole and "not shown" not in whole


def test_log_follow_starts_from_the_last_screen(ws: Path) -> None:
    long_log(ws)
    proc = subprocess.Popen(
        [sys.executable, "-m", "team", "log", "alice", "--follow", "--dir", str(ws)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LINES": "24", "COLUMNS": "80"},
    )
    try:
        seen = []
        while not seen or "reply number 299" not in seen[-1]:
            seen.append(proc.stdout.readline())
        assert "earlier lines not shown" in seen[0]
        assert len(seen) == 23  # a screen, less the line the prompt needs
    finally:
        proc.terminate()
        proc.wait(timeout=10)
