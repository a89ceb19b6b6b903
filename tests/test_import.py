"""Other agents' logs: the readers, `team import`, and `team experiment --replay FILE`."""

from __future__ import annotations

import json

import pytest
import sessionlogs as S
from conftest import run_team
from fakeapi import FakeMessagesAPI, text_responder

from team.core.conversation import ToolResultBlock, ToolUseBlock, validate
from team.sessions import LogError, read_session
from team.sessions.study import replay_log, strategies_from

# -- the readers (in process: what each format becomes) ---------------------------------


def test_claude_code_is_reduced_to_its_final_conversation(tmp_path):
    s = read_session(S.claude_code(tmp_path / "s.jsonl"))
    main = s.agents[0]
    # the resumed copy is read once, not twice; the redo branch is dropped
    assert [t.key for t in main.replies()] == [f"msg_0{i}" for i in range(2, 8)]
    first = main.replies()[0]
    # one reply from four lines merged on message.id, thinking kept as counted text
    assert [type(b).__name__ for b in first.blocks] == [
        "TextBlock",
        "TextBlock",
        "ToolUseBlock",
        "ToolUseBlock",
    ]
    assert first.blocks[0].text.startswith("[thinking]")
    # both parallel results, though their lines branch off different calls, in one turn
    results = main.turns[2].blocks
    assert [b.tool_use_id for b in results if isinstance(b, ToolResultBlock)] == [
        "toolu_1",
        "toolu_2",
    ]
    assert [b.name for b in results] == ["read_file", "bash"]  # Read -> read_file
    # the image is a placeholder as heavy as the image (800x600 px ~ 640 tokens)
    image = next(b for b in main.turns[6].blocks if "[image" in getattr(b, "text", ""))
    assert image.text.startswith("[image image/png, ~640 tokens]")
    assert len(image.text) == 640 * 4
    # Claude Code's compaction is a record, and its summary is not a turn
    (mark,) = main.compactions
    assert (mark.trigger, mark.pre_tokens, mark.before) == ("manual", 31_000, 10)
    assert "continued from a previous" not in json.dumps(
        [t.message().to_dict() for t in main.turns]
    )
    # the subagent's sidechain is its own agent
    assert [a.name for a in s.agents] == ["main", "sub-ab12cd34"]
    assert [b.name for b in s.agents[1].replies()[0].blocks] == ["Grep"]
    for a in s.agents:  # what the API accepts, up to the last reply
        validate([t.message() for t in a.turns[:-1]])
    assert s.report.kept["images"] == 1 and s.report.kept["thinking blocks"] == 1
    assert s.report.dropped["lines off the final path (branches, resumed copies)"] == 5


@pytest.mark.parametrize(
    ("build", "fmt", "replies", "tools"),
    [
        (S.codex, "codex", 3, {"bash"}),
        (S.gemini, "gemini-cli", 2, {"read_file", "bash"}),
        (S.swe_agent, "swe-agent", 3, {"bash"}),
        (S.mini_swe, "mini-swe-agent", 2, {"bash"}),
        (S.messages_api, "messages-api", 2, {"read_file"}),
    ],
)
def test_each_format_is_detected_by_content(tmp_path, build, fmt, replies, tools):
    s = read_session(build(tmp_path / "log.txt"))  # the name says nothing
    (agent,) = s.agents
    assert s.format == fmt
    assert len(agent.replies()) == replies
    assert {b.name for t in agent.turns for b in t.blocks if isinstance(b, ToolUseBlock)} == tools


def test_recorded_usage_is_split_as_the_messages_api_does(tmp_path):
    codex = read_session(S.codex(tmp_path / "c.jsonl")).agents[0]
    second = codex.replies()[1].usage  # 3200 input, of which 2900 cached
    assert (second.input_tokens, second.cache_read_tokens, second.output_tokens) == (300, 2900, 80)
    gemini = read_session(S.gemini(tmp_path / "g.json")).agents[0]
    assert gemini.replies()[1].usage.cache_read_tokens == 4800
    swe = read_session(S.swe_agent(tmp_path / "s.traj"))
    assert swe.recorded().input_tokens == 4200  # only the run's totals


# -- the CLI ------------------------------------------------------------------------------


def replay_json(log, *, keep_recent=None, preserve_tools=None) -> dict:
    """What `team experiment --replay LOG --json` prints, in process: for tests of the
    replay itself (the command has its own tests here)."""
    strategies = strategies_from(None, keep_recent=keep_recent, preserve_tools=preserve_tools)
    return replay_log(log, threshold=50_000, strategies=strategies).to_dict()


def test_import_then_replay_table(tmp_path):
    log = S.claude_code(tmp_path / "session.jsonl")
    r = run_team("import", str(log), "--to", str(tmp_path / "ws"))
    assert r.returncode == 0, r.stderr
    assert "(claude-code)" in r.stdout and "main (6 replies), sub-ab12cd34 (2 replies)" in r.stdout
    assert "dropped: 5 lines off the final path" in r.stdout
    assert "1 Read -> read_file" in r.stdout and "1 images" in r.stdout
    r = run_team("stats", "-C", str(tmp_path / "ws"), "--json")  # the recorded session
    assert r.returncode == 0, r.stderr
    r = run_team("experiment", "--replay", str(tmp_path / "ws"))
    assert r.returncode == 0, r.stderr
    for row in ("log", "recorded", "manual-only", "reference", "cache-aware", "hybrid"):
        assert f"\n{row} " in r.stdout
    assert "log: 8 calls" in r.stdout
    assert "calibration main:" in r.stdout and "measured from the log's usage" in r.stdout


def test_replay_takes_any_format_directly(tmp_path):
    r = run_team("experiment", "--replay", str(S.gemini(tmp_path / "chat.json")), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["format"] == "gemini-cli"
    assert out["recorded"]["input_tokens_total"] == 10_200
    for o in out["outcomes"]:
        assert {"strategy", "billed_input", "input_tokens_total", "peak_context", "seconds"} <= set(
            o
        )


def test_a_bad_log_is_one_line_and_exit_1(tmp_path):
    log = S.break_line(S.claude_code(tmp_path / "s.jsonl"), 7)
    for args in (
        ("import", str(log), "--to", str(tmp_path / "ws")),
        ("experiment", "--replay", str(log)),
    ):
        r = run_team(*args)
        assert r.returncode == 1
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        assert f"{log}:7: not JSON" in r.stderr
    assert not (tmp_path / "ws").exists()
    r = run_team("import", str(tmp_path / "nothing.json"), "--to", str(tmp_path / "ws"))
    assert r.returncode == 1 and "no such file" in r.stderr


def test_repair_fixes_and_says_what_it_changed(tmp_path):
    log = S.break_line(S.claude_code(tmp_path / "s.jsonl"), 7)
    r = run_team("import", str(log), "--to", str(tmp_path / "ws"), "--repair")
    assert r.returncode == 0, r.stderr
    assert "repaired: dropped unreadable line 7" in r.stdout
    # an orphan result and two replies in a row, in a Messages-API log: valid JSON, so
    # no --repair is needed; the fixes are counted
    doc = json.loads(S.messages_api(tmp_path / "m.json").read_text())
    doc["messages"].insert(2, {"role": "assistant", "content": "thinking aloud"})
    doc["messages"][3]["content"].append(
        {"type": "tool_result", "tool_use_id": "nope", "content": "?"}
    )
    (tmp_path / "m.json").write_text(json.dumps(doc))
    r = run_team("import", str(tmp_path / "m.json"), "--to", str(tmp_path / "ws2"))
    assert r.returncode == 0, r.stderr
    assert (
        "1 assistant turns in a row merged" in r.stdout
        and "1 results without their call dropped" in r.stdout
    )
    r = run_team("experiment", "--replay", str(tmp_path / "ws2"))
    assert r.returncode == 0, r.stderr


def test_calibrated_manual_only_replay_reproduces_the_recorded_input(tmp_path):
    # A session whose agent never compacted: replayed with no compaction, its calls read
    # what the recorded ones did; the calibration must bring that within 20%.
    log = S.claude_code_never_compacted(tmp_path / "s.jsonl", replies=40)
    out = replay_json(log)
    recorded = out["recorded"]["input_tokens_total"]
    manual = next(o for o in out["outcomes"] if o["strategy"] == "manual-only")
    assert abs(manual["input_tokens_total"] / recorded - 1) < 0.20
    # the hour-long pauses expired the recorded cache; replayed on the recorded clock,
    # they expire it too (a cache kept warm across them would bill far less)
    assert abs(manual["billed_input"] / out["recorded"]["billed_input"] - 1) < 0.20
    cal = out["calibration"]["main"]
    assert cal["measured"] and 15_000 < cal["prefix_tokens"] < 25_000  # the fixture's 20k


def test_tool_name_map_makes_preserve_tools_mean_the_same(tmp_path):
    log = S.claude_code_never_compacted(tmp_path / "s.jsonl", replies=12)

    def micro(out: dict) -> int:
        ref = next(o for o in out["outcomes"] if o["strategy"] == "reference")
        return ref["compactions"].get("micro", 0)

    assert micro(replay_json(log)) == 0  # Claude Code's Read is our read_file: preserved
    r = run_team("experiment", "--replay", str(log), "--json", "--preserve-tools", "")
    assert r.returncode == 0, r.stderr
    assert micro(json.loads(r.stdout)) > 0  # nothing preserved: old reads are cleared
    assert micro(replay_json(log, preserve_tools=[], keep_recent=20)) == 0


def test_strategy_file(tmp_path):
    toml = tmp_path / "mine.toml"
    toml.write_text(
        '[strategy.tight]\ndescription = "window of 1"\nkeep_recent = 1\npreserve_tools = []\n'
    )
    log = S.claude_code_never_compacted(tmp_path / "s.jsonl", replies=6)
    r = run_team("experiment", "--replay", str(log), "--strategy", str(toml))
    assert r.returncode == 0, r.stderr
    assert "\ntight " in r.stdout and "tight: window of 1" in r.stdout
    toml.write_text("[strategy.bad]\nkeep_recnt = 1\n")
    r = run_team("experiment", "--replay", str(log), "--strategy", str(toml))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "strategy.bad" in r.stderr


def test_summary_model_answers_the_replays_summaries(tmp_path):
    # long enough that a compaction frees a fifth of the context: its ~20k-token recorded
    # prefix stays whatever is summarised (issue 25)
    log = S.claude_code_never_compacted(tmp_path / "s.jsonl", replies=30)
    with FakeMessagesAPI(text_responder("REAL SUMMARY: read src/m1.py")) as api:
        env = {"ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": api.url}
        r = run_team(
            "experiment",
            "--replay",
            str(log),
            "--threshold",
            "2000",
            "--json",
            "--summary-model",
            "claude-haiku-4-5",
            env=env,
        )
        assert r.returncode == 0, r.stderr
        assert api.requests, "no summary came from the model"
        assert all(req["model"] == "claude-haiku-4-5" for req in api.requests)
    out = json.loads(r.stdout)
    ref = next(o for o in out["outcomes"] if o["strategy"] == "reference")
    assert ref["compactions"].get("auto", 0) >= 1


def test_log_error_names_file_line_and_problem(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"hello": 1}\n{"world": 2}\n')
    with pytest.raises(LogError, match=r"x.jsonl:1: not a session log"):
        read_session(p)


def test_subagents_in_their_own_files_are_agents_too(tmp_path):
    log = S.claude_code(tmp_path / "5e55.jsonl")
    sub = tmp_path / "5e55" / "subagents"
    sub.mkdir(parents=True)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    side = [x for x in lines if x.get("isSidechain")]
    (sub / "agent-9f8e7d6c.jsonl").write_text("".join(json.dumps(x) + "\n" for x in side))
    s = read_session(log)
    assert [a.name for a in s.agents] == ["main", "sub-ab12cd34", "sub-9f8e7d6c"]
    assert len(s.agents[2].replies()) == 2
