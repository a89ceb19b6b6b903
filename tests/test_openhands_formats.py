"""OpenHands logs as they come: V1 (software-agent-sdk) events as evaluation output and
as a saved state, and V0 events from before they had a `source`. All through the CLI.

The fixtures are written by `session_formats` after public OpenHands output (README in
tests/fixtures/sessions/).
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_team

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
V1_OUTPUT = FIXTURES / "openhands-v1-output.jsonl"
V1_STATE = FIXTURES / "openhands-v1-state.json"
RESOLVER = FIXTURES / "openhands-resolver.jsonl"


def replay(path: Path, *args: str) -> dict:
    r = run_team("experiment", "--replay", str(path), "--json", *args, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout)


def imported(path: Path, to: Path) -> dict[str, list[dict]]:
    """Each agent's turns as `team import` writes them."""
    r = run_team("import", str(path), "--to", str(to))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    logs = sorted((to / ".team" / "agents").glob("*/session.jsonl"))
    return {p.parent.name: [json.loads(ln) for ln in p.read_text().splitlines()] for p in logs}


def blocks(turns: list[dict], role: str, kind: str) -> list[dict]:
    out = []
    for t in turns:
        if t.get("t") == "assistant" and role == "assistant":
            out += [b for b in t["message"]["content"] if b["type"] == kind]
        elif t.get("t") == "user" and role == "user":
            out += [b for b in t["blocks"] if b["type"] == kind]
    return out


def test_v1_output_reads_parallel_calls_as_one_reply_with_its_usage(tmp_path):
    out = replay(V1_OUTPUT)
    imp = out["import"]
    assert out["format"] == "openhands"
    assert imp["kept"]["sessions (instances)"] == 2
    assert imp["kept"]["replies"] == 24
    assert imp["requests_kept"] == imp["requests_recorded"] == 24
    # the second instance has no user message: its task is the instance's instruction
    assert imp["kept"]["tasks from the instance's instruction"] == 1
    assert imp["repaired"] == [] and imp["normalised"] == {}
    held = out["held_out"]
    assert held is not None and held["calls"] >= 2
    assert held["total_error"] <= 0.05 and held["p90"] <= 0.10
    agents = imported(V1_OUTPUT, tmp_path / "ws")
    assert set(agents) == {"acme__repo-200", "acme__repo-201"}
    for turns in agents.values():
        calls = blocks(turns, "assistant", "tool_use")
        assert len(calls) == 12 + 2  # 12 replies, two of them with a second call
        assert len(blocks(turns, "user", "tool_result")) == len(calls)


def test_v1_output_text_report_says_kept_of_recorded_and_held_out():
    r = run_team("experiment", "--replay", str(V1_OUTPUT), timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "kept 24 of 24 recorded requests" in r.stdout
    assert "held-out calibration: fitted on the first half" in r.stdout
    assert "x log" in r.stdout


def test_v1_state_keeps_the_condensation_and_counts_what_it_skips():
    out = replay(V1_STATE)
    imp = out["import"]
    assert imp["kept"]["replies"] == 25
    assert imp["kept"]["compactions"] == 1
    # the condenser's own call is the compaction, not a request a reply could keep
    assert imp["requests_kept"] == imp["requests_recorded"] == 25
    assert imp["dropped"] == {
        "ConversationStateUpdateEvent events (not the conversation)": 1,
        "events of unknown kind 'HologramEvent' (skipped)": 1,
    }
    assert out["held_out"] is not None and out["held_out"]["total_error"] <= 0.05
    row = next(o for o in out["outcomes"] if o["strategy"] == "recorded")
    assert sum(row["compactions"].values()) == 1 and not row["compactions"].get("micro")


def test_v1_error_and_rejection_answer_their_calls(tmp_path):
    (turns,) = imported(V1_STATE, tmp_path / "ws").values()
    results = {b["tool_use_id"]: b for b in blocks(turns, "user", "tool_result")}
    assert results["toolu_agen"]["content"] == "Tool 'edit' not found."
    assert results["toolu_agen"]["is_error"] is True
    assert results["toolu_user"]["content"] == "Action rejected: not now"


def test_malformed_v1_events_are_skipped_and_counted(tmp_path):
    lines = V1_OUTPUT.read_text().splitlines()
    doc = json.loads(lines[0])
    history = doc["history"]
    action = next(e for e in history if e["kind"] == "ActionEvent")
    odd = [
        {**action, "tool_call_id": None, "tool_call": None},  # a call without an id
        {"kind": "ObservationEvent", "tool_call_id": "toolu_x", "observation": "junk"},
        {"kind": "MessageEvent", "source": "user", "llm_message": None},
        {"kind": "ActionEvent", "tool_call": {"id": "toolu_y", "arguments": 7}},
        7,
        {"kind": None},
    ]
    doc["history"] = history[:4] + odd + history[4:]
    log = tmp_path / "output.jsonl"
    log.write_text("\n".join([json.dumps(doc), *lines[1:]]) + "\n")
    out = replay(log)
    dropped = out["import"]["dropped"]
    assert dropped["malformed ActionEvent events (skipped)"] == 1
    assert dropped["malformed ObservationEvent events (skipped)"] == 1
    assert dropped["malformed MessageEvent events (skipped)"] == 1
    assert dropped["events that are not objects"] == 1
    assert dropped["events of unknown kind None (skipped)"] == 1
    # a call whose arguments are not JSON text is kept, with none
    assert out["import"]["kept"]["replies"] == 25
    assert out["import"]["requests_kept"] == 24


def test_v0_without_source_reads_actions_as_the_agents_calls(tmp_path):
    out = replay(RESOLVER)
    imp = out["import"]
    assert imp["kept"]["replies"] == 14
    assert imp["requests_recorded"] is None  # only costs: no request's usage
    assert imp["repaired"] == [] and imp["normalised"] == {}
    agents = imported(RESOLVER, tmp_path / "ws")
    for turns in agents.values():
        # the issue is the only text the user wrote; every action is a call
        assert len(blocks(turns, "user", "text")) == 1
        calls = blocks(turns, "assistant", "tool_use")
        assert [c["name"] for c in calls] == ["run", "run_ipython"] * 3 + ["finish"]
        assert calls[0]["input"] == {"command": "cat /workspace/m0.py"}
        assert len(blocks(turns, "user", "tool_result")) == 6
