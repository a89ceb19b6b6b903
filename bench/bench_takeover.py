"""Redis takeover benchmark: kill -9 of the node that runs bob, then `team up --agents bob`
at once in the same folder; how long until bob takes in a message.

    .venv/bin/python bench/bench_takeover.py [--runs N] [--trace]

Starts its own redis-server on a free loopback port. Each run measures, from the Popen
of `team up --agents bob --model sim`, the time until bob's session log holds a message
sent just before the start:

- baseline: a fresh node (nobody ever held bob's lease);
- takeover: the node that held bob (lease_seconds = 60) was killed -9 a moment before,
  its lease still in Redis with ~60 s to run.

Printed per run in seconds (wall, and the node's own CPU up to then) and as takeover /
baseline (the same machine, the same load).
Target (issue 24): the takeover within 2 s on a quiet machine. `--trace` prints the
node's own output with a time stamp per line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from redis_server import RedisServer

from team.agents.session.log import read_records
from team.backends.redis_link import RedisLink
from team.cli.demo import seed_project
from team.compaction.records import UserTurn
from team.workspace.config import render_config


def node_dir(root: Path, url: str, team: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    text = render_config(team, "sim", [("alice", "coder"), ("bob", "tester")], threshold=20000)
    text = text.replace(
        "max_tokens = 8000", f'max_tokens = 8000\nbackend = "{url}"\nlease_seconds = 60'
    )
    (root / "team.toml").write_text(text)
    seed_project(root)
    return root


def up(where: Path, trace: bool, t0: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "team", "up", "--agents", "bob", "--model", "sim",
         "--dir", str(where)],
        env={**os.environ, "TEAM_NODE": "node-b"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    threading.Thread(target=_drain, args=(proc, trace, t0), daemon=True).start()
    return proc


def _drain(proc: subprocess.Popen, trace: bool, t0: float) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if trace:
            print(f"    {time.monotonic() - t0:6.2f}s | {line.rstrip()}", flush=True)


def taken(where: Path) -> list[str]:
    log = where / ".team" / "agents" / "bob" / "session.jsonl"
    if not log.exists():
        return []
    try:
        return [i for r in read_records(log) if isinstance(r, UserTurn) for i in r.inbox]
    except (OSError, ValueError):
        return []  # mid-write


def send(where: Path, text: str, msg_id: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "team", "send", "bob", text, "--id", msg_id, "--dir", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"team send failed: {done.stderr.strip()}")


def wait_taken(where: Path, msg_id: str, t0: float, limit: float = 120.0) -> float:
    while msg_id not in taken(where):
        if time.monotonic() - t0 > limit:
            raise SystemExit(f"bob did not take {msg_id} in within {limit:.0f}s")
        time.sleep(0.01)
    return time.monotonic() - t0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def baseline(root: Path, url: str, run: int, trace: bool) -> tuple[float, float]:
    """A fresh node: bob's lease never held; a message waiting before the start."""
    where = node_dir(root / f"fresh{run}", url, f"fresh{run}")
    send(where, "note: check part 1", "fresh-1")
    t0 = time.monotonic()
    proc = up(where, trace, t0)
    try:
        return wait_taken(where, "fresh-1", t0), cpu_s(proc.pid)
    finally:
        stop(proc)


def takeover(root: Path, url: str, run: int, trace: bool) -> tuple[float, float]:
    """The node that held bob killed -9, then started again at once in the same folder."""
    team = f"again{run}"
    where = node_dir(root / team, url, team)
    link = RedisLink(url, team)
    lease = link.key("lease", "bob")
    first = up(where, False, time.monotonic())
    send(where, "note: check part 0", "again-0")
    wait_taken(where, "again-0", time.monotonic())
    first.kill()  # kill -9: the lease stays, with ~60 s to run
    first.wait()
    left = link.client.pttl(lease)
    if left < 30_000:
        raise SystemExit(f"the killed node's lease has only {left} ms left")
    send(where, "note: check part 1", "again-1")
    t0 = time.monotonic()
    proc = up(where, trace, t0)
    try:
        return wait_taken(where, "again-1", t0), cpu_s(proc.pid)
    finally:
        stop(proc)
        link.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trace", action="store_true", help="print each node's output, timed")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-takeover-") as tmp:
        root = Path(tmp)
        server = RedisServer(root / "redis").start()
        fresh: list[tuple[float, float]] = []
        again: list[tuple[float, float]] = []
        try:
            for run in range(args.runs):  # alternately, so load drifts hit both alike
                fresh.append(baseline(root, server.url, run, args.trace))
                again.append(takeover(root, server.url, run, args.trace))
                (fw, fc), (aw, ac) = fresh[-1], again[-1]
                print(
                    f"run {run + 1}: fresh node {fw:.2f}s (cpu {fc:.2f}s), "
                    f"after kill -9 {aw:.2f}s (cpu {ac:.2f}s): {aw / fw:.2f}x",
                    flush=True,
                )
        finally:
            server.stop()
    f, a = (statistics.median(w for w, _ in fresh), statistics.median(w for w, _ in again))
    fc, ac = (statistics.median(c for _, c in fresh), statistics.median(c for _, c in again))
    print(
        f"median: fresh node {f:.2f}s (cpu {fc:.2f}s), after kill -9 {a:.2f}s (cpu {ac:.2f}s): "
        f"takeover / fresh = {a / f:.2f}x (target: after kill -9 < 2 s on a quiet machine; "
        "the cpu figure is the node's own, which load does not inflate)"
    )


if __name__ == "__main__":
    main()
