"""SWE-agent, mini-swe-agent, Gemini CLI and exported Claude Code logs in the shapes
their public logs have and the readers first missed: a call id used twice, messages
alone in a list, JSON Lines, a `loglines` wrapper. All through the CLI, as a user runs it.

The fixtures are in tests/fixtures/sessions/ (written by `session_formats`; the README
there names the public file each is shaped after).
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_team
from session_formats import gemini_jsonl

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
ROWS = ("log", "recorded", "manual-only", "reference", "cache-aware", "hybrid")


def replay(path: Path, *args: str) -> dict:
    r = run_team("experiment", "--replay", str(path), "--json", "--no-save", *args, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout)


def replay_text(path: Path) -> str:
    r = run_team("experiment", "--replay", str(path), "--no-save", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r.stdout


def calls(path: Path, tmp_path: Path) -> list[dict]:
    """The tool calls `team import` wrote for the main agent, as the replay reads them."""
    r = run_team("import", str(path), "--to", str(tmp_path / "ws"))
    assert r.returncode == 0, r.stderr
    log = tmp_path / "ws" / ".team" / "agents" / "main" / "session.jsonl"
    out = []
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("t") == "assistant":
            out += [b for b in rec["message"]["content"] if b["type"] == "tool_use"]
    return out


def test_a_call_id_used_twice_is_made_unique_and_the_replay_completes(tmp_path):
    log = FIXTURES / "swe-agent-fc-repeated-ids.traj"
    out = replay(log)
    imp = out["import"]
    assert out["format"] == "swe-agent"
    assert imp["normalised"] == {"repeated tool call ids made unique": 1}
    assert imp["kept"]["replies"] == 9
    assert imp["requests_kept"] == imp["requests_recorded"] == 9  # info.model_stats.api_calls
    assert out["recorded"]["calls"] == 9
    assert {o["strategy"] for o in out["outcomes"]} >= set(ROWS[1:])
    ids = [c["id"] for c in calls(log, tmp_path)]
    assert len(ids) == len(set(ids)) == 9
    text = replay_text(log)
    assert "kept 9 of 9 recorded requests" in text
    assert "normalised: 1 repeated tool call ids made unique" in text
    assert "log: 9 calls, input tokens total 40,000" in text
    assert "peak context not recorded" in text


def test_a_repeated_call_id_is_made_unique_in_any_format(tmp_path):
    """Messages-API JSON, one id for two calls in one reply and a third in the next: each
    call its own id, each result following its call."""
    use = {"type": "tool_use", "id": "t1", "name": "read_file"}
    doc = {
        "messages": [
            {"role": "user", "content": "Read a.txt and b.txt, then c.txt."},
            {
                "role": "assistant",
                "content": [
                    {**use, "input": {"path": "a.txt"}},
                    {**use, "input": {"path": "b.txt"}},
                ],
                "usage": {"input_tokens": 900, "output_tokens": 30},
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "alpha"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "beta"},
                ],
            },
            {
                "role": "assistant",
                "content": [{**use, "input": {"path": "c.txt"}}],
                "usage": {"input_tokens": 950, "output_tokens": 20},
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "gamma"}],
            },
            {"role": "assistant", "content": "alpha, beta, gamma.", "usage": {"input_tokens": 990}},
        ]
    }
    log = tmp_path / "api.json"
    log.write_text(json.dumps(doc))
    out = replay(log)
    assert out["import"]["normalised"] == {"repeated tool call ids made unique": 2}
    assert out["import"]["dropped"] == {}
    ids = [c["id"] for c in calls(log, tmp_path)]
    assert ids == ["t1", "t1-2", "t1-3"]
    results = [
        (b["tool_use_id"], b["content"])
        for line in (tmp_path / "ws/.team/agents/main/session.jsonl").read_text().splitlines()
        for b in json.loads(line).get("blocks", [])
        if b["type"] == "tool_result"
    ]
    assert results == [("t1", "alpha"), ("t1-2", "beta"), ("t1-3", "gamma")]


def test_mini_swe_agent_messages_alone_read_like_its_trajectory(tmp_path):
    log = FIXTURES / "mini-swe-agent-messages.traj.json"
    out = replay(log)
    assert out["format"] == "mini-swe-agent"
    assert out["import"]["kept"]["replies"] == 7
    assert out["import"]["requests_recorded"] is None  # it says nothing of its calls
    # the system message is the fixed prefix; each fenced command a bash call
    assert out["calibration"]["main"]["prefix_tokens"] > 0
    found = calls(log, tmp_path)
    assert [c["name"] for c in found] == ["bash"] * 7
    assert found[0]["input"] == {"command": "cat src/m0.py"}


def test_a_saved_mini_swe_agent_run_says_kept_of_recorded():
    log = FIXTURES / "mini-swe-agent-1.traj.json"
    out = replay(log)
    assert out["format"] == "mini-swe-agent"
    assert out["import"]["requests_kept"] == out["import"]["requests_recorded"] == 7
    assert out["recorded"]["calls"] == 7
    assert out["held_out"] is not None and out["held_out"]["total_error"] <= 0.10
    text = replay_text(log)
    assert "kept 7 of 7 recorded requests" in text and "log: 7 calls" in text


def test_gemini_cli_json_lines_are_read(tmp_path):
    log = FIXTURES / "gemini-cli-0.40.jsonl"
    out = replay(log)
    imp = out["import"]
    assert out["format"] == "gemini-cli"
    assert imp["kept"]["replies"] == 6
    assert imp["requests_kept"] == imp["requests_recorded"] == 6
    assert imp["dropped"] == {"session field updates ($set lines)": 6}
    assert imp["renamed"] == {"run_shell_command -> bash": 5}
    assert out["recorded"]["calls"] == 6
    assert "kept 6 of 6 recorded requests" in replay_text(log)
    assert [c["input"]["command"] for c in calls(log, tmp_path)][:2] == ["cat m0.py", "cat m1.py"]


def test_a_gemini_message_written_again_keeps_its_last_copy(tmp_path):
    lines = gemini_jsonl(tmp_path / "g.jsonl").read_text().splitlines()
    first = json.loads(lines[3])  # the first reply, with its tool call
    again = {**first, "content": "Listed again."}
    log = tmp_path / "again.jsonl"
    log.write_text("\n".join([*lines, json.dumps(again)]) + "\n")
    out = replay(log)
    assert out["import"]["normalised"] == {"messages written again (the last copy kept)": 1}
    assert out["import"]["requests_kept"] == out["import"]["requests_recorded"] == 6


def test_a_gemini_chat_says_kept_of_recorded():
    out = replay(FIXTURES / "gemini-cli.json")
    assert out["import"]["requests_kept"] == out["import"]["requests_recorded"] == 2


def test_claude_code_loglines_go_to_the_claude_code_reader(tmp_path):
    log = FIXTURES / "claude-code-transcripts-loglines.json"
    out = replay(log)
    imp = out["import"]
    assert out["format"] == "claude-code"
    assert imp["kept"]["replies"] == 11
    assert imp["kept"]["compactions"] == 1  # the isCompactSummary line, a root of its own
    assert imp["normalised"] == {"lines without links, linked in file order": 24}
    assert imp["renamed"] == {"Bash -> bash": 10}
    assert imp["requests_recorded"] is None  # no usage in the export: nothing to keep of
    assert len(calls(log, tmp_path)) == 10
    assert "recorded requests" not in replay_text(log)


def test_a_loglines_wrapper_of_no_lines_is_one_line(tmp_path):
    log = tmp_path / "empty.json"
    log.write_text('{"loglines": [1, "two"]}')
    r = run_team("experiment", "--replay", str(log), "--no-save")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and "not a session log this version can read" in r.stderr


def test_a_document_saved_on_one_long_line_reads_as_the_document(tmp_path):
    """`json.dump` writes a trajectory on one line with no newline at the end: past the
    first 64 KiB that looks like JSON Lines, and must still read as the document."""
    doc = json.loads((FIXTURES / "swe-agent-fc-repeated-ids.traj").read_text())
    doc.setdefault("info", {})["note"] = "x" * 70_000  # a long first line, as real ones are
    swe = tmp_path / "one-line.traj"
    swe.write_text(json.dumps(doc))
    events = json.loads((FIXTURES / "openhands-v1-state.json").read_text())
    events = events["history"] if isinstance(events, dict) else events
    events[0] = {**events[0], "note": "y" * 70_000}
    oh = tmp_path / "one-line-events.json"
    oh.write_text(json.dumps(events))
    for log, format_ in ((swe, "swe-agent"), (oh, "openhands")):
        assert log.stat().st_size > 1 << 16 and "\n" not in log.read_text()
        out = replay(log)
        assert out["format"] == format_
        assert out["import"]["kept"]["replies"] > 5
