"""The cache lifetime on model-call events, and `team stats` billing 1h writes at 2x."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import run_team
from teamrun import IDLE_GRACE, assign, make_workspace

from team.workspace.config import render_config


def _calls(db: Path) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM model_calls")]
    finally:
        conn.close()


def _billed(rows: list[dict], write_price: float) -> float:
    return sum(
        r["input_tokens"] + write_price * r["cache_write_tokens"] + 0.1 * r["cache_read_tokens"]
        for r in rows
    )


def test_a_1h_cache_is_recorded_on_every_call_and_stats_bill_its_writes_at_2x(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim", micro_policy="cost")
    toml = ws.root / "team.toml"
    toml.write_text(toml.read_text().replace("[compaction]\n", '[compaction]\ncache_ttl = "1h"\n'))
    assign(ws, "alice", "Review src/inventory.py and list its functions")
    r = run_team(
        "up", "--until-idle", "--idle-grace", IDLE_GRACE, "--dir", str(ws.root), timeout=120
    )
    assert r.returncode == 0, r.stderr

    rows = _calls(ws.events_db)
    assert rows and {r["cache_ttl"] for r in rows} == {"1h"}  # summaries too
    assert sum(r["cache_write_tokens"] for r in rows) > 0
    got = json.loads(run_team("stats", "--json", "--dir", str(ws.root)).stdout)
    assert got["team"]["billed_input"] == pytest.approx(_billed(rows, 2.0))
    assert got["team"]["billed_input"] > _billed(rows, 1.25)


OLD_SCHEMA = """CREATE TABLE model_calls (id INTEGER PRIMARY KEY, agent TEXT, purpose TEXT,
input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER,
cache_write_tokens INTEGER, estimate INTEGER, duration_s REAL, error TEXT, ts REAL)"""


def test_an_events_database_from_before_the_ttl_column_loads_and_bills_5m_writes(tmp_path):
    (tmp_path / "team.toml").write_text(render_config("old", "sim", [("alice", "coder")]))
    db = tmp_path / ".team" / "events.db"
    db.parent.mkdir()
    conn = sqlite3.connect(db)
    conn.execute(OLD_SCHEMA)
    conn.execute(
        "INSERT INTO model_calls (agent, purpose, input_tokens, output_tokens, cache_read_tokens,"
        " cache_write_tokens, estimate, duration_s, ts) VALUES"
        " ('alice', 'agent', 100, 50, 10000, 2000, 0, 0.1, 1700000000)"
    )
    conn.commit()
    conn.close()

    r = run_team("stats", "--json", "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    team = json.loads(r.stdout)["team"]
    assert team["billed_input"] == pytest.approx(100 + 1.25 * 2000 + 0.1 * 10000)
    # 1.25 x $3 per million for the writes at Sonnet 4.5's list price, not 2 x
    assert team["usd"] == pytest.approx((100 * 3 + 2000 * 3.75 + 10000 * 0.3 + 50 * 15) / 1e6)
