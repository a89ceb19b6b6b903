"""`team web` with 20 agents and many events, and the Study page from `team experiment`.

The server runs as `team web` in a subprocess; pages are read over HTTP or in the real
headless Chromium (tests/webrun.py). What must hold at scale: the compaction timeline
is one agent at a time with a bounded line and every compaction marked, its table pages
through every compaction exactly once, every query a page runs is answered from an index
or the primary key (EXPLAIN QUERY PLAN), and a new live stream starts after the newest
rows instead of sending them all.
"""

from __future__ import annotations

import http.client
import json
import random
import re
import socket
import sqlite3
import time
from pathlib import Path

import pytest
from conftest import run_team
from teamrun import make_workspace
from webrun import Watched, browser, web_server

from team.core.events import CompactionEvent, DeliveryEvent, ModelCallEvent, connect, insert
from team.web import queries
from team.web.app import Site
from team.workspace.config import render_config
from team.workspace.places import Workspace

AGENTS = [f"agent{i:02d}" for i in range(20)]
EVENTS = 20_000
ROOT = Path(__file__).resolve().parent
PUBLIC_LOG = ROOT / "fixtures" / "sessions" / "claude-code-2.1.38-public.jsonl"


def fill(ws: Workspace, events: int, seed: int = 5) -> None:
    rng = random.Random(seed)
    t0 = time.time() - events
    conn = connect(ws.events_db)
    with conn:
        for i in range(events):
            agent = AGENTS[i % len(AGENTS)]
            r = rng.random()
            if r < 0.75:
                purpose = "agent" if rng.random() < 0.93 else "summary"
                ev = ModelCallEvent(
                    agent,
                    purpose,
                    input_tokens=rng.randint(10, 400),
                    output_tokens=50,
                    cache_read_tokens=rng.randint(1000, 6000),
                    ts=t0 + i,
                )
            elif r < 0.80:
                layer = rng.choice(["auto", "manual", "micro"])
                ev = CompactionEvent(agent, layer, "threshold", 7000, 3000, 20, 2, ts=t0 + i)
            else:
                ev = DeliveryEvent(agent, rng.choice(AGENTS), f"m{i}", "sent", ts=t0 + i)
            insert(conn, ev)
    conn.close()


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Workspace:
    root = tmp_path_factory.mktemp("big")
    (root / "team.toml").write_text(
        render_config("big", "sim", [(a, "coder") for a in AGENTS], threshold=6000)
    )
    ws = Workspace.at(root)
    fill(ws, EVENTS)
    return ws


def get(base: str, path: str, headers: dict | None = None) -> tuple[int, str]:
    host, port = base.split("//", 1)[1].strip("/").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("GET", path, headers=headers or {})
    r = conn.getresponse()
    body = r.read().decode()
    conn.close()
    return r.status, body


def db_rows(ws: Workspace, sql: str, *args) -> list:
    conn = sqlite3.connect(ws.events_db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def test_the_timeline_is_one_agent_bounded_with_every_compaction(big: Workspace) -> None:
    agent = "agent07"
    calls = db_rows(
        big, "SELECT COUNT(*) FROM model_calls WHERE agent = ? AND purpose = 'agent'", agent
    )[0][0]
    ids = [i for (i,) in db_rows(big, "SELECT id FROM compactions WHERE agent = ?", agent)]
    assert calls > 2 * queries.SERIES_BUCKETS and len(ids) > queries.COMPACTION_ROWS
    with web_server(big.root) as server:
        status, page = get(server.base, f"/compaction?agent={agent}")
        assert status == 200
        assert page.count('<svg id="chart-') == 1  # one agent's chart, not twenty
        points = re.search(r'<polyline class="ctx" points="([^"]+)"', page)[1].split()
        assert 2 < len(points) <= 2 * queries.SERIES_BUCKETS
        assert int(re.search(r'data-marks="(\d+)"', page)[1]) == len(ids)
        # the picker names every agent, with its count of compactions
        for a in AGENTS:
            n = db_rows(big, "SELECT COUNT(*) FROM compactions WHERE agent = ?", a)[0][0]
            assert re.search(rf'data-agent="{a}"[^>]*>{a} <span class="ccount">{n}</span>', page)

        # the table, newest first, a page at a time: every compaction once
        seen: list[float] = []
        path = f"/compaction?agent={agent}"
        while path:
            status, page = get(server.base, path)
            assert status == 200
            rows = re.findall(r'<tr class="compaction[^"]*">\s*<td><time data-ts="([^"]+)"', page)
            assert 0 < len(rows) <= queries.COMPACTION_ROWS
            seen += [float(t) for t in rows]
            older = re.search(r'<a class="older" href="([^"]+)"', page)
            path = older[1].replace("&amp;", "&") if older else None
        assert len(seen) == len(ids) and seen == sorted(seen, reverse=True)

        # bad input: one line each, no traceback
        assert get(server.base, "/compaction?agent=nobody") == (404, "no such agent\n")
        status, body = get(server.base, f"/compaction?agent={agent}&before=x")
        assert status == 400 and body.count("\n") == 1
        # the default is the agent of the newest compaction
        newest = db_rows(big, "SELECT agent FROM compactions ORDER BY id DESC LIMIT 1")[0][0]
        status, page = get(server.base, "/compaction")
        assert f'id="timeline-{newest}"' in page


def test_the_line_keeps_every_peak_and_drop_of_its_buckets(tmp_path: Path) -> None:
    """The folded envelope equals bucketing every row at once: each bucket's largest and
    smallest call are on the line, whatever order the rows were folded in."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "team.toml").write_text(render_config("t", "sim", [("a", "coder")]))
    ws = Workspace.at(root)
    rng = random.Random(11)
    conn = connect(ws.events_db)
    calls = [(1000.0 + i * rng.uniform(0.5, 3.0), rng.randint(100, 9000)) for i in range(5000)]
    env = queries.Envelope(buckets=50)
    for start in range(0, len(calls), 700):  # folded in pieces, as pages load
        with conn:
            for ts, tokens in calls[start : start + 700]:
                insert(conn, ModelCallEvent("a", "agent", input_tokens=tokens, ts=ts))
        with queries.events(ws) as ro:
            env.update(ro)
    conn.close()
    line = env.series("a")
    assert len(line) <= 100
    t0, width = env.lines["a"][0], env.lines["a"][1]
    buckets: dict[int, list] = {}
    for ts, tokens in calls:
        buckets.setdefault(int((ts - t0) // width), []).append((ts, tokens))
    assert len(buckets) <= 50
    for cell in buckets.values():
        assert max(cell, key=lambda p: p[1])[1] in {v for _, v in line}
        assert min(cell, key=lambda p: p[1]) in line
    assert max(v for _, v in line) == max(v for _, v in calls)


def test_every_page_query_uses_an_index(big: Workspace, monkeypatch) -> None:
    """Each statement a page runs, planned by SQLite: no full scan of a table, except
    one in primary-key order that stops at its LIMIT."""
    statements: list[str] = []
    real = queries.connect_read_only

    def traced(path):
        conn = real(path)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(queries, "connect_read_only", traced)
    site = Site(big)
    site.team_page()
    site.messages_page()
    site.compaction_page()
    site.compaction_page("agent03", None)
    site.study_page()
    site.timeline_fragment("agent03")
    assert len(statements) > 10
    plan_db = sqlite3.connect(big.events_db)
    for sql in set(statements):
        if not sql.lstrip().upper().startswith("SELECT") or "sqlite_master" in sql:
            continue  # the list of tables: a handful of rows
        plan = [row[-1] for row in plan_db.execute("EXPLAIN QUERY PLAN " + sql)]
        for step in plan:
            if step.startswith("SCAN") and "INDEX" not in step:
                bounded = re.search(r"ORDER BY id DESC LIMIT", sql)
                assert bounded, f"{sql}\n  plans a full scan: {plan}"
    plan_db.close()


def read_frames(sock: socket.socket, seconds: float) -> str:
    sock.settimeout(0.2)
    got = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            break
        got += chunk
    return got.decode(errors="replace")


def open_stream(base: str, last_id: str | None = None) -> socket.socket:
    host, port = base.split("//", 1)[1].strip("/").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    extra = f"Last-Event-ID: {last_id}\r\n" if last_id else ""
    sock.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode())
    return sock


def test_a_new_stream_sends_changes_not_the_history(big: Workspace) -> None:
    with web_server(big.root) as server:
        sock = open_stream(server.base)
        try:
            first = read_frames(sock, 2.0)
            assert "event: ready" in first
            assert "event: compaction" not in first and "event: delivery" not in first
            conn = connect(big.events_db)
            with conn:
                insert(conn, CompactionEvent("agent02", "auto", "threshold", 9000, 900, 30, 2))
            conn.close()
            later = read_frames(sock, 3.0)
            assert later.count("event: compaction") == 1
            assert "agent02" in later and "9,000" in later
        finally:
            sock.close()

        # a page that claims to have seen nothing is told to reload, not sent every row
        sock = open_stream(server.base, "0.0.0")
        try:
            got = read_frames(sock, 2.0)
            assert "event: reload" in got
            assert got.count("event: compaction") == 0 and got.count("event: delivery") == 0
        finally:
            sock.close()
        # a little behind: it gets exactly what it missed
        top = {t: db_rows(big, f"SELECT MAX(id) FROM {t}")[0][0] for t in queries.LIVE_TABLES}
        sock = open_stream(
            server.base, f"{top['compactions'] - 3}.{top['deliveries']}.{top['agent_events'] or 0}"
        )
        try:
            got = read_frames(sock, 2.0)
            assert got.count("event: compaction") == 3 and "event: reload" not in got
        finally:
            sock.close()


@pytest.mark.slow
def test_experiment_results_show_on_the_study_page(tmp_path: Path) -> None:
    """`team experiment` in a workspace saves its run; the Study page shows its table.
    The replayed log is public: github.com/marot/spotter (MIT), see tests/fixtures/sessions."""
    ws = make_workspace(tmp_path / "project", "sim")
    r = run_team("experiment", "--replay", str(PUBLIC_LOG), cwd=ws.root, timeout=120)
    assert r.returncode == 0, r.stderr
    saved = sorted(ws.experiments_dir.glob("*.json"))
    assert len(saved) == 1 and f"saved: {saved[0]}" in r.stderr
    assert not list(ws.experiments_dir.glob(".*.tmp"))  # written whole, renamed
    r = run_team("experiment", "--replay", str(PUBLIC_LOG), "--no-save", cwd=ws.root, timeout=120)
    assert r.returncode == 0 and len(list(ws.experiments_dir.glob("*.json"))) == 1
    (ws.experiments_dir / "00-junk.json").write_text("{not json")
    with web_server(ws.root) as server, browser() as b:
        page = Watched(b.new_page(viewport={"width": 1400, "height": 900}))
        page.open(server.base + "study")
        section = page.page.locator(f"#exp-{saved[0].stem}")
        text = section.inner_text()
        for name in ("recorded", "manual-only", "reference", "default", "cache-aware", "hybrid"):
            assert name in text
        rows = section.locator("tbody tr")
        assert rows.count() == 6
        assert section.locator("svg.bars rect").count() == 12  # two plots of six bars
        assert "unreadable" in page.page.locator("#exp-00-junk").inner_text()
        page.shot("study-experiment")
        assert page.errors == []


@pytest.mark.slow
def test_the_compaction_page_in_the_browser_at_scale(big: Workspace) -> None:
    with web_server(big.root) as server, browser() as b:
        page = Watched(b.new_page(viewport={"width": 1400, "height": 900}))
        t = time.perf_counter()
        page.open(server.base + "compaction")
        print(f"compaction page, {EVENTS:,} events: live in {time.perf_counter() - t:.2f}s")
        assert page.page.locator("svg.chart").count() == 1
        page.page.click("nav.picker a[data-agent='agent03']")
        page.page.wait_for_selector("#timeline-agent03")
        page.page.click("a.older")
        page.page.wait_for_selector("#timeline-agent03 table[data-live='0']")
        page.shot("compaction-scale")
        assert page.errors == []


def test_the_agent_page_reads_on_from_where_it_stopped(tmp_path: Path) -> None:
    """Appended records show up; after a compaction the left column starts at it, the
    right keeps the stored text; a replaced log is read from its start."""
    ws = make_workspace(tmp_path / "project", "sim")
    log = ws.session_log("alice")
    log.parent.mkdir(parents=True, exist_ok=True)

    def turn(i: int) -> str:
        user = {"t": "user", "blocks": [{"type": "text", "text": f"question {i}"}]}
        reply = {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]}
        return json.dumps(user) + "\n" + json.dumps({"t": "assistant", "message": reply}) + "\n"

    def columns(page: str) -> tuple[str, str]:
        left, right = page.split("<h2>full text</h2>", 1)
        return left.split("<h2>as the model sees it</h2>", 1)[1], right

    log.write_text("".join(turn(i) for i in range(3)))
    with web_server(ws.root) as server:
        now, whole = columns(get(server.base, "/agent/alice")[1])
        assert "answer 2" in now and "answer 2" in whole
        summary = {"role": "user", "content": [{"type": "text", "text": "SUMMARY of 0-2"}]}
        with open(log, "a") as f:
            f.write(json.dumps({"t": "compaction", "layer": "auto", "first": summary}) + "\n")
            f.write(turn(3))
            f.write('{"t": "user", "blocks": [{"type": "text", "text": "half a li')  # mid-write
        now, whole = columns(get(server.base, "/agent/alice")[1])
        assert "SUMMARY of 0-2" in now and "answer 3" in now and "answer 2" not in now
        assert "answer 0" in whole and "answer 3" in whole and "half a li" not in whole
        with open(log, "a") as f:
            f.write('ne"}]}\n')
        assert "half a line" in columns(get(server.base, "/agent/alice")[1])[0]
        replaced = log.with_suffix(".new")
        replaced.write_text(turn(9))
        replaced.replace(log)
        now, whole = columns(get(server.base, "/agent/alice")[1])
        assert "answer 9" in now and "SUMMARY" not in now and "answer 0" not in whole
