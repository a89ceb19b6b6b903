"""Two `team up` nodes on one Redis, with disjoint agents, messaging each other.

A third machine asking for node B's agent is refused with one line naming node B. Node B
is killed -9 mid-run and restarted once its lease lapsed; at the end every message each
agent was sent is in its session log exactly once. `team status` and `team down` work
from another folder, as from another machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import add_task, run_team
from teamrun import wait_for

from team.agents.session.log import read_records
from team.backends.redis_board import RedisBoard
from team.backends.redis_inbox import RedisMailbox
from team.backends.redis_link import RedisLink
from team.cli.demo import seed_project
from team.compaction.records import UserTurn
from team.workspace.config import render_config

pytestmark = pytest.mark.slow

LEASE_S = 2


def node_dir(root: Path, url: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    text = render_config("duo", "sim", [("alice", "coder"), ("bob", "tester")], threshold=20000)
    text = text.replace(
        "max_tokens = 8000", f'max_tokens = 8000\nbackend = "{url}"\nlease_seconds = {LEASE_S}'
    )
    (root / "team.toml").write_text(text)
    seed_project(root)
    return root


def up(where: Path, agent: str, node: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "team", "up", "--agents", agent, "--model", "sim",
         *extra, "--dir", str(where)],
        env={**os.environ, "TEAM_NODE": node},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def taken_in(where: Path, agent: str) -> list[str]:
    log = where / ".team" / "agents" / agent / "session.jsonl"
    if not log.exists():
        return []
    return [i for r in read_records(log) if isinstance(r, UserTurn) for i in r.inbox]


def sent_to(link: RedisLink, agent: str) -> list[str]:
    """Ids of the messages in the agent's stream that the agent takes in (not shutdowns)."""
    return [
        e.message.id
        for e in RedisMailbox(link, agent).entries()
        if e.message is not None and not e.message.type.startswith("shutdown")
    ]


def test_two_nodes_one_killed_and_restarted_lose_and_double_nothing(
    tmp_path: Path, redis_url: str
) -> None:
    a, b = node_dir(tmp_path / "a", redis_url), node_dir(tmp_path / "b", redis_url)
    done = run_team("assign", "alice", "Survey the parser for alice", "--dir", str(a))
    assert done.returncode == 0, done.stderr  # `team assign` on Redis; the rest in process
    for agent in ("alice", "bob", "bob"):
        add_task(a, f"Survey the parser for {agent}", owner=agent)
    link = RedisLink(redis_url, "duo")
    board = RedisBoard(link)

    node_a = up(a, "alice", "node-a", "--sim-latency", "0.05")
    node_b = up(b, "bob", "node-b", "--sim-latency", "0.05")
    try:
        # mid-run: bob has started on its work, and alice has already told bob something
        wait_for(lambda: any(t.owner == "bob" and t.status != "pending" for t in board.list()),
                 timeout=90, what="bob to start working")  # fmt: skip
        # another machine asks for bob while node B runs it: one line naming node B
        c = node_dir(tmp_path / "c", redis_url)
        again = up(c, "bob", "node-c", "--no-wait")
        _, err = again.communicate(timeout=60)
        assert again.returncode == 1
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "'bob' is already running on node 'node-b'" in err

        node_b.kill()  # kill -9 mid-run: bob's lease lapses, its pending mail waits
        node_b.wait(timeout=10)
        wait_for(lambda: link.client.get(link.key("lease", "bob")) is None,
                 timeout=30, what="the killed node's lease to lapse")  # fmt: skip
        node_b = up(b, "bob", "node-b", "--until-idle", "--idle-grace", "1")

        wait_for(lambda: board.all_done(), timeout=150, what="every task to be completed")
        # seen from a third folder, as from another machine
        status = run_team("status", "--json", "--dir", str(c))
        assert status.returncode == 0, status.stderr
        agents = json.loads(status.stdout)["agents"]
        assert agents["alice"]["node"] == "node-a"
        down = run_team("down", "--dir", str(c))
        assert down.returncode == 0, down.stderr
        assert node_a.wait(timeout=60) == 0, node_a.stderr.read()  # type: ignore[union-attr]
        assert node_b.wait(timeout=60) == 0, node_b.stderr.read()  # type: ignore[union-attr]
    finally:
        for p in (node_a, node_b):
            if p.poll() is None:
                p.kill()
                p.wait()

    assert all(t.status == "completed" for t in board.list())
    for where, agent, mate in ((a, "alice", "bob"), (b, "bob", "alice")):
        took, sent = taken_in(where, agent), sent_to(link, agent)
        assert len(took) == len(set(took)), f"{agent} took a message twice"
        assert set(took) == set(sent), f"{agent} lost a message"
        senders = {e.message.sender for e in RedisMailbox(link, agent).entries() if e.message}
        assert mate in senders, f"{mate} never wrote to {agent}"
    # after down, nobody holds a lease; status from anywhere says so
    final = json.loads(run_team("status", "--json", "--dir", str(a)).stdout)
    assert final["running"] is False
    assert {s["state"] for s in final["agents"].values()} == {"down"}


def test_a_redis_restart_mid_run_the_team_waits_and_finishes(tmp_path: Path) -> None:
    from redis_server import RedisServer

    server = RedisServer(tmp_path / "redis").start()
    try:
        a = node_dir(tmp_path / "a", server.url)
        toml = a / "team.toml"  # a lead: bob's completions become notices to alice
        toml.write_text(toml.read_text().replace("lease_seconds", 'lead = "alice"\nlease_seconds'))
        for i in range(3):
            add_task(a, f"Survey part {i}")
        add_task(a, "Survey part 3", owner="bob")
        link = RedisLink(server.url, "duo", wait=True)
        board = RedisBoard(link)
        node = up(a, "alice,bob", "solo", "--until-idle", "--idle-grace", "1",
                  "--sim-latency", "0.05")  # fmt: skip
        wait_for(lambda: any(t.status != "pending" for t in board.list()),
                 timeout=90, what="work to start")  # fmt: skip
        server.kill()  # kill -9 mid-run
        time.sleep(1.0)
        server.start(keep_port=True)
        out, err = node.communicate(timeout=150)
        assert node.returncode == 0, err
        assert all(t.status == "completed" for t in board.list())
        # one line when it went, one when it came back: not a line per agent or per call
        # (warnings reach the person through the event feed, on stdout or the live view)
        said = out + err
        assert said.count("is unreachable") == 1, said
        assert said.count("is back after") == 1, said
        for agent in ("alice", "bob"):
            took = taken_in(a, agent)
            assert len(took) == len(set(took))
            assert set(took) == set(sent_to(link, agent))
        # the lead heard of each of bob's completions once, outage or not (the outbox)
        notices = [e.message.content for e in RedisMailbox(link, "alice").entries()
                   if e.message is not None and e.message.type == "notice"]  # fmt: skip
        assert any(t.owner == "bob" for t in board.list())
        for t in board.list():
            if t.owner == "bob":
                said_done = [n for n in notices if n.startswith(f"bob completed task #{t.id} ")]
                assert len(said_done) == 1, notices
        spool = a / ".team" / "outbox"
        assert not any((spool / d).exists() and any((spool / d).iterdir()) for d in ("new", "cur"))
    finally:
        server.stop()


def send_bob(where: Path, i: int) -> subprocess.CompletedProcess:
    return run_team("send", "bob", f"note {i}: check part {i}", "--id", f"note-{i}",
                    "--dir", str(where))  # fmt: skip


def test_a_killed_node_started_again_at_once_takes_over_and_delivers_each_once(
    tmp_path: Path, redis_url: str
) -> None:
    """kill -9 of bob's node, then `team up --agents bob` at once in the same folder: the
    lease of a dead pid on this host is taken without waiting for it to lapse (60 s here).
    30 messages sent by `team send` around the kill, 10 of them sent again with the same
    id (a retry after a lost reply), are each taken in once."""
    from concurrent.futures import ThreadPoolExecutor

    b = node_dir(tmp_path / "b", redis_url)
    toml = b / "team.toml"
    toml.write_text(toml.read_text().replace(f"lease_seconds = {LEASE_S}", "lease_seconds = 60"))
    link = RedisLink(redis_url, "duo")
    lease = link.key("lease", "bob")
    node = up(b, "bob", "node-b")
    sent: list[int] = []
    try:
        wait_for(lambda: link.client.get(lease) is not None, timeout=60, what="bob's lease")
        with ThreadPoolExecutor(4) as pool:
            jobs = [pool.submit(lambda i=i: sent.append(i) or send_bob(b, i)) for i in range(30)]
            jobs += [pool.submit(send_bob, b, i) for i in range(10)]  # the same ids again
            wait_for(lambda: len(taken_in(b, "bob")) >= 3, timeout=120, what="mail taken in")
            node.kill()  # kill -9 mid-run, sends still going: its lease stays for 60 s
            node.wait(timeout=10)
            assert link.client.pttl(lease) > 30_000
            started = time.monotonic()
            node = up(b, "bob", "node-b", "--timeout", "300")
            wait_for(lambda: json.loads(link.client.get(lease) or "{}").get("pid") == node.pid,
                     timeout=60, what="the new node to hold bob")  # fmt: skip
            took_lease = time.monotonic() - started
            before = len(taken_in(b, "bob"))
            wait_for(lambda: len(taken_in(b, "bob")) > before, timeout=60, what="bob at work")
            working = time.monotonic() - started
            assert all(j.result().returncode == 0 for j in jobs)
        wait_for(lambda: len(set(taken_in(b, "bob"))) >= 30, timeout=120, what="all 30 taken")
        # the lapse would have taken 60 s: the lease was taken, not waited for
        assert took_lease < 45, f"the new node held bob only after {took_lease:.1f}s"
        print(f"\nnew node: lease after {took_lease:.2f}s, bob at work after {working:.2f}s")
        down = run_team("down", "--dir", str(b))
        assert down.returncode == 0, down.stderr
        _, err = node.communicate(timeout=60)
        assert node.returncode == 0, err
        assert "waiting for 'bob'" not in err  # taken at once, no countdown
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()
    want = sorted(f"note-{i}" for i in range(30))
    assert sorted(taken_in(b, "bob")) == want  # each once
    assert sorted(sent_to(link, "bob")) == want  # and in the stream once: retries added nothing


def test_a_lease_held_by_a_live_node_is_waited_for_with_a_countdown(
    tmp_path: Path, redis_url: str
) -> None:
    """Another live node holds bob: `team up --agents bob` waits, saying how long the
    lease may take to lapse, and starts bob once that node lets go; `--no-wait` exits 1
    with one line at once."""
    a, c = node_dir(tmp_path / "a", redis_url), node_dir(tmp_path / "c", redis_url)
    first = up(a, "bob", "node-a")
    second = None
    try:
        link = RedisLink(redis_url, "duo")
        wait_for(lambda: link.client.get(link.key("lease", "bob")) is not None,
                 timeout=60, what="node-a to hold bob")  # fmt: skip
        refused = up(c, "bob", "node-c", "--no-wait")
        _, err = refused.communicate(timeout=60)
        assert refused.returncode == 1 and err.count("\n") == 1, err
        assert "'bob' is already running on node 'node-a'" in err
        second = up(c, "bob", "node-c", "--until-idle", "--idle-grace", "0.5")
        lines: list[str] = []
        assert second.stderr is not None
        wait_for(lambda: lines.append(second.stderr.readline()) or "waiting for" in lines[-1],
                 timeout=60, what="the countdown line")  # fmt: skip
        assert "it runs on node 'node-a'" in lines[-1] and "--no-wait" in lines[-1]
        assert second.poll() is None  # waiting, not exited
        first.send_signal(2)  # node-a stops cleanly and releases: node-c takes bob
        assert first.wait(timeout=60) == 0
        _, rest = second.communicate(timeout=90)
        assert second.returncode == 0, rest
        assert "took the lease of 'bob'" in rest
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
