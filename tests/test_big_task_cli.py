"""Issue 25, as a new user met it: `team assign bob - < big.txt` with a 2 MB text, then
`team send alice hi` eleven times, with a sim team running. On main at 41e1d33 that was
16 auto compactions (`557,284 -> 3,989 tokens` each), 63 MB of transcripts and $4.64.
The CLI in subprocesses, the real runtime, real files."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys

from conftest import run_team, write_team
from teamrun import wait_for

from team.llm.prices import context_window
from team.workspace.places import Workspace

WORDS = ["alpha", "beta", "gamma", "delta", "parse", "file", "line", "value", "test"]


def big_text(size: int = 2_000_000) -> str:
    rng = random.Random(1)
    out, n = ["Implement the spec below.\n"], 0
    while n < size:
        w = rng.choice(WORDS) + ("\n" if rng.random() < 0.1 else " ")
        out.append(w)
        n += len(w)
    return "".join(out)


def settled(ws: Workspace) -> bool:
    r = run_team("status", "--json", "--dir", str(ws.root))
    agents = json.loads(r.stdout)["agents"]
    return all(a["state"] == "idle" and a["pending"] == 0 for a in agents.values())


def test_a_2mb_task_and_eleven_messages_do_not_storm(tmp_path):
    root = write_team(tmp_path / "ws")
    ws = Workspace.at(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "team", "up", "--dir", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: ws.status_path.exists(), what="the team to be up")
        text = big_text()
        r = run_team("assign", "bob", "-", "--dir", str(root), input=text)
        assert r.returncode == 0, r.stderr
        for _ in range(11):
            r = run_team("send", "alice", "hi", "--dir", str(root))
            assert r.returncode == 0, r.stderr
        wait_for(lambda: settled(ws), 180, "the team to take it all in")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err

    db = sqlite3.connect(ws.events_db)
    try:
        autos = db.execute(
            "SELECT COUNT(*) FROM compactions WHERE layer = 'auto' AND success"
        ).fetchone()[0]
        calls = db.execute(
            "SELECT input_tokens + cache_read_tokens + cache_write_tokens, error FROM model_calls"
        ).fetchall()
    finally:
        db.close()
    assert autos <= 2
    window = context_window("sim")
    assert calls and all(size <= window for size, _ in calls)
    assert not [e for _, e in calls if e and "too long" in e]  # none was even tried
    transcripts = sum(f.stat().st_size for f in ws.transcripts_root.rglob("*") if f.is_file())
    assert transcripts < 5 << 20
    # the whole text is on the board and in bob's results folder, nothing lost
    kept = [f.read_text() for f in ws.results_dir("bob").glob("*.txt")]
    assert any(text.strip().split("\n", 1)[1] in k for k in kept)

    shown = run_team("task", "show", "1", "--dir", str(root))
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout) < 5_000 and "team task show 1 --full" in shown.stdout
    full = run_team("task", "show", "1", "--full", "--dir", str(root))
    assert text.strip().split("\n", 1)[1].strip() in full.stdout
