"""Study tools on a real sim run: events for every call, compaction and delivery."""

from __future__ import annotations

import json
import sqlite3

import pytest
from conftest import run_team

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("study") / "demo"
    r = run_team("demo", "--latency", "0", "--dir", str(root), timeout=300)
    assert r.returncode == 0, r.stderr
    return root, r.stdout


def q(root, sql):
    conn = sqlite3.connect(root / ".team" / "events.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_every_call_compaction_and_delivery_is_recorded(demo_run):
    root, out = demo_run
    calls = dict(
        q(root, "select purpose, count(*) from model_calls where error is null group by 1")
    )
    # the run summary counts from the live events; the database must hold the same
    assert f"model calls: {calls['agent']} agent, {calls['summary']} summary" in out
    layers = dict(q(root, "select layer, count(*) from compactions where success group by 1"))
    counts = ", ".join(f"{k} {layers.get(k, 0)}" for k in ("micro", "auto", "manual"))
    assert counts in out
    # each auto/manual compaction left a transcript and a session-log record
    transcripts = list((root / ".transcripts").rglob("*.jsonl"))
    assert len(transcripts) == layers.get("auto", 0) + layers.get("manual", 0)
    # every message taken in by an agent has a received event with its latency
    taken = set()
    for log in (root / ".team" / "agents").glob("*/session.jsonl"):
        for line in log.read_text().splitlines():
            taken.update(json.loads(line).get("inbox", []))
    received = {
        r[0]
        for r in q(root, "select msg_id from deliveries where kind='received' and latency_s >= 0")
    }
    assert taken and taken == received


def test_stats_json_matches_the_database(demo_run):
    root, _ = demo_run
    r = run_team("stats", "--json", "--dir", str(root))
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    for agent, s in stats["agents"].items():
        (n_agent,) = q(
            root,
            "select count(*) from model_calls"
            f" where agent='{agent}' and purpose='agent' and error is null",
        )[0]
        assert s["agent_calls"] == n_agent
        (tin, tout, cr, cw) = q(
            root,
            "select total(input_tokens), total(output_tokens), total(cache_read_tokens),"
            f" total(cache_write_tokens) from model_calls where agent='{agent}'",
        )[0]
        assert (
            s["input_tokens"],
            s["output_tokens"],
            s["cache_read_tokens"],
            s["cache_write_tokens"],
        ) == (tin, tout, cr, cw)
        for layer in ("micro", "auto", "manual"):
            (n,) = q(
                root,
                "select count(*) from compactions"
                f" where agent='{agent}' and layer='{layer}' and success",
            )[0]
            assert s["compactions"][layer]["ok"] == n
    (total,) = q(root, "select count(*) from model_calls where purpose='agent' and error is null")[
        0
    ]
    assert stats["team"]["agent_calls"] == total


def test_report_draws_that_run(demo_run, tmp_path):
    root, _ = demo_run
    out = tmp_path / "x.png"
    r = run_team("report", "--out", str(out), "--dir", str(root))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == PNG and out.stat().st_size > 10_000
    html = out.with_suffix(".html").read_text()
    assert 'src="x.png"' in html


def test_transcripts_lists_that_run(demo_run):
    root, _ = demo_run
    r = run_team("transcripts", "--json", "--dir", str(root))
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert len(listed) == len(list((root / ".transcripts").rglob("*.jsonl")))


def test_retention_is_recorded_per_kind_for_every_summary(demo_run):
    root, _ = demo_run
    rows = q(
        root,
        "select retention, retention_tasks, retention_names, retention_paths"
        " from compactions where layer != 'micro' and success",
    )
    assert rows
    for overall, tasks, _names, paths in rows:
        assert overall is not None and 0 <= overall <= 1
        # open task ids live in the identity block, which begins every new context
        assert tasks in (None, 1.0)
        assert paths is None or 0 <= paths <= 1


def test_an_older_event_database_gains_the_new_columns(tmp_path):
    from team.core.events import CompactionEvent, SqliteEventLog

    db = tmp_path / "events.db"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE compactions (id INTEGER PRIMARY KEY, agent TEXT, layer TEXT, trigger TEXT,"
        " tokens_before INTEGER, tokens_after INTEGER, messages_before INTEGER,"
        " messages_after INTEGER, ts REAL)"
    )
    conn.commit()
    conn.close()
    log = SqliteEventLog(db)
    log.emit(CompactionEvent("a", "auto", "t", 10, 5, 4, 1, retention_paths=0.5))
    log.close()
    conn = sqlite3.connect(db)
    assert conn.execute("select retention_paths from compactions").fetchall() == [(0.5,)]
    conn.close()
