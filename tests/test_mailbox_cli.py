"""`team send`, `team broadcast`, `team inbox` driven as a user would: subprocesses."""

from __future__ import annotations

import json
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import send_mail, write_team


def team(ws: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "team", *args, "--dir", str(ws)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_team(tmp_path, "alice:coder,bob:tester,carol:reviewer")


def inbox_json(ws: Path, agent: str, *flags: str) -> list[dict]:
    done = team(ws, "inbox", agent, "--json", *flags)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_send_broadcast_and_inbox(ws: Path) -> None:
    sent = team(ws, "send", "alice", "please review #3", "--from", "bob")
    assert sent.returncode == 0, sent.stderr
    assert "alice" in sent.stdout
    assert team(ws, "broadcast", "standup at 10").returncode == 0

    pending = inbox_json(ws, "alice")
    assert [(m["from"], m["type"], m["content"], m["status"]) for m in pending] == [
        ("bob", "message", "please review #3", "pending"),
        ("user", "broadcast", "standup at 10", "pending"),
    ]
    assert all({"id", "to", "timestamp"} <= m.keys() for m in pending)
    assert [m["content"] for m in inbox_json(ws, "carol")] == ["standup at 10"]

    human = team(ws, "inbox", "alice")
    assert human.returncode == 0
    assert "please review #3" in human.stdout and "from bob" in human.stdout


def test_inbox_all_shows_processed_messages(ws: Path) -> None:
    from team.mailbox.maildir import MaildirMailbox  # the owner's side, as an agent does it

    for text in ("one", "two", "three"):
        send_mail(ws, "bob", text)
    box = MaildirMailbox(ws / ".team" / "inbox" / "bob")
    claimed = box.receive()
    box.done(claimed[0])

    assert [m["content"] for m in inbox_json(ws, "bob")] == ["two", "three"]
    everything = inbox_json(ws, "bob", "--all")
    assert [(m["content"], m["status"]) for m in everything] == [
        ("one", "done"),
        ("two", "pending"),
        ("three", "pending"),
    ]


@pytest.mark.parametrize(
    "args",
    [
        ("send", "alcie", "hi"),
        ("inbox", "alcie"),
        ("send", "alice", "hi", "--from", "Not A Name"),
        ("send", "alice", "   "),
    ],
    ids=["send-unknown", "inbox-unknown", "bad-sender", "empty"],
)
def test_user_errors_are_one_clear_line(ws: Path, args: tuple[str, ...]) -> None:
    done = team(ws, *args)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("team: error: "), done.stderr
    assert "Traceback" not in done.stderr
    if "alcie" in args:
        assert "unknown agent 'alcie'" in lines[0] and "alice, bob, carol" in lines[0]
        assert not (ws / ".team" / "inbox" / "alcie").exists()


def read_line(proc: subprocess.Popen[str], sel: selectors.BaseSelector, timeout: float) -> str:
    """One line of the follower's output, or "" if none came within `timeout`."""
    assert proc.stdout is not None
    if not sel.select(timeout):
        return ""
    return proc.stdout.readline()


def test_follow_prints_messages_from_other_processes_and_stops_on_ctrl_c(ws: Path) -> None:
    send_mail(ws, "alice", "already here")
    follower = subprocess.Popen(
        [sys.executable, "-m", "team", "inbox", "alice", "--follow", "--json", "--dir", str(ws)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert follower.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(follower.stdout, selectors.EVENT_READ)
        # The first line proves the follower is up and watching.
        first = read_line(follower, sel, timeout=15)
        assert json.loads(first)["content"] == "already here"

        for text in ("hello from another process", "and another"):
            sent = team(ws, "send", "alice", text, "--from", "bob")
            assert sent.returncode == 0, sent.stderr
            # it arrives while the follower runs (how fast is bench/wake_latency.py's
            # question: a time limit here would fail on a busy machine, not on a bug)
            line = read_line(follower, sel, timeout=15)
            assert line, "the follower printed nothing"
            got = json.loads(line)
            assert (got["content"], got["from"], got["status"]) == (text, "bob", "pending")

        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=10) == 0
        assert follower.stderr is not None
        err = follower.stderr.read()
        assert "Traceback" not in err and "KeyboardInterrupt" not in err
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()


def test_follow_shows_each_state_change_and_never_a_message_first_as_done(ws: Path) -> None:
    """A message shows as it landed, [pending]; when the agent has processed it, one
    line says [done]. One the agent took and finished before the follower's scan still
    shows pending first: it was, and a reader must not think it never waited."""
    from team.mailbox.maildir import MaildirMailbox

    follower = subprocess.Popen(
        [sys.executable, "-m", "team", "inbox", "alice", "--follow", "--dir", str(ws)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120"},
    )
    box = MaildirMailbox(ws / ".team" / "inbox" / "alice")
    got: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [got.put(ln) for ln in follower.stdout], daemon=True).start()

    def next_line() -> str:
        return got.get(timeout=15)

    try:
        send_mail(ws, "alice", "first, processed while watched")
        head = next_line()
        assert head.startswith("[pending] ") and "from user (message)" in head, head
        assert next_line().strip() == "first, processed while watched"
        for claim in box.receive():  # what the agent does
            box.done(claim)
        done = next_line()
        assert done.startswith(f"[done] {claim.message.id} at "), done
        # landed and done in one go, faster than any scan
        send_mail(ws, "alice", "second, processed at once")
        for claim in box.receive():
            box.done(claim)
        lines = [next_line() for _ in range(3)]
        assert lines[0].startswith("[pending] "), lines
        assert lines[1].strip() == "second, processed at once"
        assert lines[2].startswith(f"[done] {claim.message.id} at "), lines
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=10) == 0
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
