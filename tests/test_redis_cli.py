"""The CLI against a Redis backend, from two folders standing for two machines."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import run_team, send_mail
from redis_server import free_port

from team.backends.redis_inbox import RedisMailbox
from team.backends.redis_link import RedisLink
from team.workspace.config import render_config


def node(root: Path, url: str) -> Path:
    """A folder with the team's team.toml, pointing at `url` (one per machine)."""
    root.mkdir(parents=True, exist_ok=True)
    text = render_config("crew", "sim", [("alice", "coder"), ("bob", "tester")])
    text = text.replace("max_tokens = 8000", f'max_tokens = 8000\nbackend = "{url}"')
    (root / "team.toml").write_text(text)
    return root


def team(where: Path, *args: str, env: dict | None = None):
    return run_team(*args, "--dir", str(where), env=env)


def test_send_on_one_machine_inbox_on_another(tmp_path: Path, redis_url: str) -> None:
    a, b = node(tmp_path / "a", redis_url), node(tmp_path / "b", redis_url)
    sent = team(a, "send", "alice", "hello from a", "--from", "bob")
    assert sent.returncode == 0, sent.stderr
    assert team(a, "broadcast", "standup").returncode == 0
    shown = team(b, "inbox", "alice", "--json")
    assert shown.returncode == 0, shown.stderr
    got = json.loads(shown.stdout)
    assert [(m["from"], m["content"], m["status"]) for m in got] == [
        ("bob", "hello from a", "pending"),
        ("user", "standup", "pending"),
    ]
    assert not (b / ".team" / "inbox").exists()  # nothing on local disk
    # an agent's answer to the user, read and acknowledged on the other machine
    send_mail(a, "user", "report", sender="alice")
    acked = team(b, "inbox", "user", "--ack", "--json")
    assert [m["content"] for m in json.loads(acked.stdout)] == ["report"]
    assert json.loads(team(a, "inbox", "user", "--json").stdout) == []


def test_team_backend_overrides_team_toml(tmp_path: Path, redis_url: str) -> None:
    files = node(tmp_path / "f", "files")
    env = {"TEAM_BACKEND": redis_url}
    assert team(files, "send", "bob", "via env", env=env).returncode == 0
    assert not (files / ".team" / "inbox" / "bob").exists()
    got = json.loads(team(files, "inbox", "bob", "--json", env=env).stdout)
    assert [m["content"] for m in got] == ["via env"]


@pytest.mark.parametrize(
    "backend, expected",
    [
        ("redis://127.0.0.1:{port}/0", "cannot reach Redis at redis://127.0.0.1:{port}/0: "),
        ("http://example.com", "TEAM_BACKEND: backend must be 'files' or a redis://"),
    ],
)
def test_a_bad_or_unreachable_backend_is_one_line(
    tmp_path: Path, backend: str, expected: str
) -> None:
    port = free_port()
    where = node(tmp_path, "files")
    done = team(where, "send", "alice", "hi", env={"TEAM_BACKEND": backend.format(port=port)})
    assert done.returncode == 1
    assert done.stderr.startswith("team: error: " + expected.format(port=port))
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_stats_merges_the_event_databases_of_several_nodes(tmp_path: Path) -> None:
    from team.core.events import ModelCallEvent, SqliteEventLog

    a, b = node(tmp_path / "a", "files"), node(tmp_path / "b", "files")
    for where, agent, calls in ((a, "alice", 2), (b, "bob", 3)):
        log = SqliteEventLog(where / ".team" / "events.db")
        for _ in range(calls):
            log.emit(ModelCallEvent(agent=agent, purpose="agent", input_tokens=100))
        log.close()
    alone = json.loads(team(a, "stats", "--json").stdout)
    assert set(alone["agents"]) == {"alice"}
    merged = team(a, "stats", "--json", "--db", str(b))  # a node's folder, or its events.db
    assert merged.returncode == 0, merged.stderr
    got = json.loads(merged.stdout)
    assert {n: s["agent_calls"] for n, s in got["agents"].items()} == {"alice": 2, "bob": 3}
    assert got["team"]["agent_calls"] == 5 and got["team"]["input_tokens"] == 500
    missing = team(a, "stats", "--db", str(tmp_path / "nowhere.db"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_inbox_follow_on_redis_prints_each_message_once(tmp_path: Path, redis_url: str) -> None:
    """`team inbox --follow` on one machine; mail sent from another; the agent taking
    (and acking, which trims) meanwhile: each message printed once, Ctrl-C exits 0."""
    a, b = node(tmp_path / "a", redis_url), node(tmp_path / "b", redis_url)
    send_mail(a, "alice", "already here")  # in process: `team send` on Redis is tested above
    follower = subprocess.Popen(
        [sys.executable, "-m", "team", "inbox", "alice", "--follow", "--json", "--dir", str(b)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(ln) for ln in follower.stdout])
    reader.start()

    changes: list[dict] = []

    def next_message() -> dict:
        """The next message; the lines saying one was processed are kept aside."""
        while True:
            try:
                got = json.loads(lines.get(timeout=30))
            except queue.Empty:
                raise AssertionError("the follower printed nothing in 30s") from None
            if not got.get("changed"):
                return got
            changes.append(got)

    agent = RedisMailbox(RedisLink(redis_url, "crew"), "alice", "n1")
    try:
        first = next_message()
        assert first["content"] == "already here"  # it is up and watching
        agent.done_many(agent.receive())  # the agent takes it: not printed again
        for text in ("hello from a", "and another"):
            send_mail(a, "alice", text, sender="bob")
            got = next_message()
            assert (got["content"], got["from"]) == (text, "bob")
            agent.done_many(agent.receive())
        send_mail(a, "alice", "last one")
        assert next_message()["content"] == "last one"
        # each processed message was said to be done, once
        assert {"id": first["id"], "status": "done", "changed": True} in changes
        assert len(changes) == len({c["id"] for c in changes})
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=15) == 0
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
        reader.join(timeout=15)
    assert lines.empty(), "a message was printed twice"
    err = follower.stderr.read()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
