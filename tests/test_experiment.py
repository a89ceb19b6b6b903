"""`team experiment`: the strategy table on a small sim workload, and replay of a recorded run.

Everything goes through the CLI in a subprocess, as a user would run it; the kept run
folders are then read back with `team stats` and the session logs on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_team

STRATEGIES = {"manual-only", "reference", "default", "cache-aware", "hybrid"}
SMALL = ("--tasks", "3", "--threshold", "12000", "--seed", "3")


def experiment(*args: str) -> dict:
    r = run_team("experiment", "--json", *args, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def by_name(table: dict) -> dict[str, dict]:
    return {o["strategy"]: o for o in table["outcomes"]}


def tool_results(session: Path) -> dict[str, str]:
    out = {}
    for line in session.read_text().splitlines():
        rec = json.loads(line)
        if rec["t"] == "user":
            for b in rec["blocks"]:
                if b["type"] == "tool_result":
                    out[b["tool_use_id"]] = b["content"]
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[dict, Path]:
    runs = tmp_path_factory.mktemp("runs")
    return experiment(*SMALL, "--keep", str(runs)), runs


def test_every_strategy_runs_the_same_work_to_the_end(recorded) -> None:
    table, _ = recorded
    rows = by_name(table)
    assert set(rows) == STRATEGIES
    for name, o in rows.items():
        assert o["tasks_total"] == 9 and o["tasks_completed"] == 9, name
    assert rows["reference"]["ratio"] == 1.0
    # the threshold is low enough that the reference really auto-compacts
    assert rows["reference"]["compactions"]["auto"] >= 1
    assert rows["reference"]["compactions"]["micro"] >= 1


def test_manual_only_has_no_micro_or_auto_and_the_largest_context(recorded) -> None:
    rows = by_name(recorded[0])
    none = rows["manual-only"]
    assert none["compactions"]["micro"] == 0 and none["compactions"]["auto"] == 0
    others = [o["peak_context"] for n, o in rows.items() if n != "manual-only"]
    assert none["peak_context"] > max(others)


def test_json_rows_keep_the_cost_fields_and_default_is_the_config_default(recorded) -> None:
    table, _ = recorded
    for o in table["outcomes"]:
        assert {"strategy", "billed_input", "cache_read_tokens", "cache_write_tokens"} <= set(o)
    assert table["strategies"]["default"]["overrides"] == {}
    assert table["strategies"]["reference"]["overrides"]["micro_policy"] == "eager"


def test_cache_aware_micro_writes_less_cache_than_the_reference(recorded) -> None:
    rows = by_name(recorded[0])
    assert rows["cache-aware"]["cache_write_tokens"] < rows["reference"]["cache_write_tokens"]


def test_the_table_agrees_with_team_stats(recorded) -> None:
    from team.study.stats import stats
    from team.workspace.places import Workspace

    table, runs = recorded
    first, *rest = table["outcomes"]
    r = run_team("stats", "--json", "--dir", str(runs / first["strategy"]))
    assert r.returncode == 0, r.stderr
    numbers = [(first, json.loads(r.stdout)["team"])]
    for o in rest:  # what `team stats --json` prints, without a process each
        ws = Workspace.at(runs / o["strategy"])
        numbers.append((o, stats(ws.events_db, ws.load_config().team.model).to_dict()["team"]))
    for o, team in numbers:
        assert team["billed_input"] == pytest.approx(o["billed_input"])
        assert team["summary_share"] == pytest.approx(o["summary_share"])


def test_replay_reproduces_the_recorded_tool_results(recorded, tmp_path) -> None:
    table, runs = recorded
    source = runs / "reference"
    replayed = experiment("--replay", str(source), "--threshold", "12000", "--keep", str(tmp_path))
    rows = by_name(replayed)
    assert set(rows) == STRATEGIES
    for name in STRATEGIES:
        for agent in ("reader", "runner", "coder"):
            want = tool_results(source / ".team" / "agents" / agent / "session.jsonl")
            got = tool_results(tmp_path / name / ".team" / "agents" / agent / "session.jsonl")
            assert want and got == want, (name, agent)
        assert rows[name]["tasks_completed"] == 9
    # replayed under the strategy it was recorded with, the run costs exactly the same
    live = by_name(table)["reference"]
    assert rows["reference"]["billed_input"] == pytest.approx(live["billed_input"])
    assert rows["reference"]["compactions"] == live["compactions"]
    assert rows["manual-only"]["compactions"]["auto"] == 0


def test_replay_of_one_agent_log(recorded) -> None:
    _, runs = recorded
    log = runs / "hybrid" / ".team" / "agents" / "runner" / "session.jsonl"
    rows = by_name(experiment("--replay", str(log)))
    assert set(rows) == STRATEGIES
    assert rows["reference"]["agent_calls"] == rows["hybrid"]["agent_calls"] > 0


def test_bad_replay_path_is_one_clear_line(tmp_path) -> None:
    junk = tmp_path / "session.jsonl"
    junk.write_text("not json\n{}\n")
    for path in (tmp_path / "missing", junk):
        r = run_team("experiment", "--replay", str(path))
        assert r.returncode == 1
        assert r.stderr.startswith("team: error: ") and len(r.stderr.strip().splitlines()) == 1
        assert "Traceback" not in r.stderr
