"""`team stats`, `team report` and `team transcripts` over a real events database."""

from __future__ import annotations

import json
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from team.core.events import (
    AgentEvent,
    CompactionEvent,
    DeliveryEvent,
    ModelCallEvent,
    SqliteEventLog,
)
from team.workspace.config import render_config

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
AGENTS = ["alice", "bob", "carol"]


def team(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "team", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def _emit_run(log: SqliteEventLog, t0: float) -> None:
    """A small but complete run: every kind of event, both purposes, every layer, a failure."""
    t = t0
    bob_failed = False
    for k, agent in enumerate(AGENTS):
        context = 2_000
        for i in range(12 + 3 * k):
            t += 1.5
            context += 900 + 100 * i
            if i % 4 == 1:
                log.emit(
                    CompactionEvent(
                        agent,
                        "micro",
                        "view",
                        context,
                        context - 600,
                        9,
                        9,
                        results_cleared=2,
                        rewrite_tokens=300 + 10 * i,
                        ts=t,
                    )
                )
                context -= 600
            if context > 8_000:
                ok = agent != "bob" or bob_failed  # bob's first summary fails
                bob_failed = bob_failed or agent == "bob"
                log.emit(
                    ModelCallEvent(
                        agent,
                        "summary",
                        input_tokens=context,
                        output_tokens=400 + i,
                        duration_s=0.5,
                        ts=t + 0.1,
                    )
                )
                log.emit(
                    CompactionEvent(
                        agent,
                        "auto",
                        "threshold",
                        context,
                        1_500 if ok else context,
                        30,
                        2 if ok else 30,
                        transcript=f".transcripts/{agent}/000{i}-x-auto.jsonl",
                        summary_chars=1_800,
                        success=ok,
                        error=None if ok else "model error",
                        retention=1.0 - 0.03 * i if ok else None,
                        ts=t + 0.2,
                    )
                )
                if ok:
                    context = 1_500
            if agent == "carol" and i == 10:
                log.emit(
                    ModelCallEvent(
                        agent, "summary", input_tokens=context, output_tokens=300, ts=t + 0.1
                    )
                )
                log.emit(
                    CompactionEvent(
                        agent,
                        "manual",
                        "tool",
                        context,
                        1_200,
                        25,
                        2,
                        summary_chars=1_000,
                        retention=1.0,
                        ts=t + 0.2,
                    )
                )
                context = 1_200
            error = "overloaded" if (agent == "alice" and i == 5) else None
            log.emit(
                ModelCallEvent(
                    agent,
                    "agent",
                    input_tokens=0 if error else 200 + i,
                    cache_read_tokens=0 if error else context - 800,
                    cache_write_tokens=0 if error else 600,
                    output_tokens=0 if error else 150 + k,
                    estimate=context,
                    duration_s=0.8,
                    error=error,
                    ts=t + 0.5,
                )
            )
            if i % 3 == 0:
                sender = AGENTS[(k + 1) % 3]
                log.emit(DeliveryEvent(agent, sender, f"{agent}-{i}", "sent", ts=t))
                log.emit(
                    DeliveryEvent(
                        agent,
                        sender,
                        f"{agent}-{i}",
                        "received",
                        latency_s=0.01 * (i + 1) * (k + 1),
                        ts=t + 0.3,
                    )
                )
    log.emit(AgentEvent("bob", "crashed", "RuntimeError", ts=t + 1))
    log.emit(AgentEvent("bob", "restarted", ts=t + 2))
    log.emit(AgentEvent("alice", "idle", ts=t + 3))


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "team.toml").write_text(render_config("study", "sim", [(a, "coder") for a in AGENTS]))
    log = SqliteEventLog(root / ".team" / "events.db")
    _emit_run(log, t0=1_700_000_000.0)
    log.close()
    return root


def _sql(ws: Path, query: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(ws / ".team" / "events.db")
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def _expected(ws: Path, agent: str | None) -> dict:
    """The numbers `team stats` must print, computed independently with SQL."""
    where, args = ("WHERE agent = ?", (agent,)) if agent else ("WHERE 1", ())
    calls = dict(
        _sql(ws, f"SELECT purpose, COUNT(*) FROM model_calls {where} GROUP BY purpose", *args)
    )
    ((inp, out, cr, cw, errors),) = _sql(
        ws,
        f"""
        SELECT SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens),
               SUM(cache_write_tokens), COUNT(error) FROM model_calls {where}""",
        *args,
    )
    ((summary_cost,),) = _sql(
        ws,
        f"""
        SELECT COALESCE(SUM(input_tokens + 1.25 * cache_write_tokens + 0.1 * cache_read_tokens
                            + output_tokens), 0)
        FROM model_calls {where} AND purpose = 'summary'""",
        *args,
    )
    layers = {}
    for layer in ("micro", "auto", "manual"):
        ((ok, failed, before, after, ratio),) = _sql(
            ws,
            f"""
            SELECT COALESCE(SUM(success = 1), 0), COALESCE(SUM(success = 0), 0),
                   COALESCE(SUM(CASE WHEN success THEN tokens_before END), 0),
                   COALESCE(SUM(CASE WHEN success THEN tokens_after END), 0),
                   AVG(CASE WHEN success THEN 1.0 * tokens_after / tokens_before END)
            FROM compactions {where} AND layer = ?""",
            *args,
            layer,
        )
        layers[layer] = (ok, failed, before, after, ratio)
    ((retention, samples),) = _sql(
        ws, f"SELECT AVG(retention), COUNT(retention) FROM compactions {where}", *args
    )
    sent, received = (
        _sql(ws, f"SELECT COUNT(*) FROM deliveries {where} AND kind = ?", *args, kind)[0][0]
        for kind in ("sent", "received")
    )
    latencies = [
        r[0]
        for r in _sql(ws, f"SELECT latency_s FROM deliveries {where} AND kind = 'received'", *args)
    ]
    crashes, restarts = (
        _sql(ws, f"SELECT COUNT(*) FROM agent_events {where} AND kind = ?", *args, kind)[0][0]
        for kind in ("crashed", "restarted")
    )
    ((hit,),) = _sql(
        ws,
        f"""
        SELECT 1.0 * SUM(cache_read_tokens)
               / SUM(input_tokens + cache_read_tokens + cache_write_tokens)
        FROM model_calls {where} AND purpose = 'agent'""",
        *args,
    )
    ((rewrites,),) = _sql(
        ws, f"SELECT SUM(rewrite_tokens) FROM compactions {where} AND layer = 'micro'", *args
    )
    billed = inp + 1.25 * cw + 0.1 * cr
    return {
        "cache_hit_rate": hit,
        "micro_rewrite": (rewrites, 1.15 * rewrites),
        "calls": calls,
        "tokens": (inp, out, cr, cw),
        "errors": errors,
        "billed": billed,
        "summary_share": summary_cost / (billed + out),
        "layers": layers,
        "retention": (retention, samples),
        "deliveries": (sent, received),
        "p50": statistics.median(latencies),
        "p99": float(np.percentile(latencies, 99)),
        "health": (crashes, restarts),
    }


def _check(got: dict, want: dict) -> None:
    assert got["agent_calls"] == want["calls"].get("agent", 0)
    assert got["summary_calls"] == want["calls"].get("summary", 0)
    assert got["call_errors"] == want["errors"]
    assert (
        got["input_tokens"],
        got["output_tokens"],
        got["cache_read_tokens"],
        got["cache_write_tokens"],
    ) == want["tokens"]
    assert got["billed_input"] == pytest.approx(want["billed"])
    assert got["summary_share"] == pytest.approx(want["summary_share"])
    assert got["cache_hit_rate"] == pytest.approx(want["cache_hit_rate"])
    assert got["micro_rewrite_tokens"] == want["micro_rewrite"][0]
    assert got["micro_rewrite_cost"] == pytest.approx(want["micro_rewrite"][1])
    for layer, (ok, failed, before, after, ratio) in want["layers"].items():
        g = got["compactions"][layer]
        assert (g["ok"], g["failed"], g["tokens_before"], g["tokens_after"]) == (
            ok,
            failed,
            before,
            after,
        ), layer
        assert g["mean_ratio"] == (pytest.approx(ratio) if ratio is not None else None)
    assert got["mean_retention"] == pytest.approx(want["retention"][0])
    assert got["retention_samples"] == want["retention"][1]
    assert (got["deliveries_sent"], got["deliveries_received"]) == want["deliveries"]
    assert got["latency_p50"] == pytest.approx(want["p50"])
    assert got["latency_p99"] == pytest.approx(want["p99"])
    assert (got["crashes"], got["restarts"]) == want["health"]


def test_stats_json_matches_the_database(ws: Path):
    r = team("stats", "--json", "--dir", str(ws))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert sorted(data["agents"]) == AGENTS
    for agent in AGENTS:
        _check(data["agents"][agent], _expected(ws, agent))
    _check(data["team"], _expected(ws, None))
    # The fixture was built to exercise each of these; make sure it did.
    assert data["agents"]["bob"]["compactions"]["auto"]["failed"] == 1
    assert data["agents"]["carol"]["compactions"]["manual"]["ok"] == 1
    assert data["agents"]["alice"]["call_errors"] == 1


def test_stats_prints_tables(ws: Path):
    r = team("stats", cwd=ws)
    assert r.returncode == 0, r.stderr
    for word in [*AGENTS, "TEAM", "micro", "auto", "manual", "summary %", "p99", "USD"]:
        assert word in r.stdout


def test_stats_fit_80_columns_one_line_per_row(ws: Path):
    import os

    r = subprocess.run(
        [sys.executable, "-m", "team", "stats", "--dir", str(ws)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    # nothing wrapped: each agent's cost row carries its dollars on the same line
    cost_rows = [line for line in lines if line.split()[:1] in (["alice"], ["TEAM"])]
    assert any("$" in line for line in cost_rows)
    assert any(line.split()[:4] == ["agent", "calls", "summaries", "USD"] for line in lines)


def test_stats_dollars_come_from_the_price_table(ws: Path):
    from team.llm.prices import prices_for

    data = json.loads(team("stats", "--json", "--dir", str(ws)).stdout)
    p = prices_for("sim")  # team.toml says sim: priced as the default real model
    for agent in AGENTS:
        ((inp, out, cr, cw),) = _sql(
            ws,
            "SELECT SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), "
            "SUM(cache_write_tokens) FROM model_calls WHERE agent = ?",
            agent,
        )
        want = (inp * p.input + out * p.output + cr * p.cache_read + cw * p.cache_write_5m) / 1e6
        assert data["agents"][agent]["usd"] == pytest.approx(want)
        assert want > 0
    team_usd = data["team"]["usd"]
    assert team_usd == pytest.approx(sum(data["agents"][a]["usd"] for a in AGENTS))
    assert data["priced_as"] == p.model


def test_stats_without_events_is_one_clear_line(tmp_path: Path):
    r = team("stats", "--dir", str(tmp_path))
    assert r.returncode == 1
    assert r.stderr.startswith("team: error: no events recorded yet")
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / ".team").exists()  # reading never creates a database
    r = team("report", "--dir", str(tmp_path))
    assert r.returncode == 1 and "no events recorded yet" in r.stderr


def test_event_readers_refuse_what_is_not_a_database_in_one_line(tmp_path: Path):
    from team.core.errors import UserError
    from team.study.audit import read_audit
    from team.study.stats import load

    db = tmp_path / "events.db"
    db.write_text("not a database\n")
    for read in (load, read_audit):
        with pytest.raises(UserError, match="cannot read"):
            read(db)
    assert db.read_text() == "not a database\n"  # read-only: nothing written
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("CREATE TABLE other (x)").connection.close()
    assert read_audit(empty) == []  # no tables of ours: nothing of that kind recorded
    assert list(load(empty).all()) == []


def test_report_writes_png_and_html(ws: Path, tmp_path: Path):
    import matplotlib.image

    out = tmp_path / "figs" / "x.png"
    r = team("report", "--out", str(out), "--dir", str(ws))
    assert r.returncode == 0, r.stderr
    page = out.with_suffix(".html")
    assert r.stdout.split() == [str(out), str(page)]
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    pixels = matplotlib.image.imread(out)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 300
    text = page.read_text()
    assert '<img src="x.png"' in text
    for word in [*AGENTS, "summary %", "USD", "retention", "model error", "manual"]:
        assert word in text
    # Every auto and manual compaction is listed with its retention.
    ((n,),) = _sql(ws, "SELECT COUNT(*) FROM compactions WHERE layer != 'micro'")
    listed = text.split("Summaries (auto and manual")[1]
    assert listed.count("<tr><td>") == n


def test_report_default_path_is_in_the_workspace(ws: Path):
    r = team("report", cwd=ws)
    assert r.returncode == 0, r.stderr
    png, page = ws / ".team" / "report.png", ws / ".team" / "report.html"
    assert r.stdout.split() == [str(png), str(page)]
    assert png.read_bytes()[:8] == PNG_SIGNATURE and png.stat().st_size > 0
    assert 'src="report.png"' in page.read_text()


def test_report_rejects_a_non_png_out(ws: Path, tmp_path: Path):
    r = team("report", "--out", str(tmp_path / "x.svg"), "--dir", str(ws))
    assert r.returncode == 1 and ".png" in r.stderr and "Traceback" not in r.stderr


def _transcript(ws: Path, agent: str, name: str, lines: int) -> Path:
    folder = ws / ".transcripts" / agent
    folder.mkdir(parents=True, exist_ok=True)
    msg = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    path = folder / name
    path.write_text("".join(json.dumps(msg) + "\n" for _ in range(lines)))
    return path


def test_transcripts_lists_each_archive(tmp_path: Path):
    (tmp_path / "team.toml").write_text(
        render_config("study", "sim", [(a, "coder") for a in AGENTS])
    )
    a2 = _transcript(tmp_path, "alice", "0002-20250101T000105.000000Z-manual.jsonl", 3)
    a1 = _transcript(tmp_path, "alice", "0001-20250101T000000.000000Z-auto.jsonl", 5)
    b1 = _transcript(tmp_path, "bob", "0001-20250101T000200.000000Z-auto.jsonl", 2)
    (tmp_path / ".transcripts" / "alice" / ".tmp-1-2-3").write_text("half")  # not listed

    r = team("transcripts", "--json", "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [(x["agent"], x["seq"], x["layer"], x["messages"], x["size"]) for x in rows] == [
        ("alice", 1, "auto", 5, a1.stat().st_size),
        ("alice", 2, "manual", 3, a2.stat().st_size),
        ("bob", 1, "auto", 2, b1.stat().st_size),
    ]
    assert rows[0]["utc"] == "20250101T000000.000000Z"

    r = team("transcripts", "bob", "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "bob" in r.stdout and "alice" not in r.stdout and "auto" in r.stdout

    r = team("transcripts", "carol", "--json", "--dir", str(tmp_path))  # on the team, none yet
    assert r.returncode == 0 and json.loads(r.stdout) == []

    r = team("transcripts", "zed", "--dir", str(tmp_path))
    assert r.returncode == 1
    assert "unknown agent 'zed'" in r.stderr and "Traceback" not in r.stderr
