"""Durable inboxes (DESIGN §7): nothing lost, nothing processed twice, and a prompt wake-up."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from journal import JsonlJournal, drain

from team.agents.session.log import read_records
from team.backends import post
from team.compaction.records import UserTurn
from team.core.errors import UserError
from team.core.events import DeliveryEvent, MemorySink
from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage
from team.mailbox.waker import PollingWaker, WatchfilesWaker, make_waker, wait_for_mail
from team.workspace.config import parse_config
from team.workspace.places import Workspace

HERE = Path(__file__).parent
WRITER = HERE / "mailbox_writer.py"
READER = HERE / "mailbox_reader.py"


def msg(content: str, sender: str = "user", **extra: object) -> MailMessage:
    return MailMessage.model_validate({"from": sender, "to": "alice", "content": content, **extra})


@pytest.fixture
def box(tmp_path: Path) -> MaildirMailbox:
    return MaildirMailbox(tmp_path / "inbox" / "alice")


def files(folder: Path) -> list[str]:
    return sorted(os.listdir(folder)) if folder.exists() else []


# --- the basic cycle -------------------------------------------------------------------


def test_deliver_receive_done_cycle(box: MaildirMailbox) -> None:
    sent = [box.deliver(msg(f"m{i}")) for i in range(3)]
    assert all(p.parent == box.new_dir for p in sent)
    assert files(box.tmp_dir) == []
    assert [m.content for m in box.pending()] == ["m0", "m1", "m2"]
    assert box.has_pending()

    claimed = box.receive()
    assert [c.message.content for c in claimed] == ["m0", "m1", "m2"]
    assert files(box.new_dir) == []
    # Claimed but not done: still pending, and handed out again after a restart.
    assert [m.content for m in box.pending()] == ["m0", "m1", "m2"]
    assert [c.message.content for c in MaildirMailbox(box.root).receive()] == ["m0", "m1", "m2"]

    box.done(claimed[0])
    box.done(claimed[0])  # idempotent
    assert [m.content for m in box.pending()] == ["m1", "m2"]
    assert [m.content for m in box.processed()] == ["m0"]
    box.done_many(claimed)
    assert not box.has_pending()
    assert [m.content for m in box.processed()] == ["m0", "m1", "m2"]
    assert box.receive() == []


def test_message_json_on_disk_has_the_documented_keys(box: MaildirMailbox) -> None:
    path = box.deliver(msg("hi", task_id=7))
    data = json.loads(path.read_text())
    assert {"id", "type", "from", "to", "content", "timestamp"} <= data.keys()
    assert data["from"] == "user" and data["task_id"] == 7


def test_reading_an_inbox_that_never_got_mail(box: MaildirMailbox) -> None:
    assert box.pending() == [] and box.processed() == [] and not box.has_pending()
    assert not box.root.exists()  # reading creates nothing


def test_drain_records_each_message_once(box: MaildirMailbox, tmp_path: Path) -> None:
    first = msg("once")
    box.deliver(first)
    box.deliver(first)  # at-least-once: a sender retry delivers the same id twice
    box.deliver(msg("second"))
    with JsonlJournal(tmp_path / "journal.jsonl") as journal:
        assert [m.content for m in drain(box, journal)] == ["once", "second"]
        assert drain(box, journal) == []
    # A journal reopened after a restart still knows what it recorded.
    box.deliver(first)
    with JsonlJournal(tmp_path / "journal.jsonl") as journal:
        assert drain(box, journal) == []
        assert [m.content for m in journal.messages()] == ["once", "second"]
    assert not box.has_pending()


def test_journal_survives_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with JsonlJournal(path) as journal:
        journal.record(msg("kept"))
    with path.open("ab") as f:
        f.write(b'{"id": "torn", "from": "us')  # what a crash mid-append leaves
    with JsonlJournal(path) as journal:
        assert not journal.seen("torn")
        journal.record(msg("after"))
        assert [m.content for m in journal.messages()] == ["kept", "after"]


# --- concurrency and crashes -----------------------------------------------------------


def test_reader_killed_mid_drain_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    """The agent's intake is SIGKILLed at exact points of a drain (the reader kills
    itself there, so every kill lands mid-drain whatever the machine's load): after a
    claim before the record, after the record before any ack, and in the middle of the
    acks. Then a clean run drains the rest. Every message is in the session log once."""
    ws = Workspace.at(tmp_path)
    box = MaildirMailbox(ws.inbox_dir("alice"))
    rng = random.Random(7)
    sent: list[str] = []
    kill_points = ["receive:1", "done:1"] + [f"done:{rng.randint(2, 30)}" for _ in range(3)]
    for round_, kill_at in enumerate(kill_points):
        sent += [box.deliver(msg(f"r{round_} {i}")).name for i in range(30)]
        reader = subprocess.run(
            [sys.executable, str(READER), str(ws.root), kill_at],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert reader.returncode == -signal.SIGKILL, (kill_at, reader.stderr)
        assert box.has_pending()  # it died with work left: mid-drain

    final = subprocess.run(
        [sys.executable, str(READER), str(ws.root)], capture_output=True, text=True, timeout=60
    )
    assert final.returncode == 0 and final.stdout.endswith("drained\n"), final.stderr
    turns = [r for r in read_records(ws.session_log("alice")) if isinstance(r, UserTurn)]
    ids = [i for r in turns for i in r.inbox]
    texts = [b.text for r in turns for b in r.blocks]
    assert len(ids) == len(set(ids)) == len(texts), "a message was processed twice"
    assert len(texts) == len(sent), "a message was lost"
    assert not box.has_pending()
    assert len(box.processed()) == len(sent)


def test_writer_killed_mid_write_leaves_nothing_in_new(box: MaildirMailbox) -> None:
    size = 64 << 20  # big enough that the write and fsync take a while
    for _attempt in range(5):
        writer = subprocess.Popen(
            [sys.executable, str(WRITER), str(box.root), "w", "1", "--size", str(size)],
            stdout=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while not files(box.tmp_dir) and writer.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=10)
        assert writer.stdout is not None
        writer.stdout.close()
        if files(box.tmp_dir) and not files(box.new_dir):
            break  # the kill landed mid-write
        for name in files(box.new_dir):  # it finished first: clear out and try again
            os.unlink(box.new_dir / name)
    else:
        pytest.fail("could not kill the writer mid-write")

    assert files(box.new_dir) == []
    assert box.receive() == [] and box.pending() == []
    assert box.clean_tmp() == 0  # a fresh tmp file may be a slow writer: left alone
    assert box.clean_tmp(older_than=0) == 1
    assert files(box.tmp_dir) == []


def test_malformed_files_are_moved_aside_and_reading_goes_on(
    box: MaildirMailbox, caplog: pytest.LogCaptureFixture
) -> None:
    box.deliver(msg("before"))
    for name, data in [
        ("00000000000000000001.garbage.json", b"{not json"),
        ("00000000000000000002.missing.json", b'{"content": "no sender"}'),
        ("00000000000000000003.binary.json", b"\xff\xfe\x00"),
    ]:
        (box.new_dir / name).write_bytes(data)
    (box.new_dir / "00000000000000000004.folder").mkdir()
    box.deliver(msg("after"))

    with caplog.at_level(logging.WARNING):
        claimed = box.receive()
    assert [c.message.content for c in claimed] == ["before", "after"]
    assert len(files(box.bad_dir)) == 4
    assert sum("malformed" in r.getMessage() for r in caplog.records) == 4
    assert [m.content for m in box.pending()] == ["before", "after"]
    box.done_many(claimed)
    assert not box.has_pending()


# --- waking ----------------------------------------------------------------------------


def deliver_later(box: MaildirMailbox, delay: float) -> threading.Thread:
    t = threading.Thread(target=lambda: (time.sleep(delay), box.deliver(msg("ping"))))
    t.start()
    return t


@pytest.mark.parametrize("force_polling", [False, True], ids=["native", "stat-polling"])
def test_waker_wakes_on_a_delivery(box: MaildirMailbox, force_polling: bool) -> None:
    stop = threading.Event()
    waker = WatchfilesWaker([box.new_dir], stop, force_polling=force_polling)
    try:
        assert waker.mode == ("polling" if force_polling else "native")
        sender = deliver_later(box, 0.2)
        # True: woken by the delivery, not timed out (how soon: bench/wake_latency.py)
        assert waker.wait(timeout=60.0) is True
        assert [c.message.content for c in box.receive()] == ["ping"]
        sender.join()
    finally:
        waker.close()


def test_timeout_rescan_finds_mail_without_any_file_event(
    box: MaildirMailbox, tmp_path: Path
) -> None:
    # A waker watching somewhere else never fires for this inbox: the situation of a
    # lost or overflowed inotify event. The timeout rescan must still find the mail.
    stop = threading.Event()
    elsewhere = tmp_path / "elsewhere"
    for waker in (WatchfilesWaker([elsewhere], stop), PollingWaker(stop)):
        try:
            sender = deliver_later(box, 0.1)
            assert wait_for_mail(box, waker, stop, timeout=60.0, tick=0.2) is True
            sender.join()
            box.done_many(box.receive())
        finally:
            waker.close()


def test_waker_returns_promptly_on_stop_and_times_out(box: MaildirMailbox) -> None:
    stop = threading.Event()
    waker = make_waker([box.new_dir], stop)
    try:
        t0 = time.monotonic()
        assert waker.wait(timeout=0.2) is False
        assert time.monotonic() - t0 >= 0.15  # it waited: a timeout, not a spurious wake
        threading.Timer(0.1, stop.set).start()
        t0 = time.monotonic()
        assert waker.wait(timeout=120.0) is False
        assert time.monotonic() - t0 < 60  # the stop ended the wait, long before its timeout
        assert wait_for_mail(box, waker, stop, timeout=10.0) is False
    finally:
        waker.close()


# --- sending ---------------------------------------------------------------------------


@pytest.fixture
def team(tmp_path: Path) -> tuple[Workspace, object]:
    config = parse_config({"agents": [{"name": n, "role": "r"} for n in ("alice", "bob", "carol")]})
    return Workspace.at(tmp_path), config


def test_send_checks_names_and_content(team: tuple[Workspace, object]) -> None:
    ws, config = team
    sink = MemorySink()
    sent = post.send(ws, config, "bob", "hi", sender="alice", sink=sink)  # type: ignore[arg-type]
    assert MaildirMailbox(ws.inbox_dir("bob")).pending() == [sent]
    [event] = sink.of(DeliveryEvent)
    assert (event.agent, event.sender, event.msg_id) == ("bob", "alice", sent.id)
    assert event.kind == "sent"

    with pytest.raises(UserError, match=r"unknown agent 'bobb'.*alice, bob, carol"):
        post.send(ws, config, "bobb", "hi")  # type: ignore[arg-type]
    assert not ws.inbox_dir("bobb").exists()  # a typo never creates an inbox
    with pytest.raises(UserError, match="invalid sender"):
        post.send(ws, config, "bob", "hi", sender="Not A Name")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="empty"):
        post.send(ws, config, "bob", "  \n")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="type"):
        post.send(ws, config, "bob", "hi", type="telegram")  # type: ignore[arg-type]


def test_broadcast_reaches_everyone_but_the_sender(team: tuple[Workspace, object]) -> None:
    ws, config = team
    sent = post.broadcast(ws, config, "standup", sender="alice")  # type: ignore[arg-type]
    assert sorted(m.to for m in sent) == ["bob", "carol"]
    assert all(m.type == "broadcast" for m in sent)
    assert len({m.id for m in sent}) == 2
    assert not MaildirMailbox(ws.inbox_dir("alice")).has_pending()
    for name in ("bob", "carol"):
        [got] = MaildirMailbox(ws.inbox_dir(name)).pending()
        assert (got.content, got.sender) == ("standup", "alice")
