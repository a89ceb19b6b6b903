"""The inbox contract, run against both backends: files (Maildir) and Redis (streams).

Delivery, exactly-once processing, order per sender, crash recovery, malformed mail and
waking: what an agent relies on, whichever backend holds its inbox. The Redis tier runs
a real redis-server (tests/redis_server.py); it never skips.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from journal import JsonlJournal, drain
from tiers import Tier

from team.agents.session.log import read_records
from team.compaction.records import UserTurn
from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage
from team.mailbox.waker import wait_for_mail


@pytest.fixture(params=["files", "redis"])
def tier(request: pytest.FixtureRequest, tmp_path: Path) -> Tier:
    spec = "files" if request.param == "files" else request.getfixturevalue("redis_url")
    return Tier(spec, tmp_path)


def msg(content: str, sender: str = "user", to: str = "alice", **extra: object) -> MailMessage:
    return MailMessage.model_validate({"from": sender, "to": to, "content": content, **extra})


def contents(messages) -> list[str]:
    return [m.content for m in messages]


# --- the basic cycle -------------------------------------------------------------------


def test_deliver_receive_done_cycle(tier: Tier) -> None:
    box = tier.box()
    for i in range(3):
        box.deliver(msg(f"m{i}"))
    assert contents(box.pending()) == ["m0", "m1", "m2"]
    assert box.has_pending() and box.pending_count() == 3

    claimed = box.receive()
    assert contents(c.message for c in claimed) == ["m0", "m1", "m2"]
    # Claimed but not done: still pending, and handed out again after a restart.
    assert contents(box.pending()) == ["m0", "m1", "m2"]
    assert contents(c.message for c in tier.box().receive()) == ["m0", "m1", "m2"]

    box.done(claimed[0])
    box.done(claimed[0])  # idempotent
    assert contents(box.pending()) == ["m1", "m2"] and box.pending_count() == 2
    assert contents(box.processed()) == ["m0"]
    box.done_many(claimed)
    assert not box.has_pending() and box.pending_count() == 0
    assert contents(box.processed()) == ["m0", "m1", "m2"]
    assert box.receive() == []
    assert contents(tier.box().receive()) == []  # a restart finds nothing left over


def test_an_inbox_that_never_got_mail_is_empty(tier: Tier) -> None:
    box = tier.box("bob")
    assert box.pending() == [] and box.processed() == []
    assert not box.has_pending() and box.pending_count() == 0
    assert box.receive() == []


def test_mail_sent_before_the_reader_ever_ran_is_delivered(tier: Tier) -> None:
    tier.box("carol").deliver(msg("early", to="carol"))
    assert tier.box("carol").pending_count() == 1
    assert contents(c.message for c in tier.box("carol").receive()) == ["early"]


def test_message_keeps_its_fields_and_extra_keys(tier: Tier) -> None:
    box = tier.box()
    sent = msg("hi", type="task", task_id=7, seq=3)
    box.deliver(sent)
    [got] = box.receive()
    assert got.message == sent and got.message.model_extra == {"seq": 3}


# --- exactly once ----------------------------------------------------------------------


def test_each_message_is_recorded_once(tier: Tier, tmp_path: Path) -> None:
    box = tier.box()
    first = msg("once")
    box.deliver(first)
    box.deliver(first)  # at-least-once: a sender retry delivers the same id twice
    box.deliver(msg("second"))
    with JsonlJournal(tmp_path / "journal.jsonl") as journal:
        assert contents(drain(box, journal)) == ["once", "second"]
        assert drain(box, journal) == []
    box.deliver(first)  # a retry after a restart
    with JsonlJournal(tmp_path / "journal.jsonl") as journal:
        assert drain(tier.box(), journal) == []
        assert contents(journal.messages()) == ["once", "second"]
    assert not box.has_pending()


def test_many_writer_processes_and_threads_one_reader_in_order(tier: Tier, tmp_path: Path) -> None:
    procs, per_proc, threads, per_thread = 3, 150, 2, 100
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            tier.proc_args("write", "alice", f"p{i}", str(per_proc), "--go", str(go)),
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(procs)
    ]
    for w in writers:
        assert w.stdout is not None and w.stdout.readline() == "ready\n"
    box = tier.box()

    def write(sender: str) -> None:
        mine = tier.box()  # each thread its own handle, as separate senders have
        for i in range(per_thread):
            mine.deliver(msg(f"{sender} {i}", sender=sender, seq=i))

    journal = JsonlJournal(tmp_path / "journal.jsonl")
    writing = threading.Event()
    writing.set()

    def read() -> None:  # the owner drains while the writers write
        while writing.is_set():
            drain(box, journal)
            time.sleep(0.002)

    reader = threading.Thread(target=read)
    reader.start()
    go.touch()
    senders = [threading.Thread(target=write, args=(f"t{i}",)) for i in range(threads)]
    for t in senders:
        t.start()
    for t in senders:
        t.join(timeout=60)
    for w in writers:
        assert w.wait(timeout=60) == 0
    writing.clear()
    reader.join(timeout=60)
    drain(box, journal)
    journal.close()

    got = journal.messages()
    assert len(got) == procs * per_proc + threads * per_thread
    assert len({m.id for m in got}) == len(got)
    by_sender: dict[str, list[int]] = defaultdict(list)
    for m in got:
        by_sender[m.sender].append(m.model_extra["seq"])  # type: ignore[index]
    assert set(by_sender) == {f"p{i}" for i in range(procs)} | {f"t{i}" for i in range(threads)}
    for sender, seqs in by_sender.items():
        n = per_proc if sender.startswith("p") else per_thread
        assert seqs == list(range(n)), f"{sender} out of order or incomplete"
    assert not box.has_pending()
    if isinstance(box, MaildirMailbox):  # no half-written file left behind by any writer
        assert list(box.tmp_dir.iterdir()) == []


def test_reader_killed_at_every_point_loses_nothing_and_repeats_nothing(
    tier: Tier, tmp_path: Path
) -> None:
    """kill -9 (the reader kills itself, so the point is exact whatever the machine's
    load) after claiming, after recording, and in the middle of acking."""
    box = tier.box()
    sent = 0
    for round_, die_at in enumerate(["claimed", "recorded", "ack:20", "ack:1"]):
        for i in range(40):
            box.deliver(msg(f"r{round_} {i}"))
        sent += 40
        reader = subprocess.run(
            tier.proc_args("read", "alice", "--die-at", die_at),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert reader.returncode == -signal.SIGKILL, (die_at, reader.stderr)
        assert box.has_pending()  # it died before finishing: there is work left over

    final = subprocess.run(
        tier.proc_args("read", "alice"), capture_output=True, text=True, timeout=60
    )
    assert final.returncode == 0 and final.stdout.endswith("drained\n"), final.stderr
    turns = [r for r in read_records(tier.ws.session_log("alice")) if isinstance(r, UserTurn)]
    texts = [b.text for r in turns for b in r.blocks]
    ids = [i for r in turns for i in r.inbox]
    assert len(ids) == len(set(ids)) == len(texts)
    assert len(texts) == len(set(texts)), "a message was processed twice"
    assert len(texts) == sent, "a message was lost"
    assert not box.has_pending()
    assert len(box.processed()) == sent


def test_malformed_mail_is_moved_aside_and_reading_goes_on(
    tier: Tier, caplog: pytest.LogCaptureFixture
) -> None:
    box = tier.box()
    box.deliver(msg("before"))
    bad = tier.inject_malformed("alice")
    box.deliver(msg("after"))
    with caplog.at_level(logging.WARNING):
        claimed = box.receive()
    assert contents(c.message for c in claimed) == ["before", "after"]
    assert tier.bad_count("alice") == bad
    assert sum("malformed" in r.getMessage() for r in caplog.records) == bad
    box.done_many(claimed)
    assert not box.has_pending()


# --- waking ----------------------------------------------------------------------------


def deliver_later(tier: Tier, delay: float, content: str = "ping") -> threading.Thread:
    t = threading.Thread(target=lambda: (time.sleep(delay), tier.box().deliver(msg(content))))
    t.start()
    return t


def test_waker_wakes_soon_after_a_delivery(tier: Tier) -> None:
    stop = threading.Event()
    backend = tier.open()
    box = backend.mailbox("alice")
    waker = backend.waker("alice", stop)
    try:
        sender = deliver_later(tier, 0.2)
        # True: woken by the delivery, not timed out (how soon: bench/wake_latency.py)
        assert waker.wait(timeout=60.0) is True
        assert contents(c.message for c in box.receive()) == ["ping"]
        sender.join()
        box.done_many(box.receive())
    finally:
        waker.close()


def test_waker_does_not_wake_for_mail_already_taken(tier: Tier) -> None:
    stop = threading.Event()
    backend = tier.open()
    box = backend.mailbox("alice")
    box.deliver(msg("old"))
    waker = backend.waker("alice", stop)
    try:
        box.done_many(box.receive())
        waker.wait(timeout=0.3)  # the files waker may still report the old event once
        t0 = time.monotonic()
        assert waker.wait(timeout=0.3) is False
        assert time.monotonic() - t0 >= 0.25
    finally:
        waker.close()


def test_waker_times_out_and_returns_promptly_on_stop(tier: Tier) -> None:
    stop = threading.Event()
    backend = tier.open()
    box = backend.mailbox("alice")
    waker = backend.waker("alice", stop)
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


def test_wait_for_mail_finds_mail(tier: Tier) -> None:
    stop = threading.Event()
    backend = tier.open()
    box = backend.mailbox("alice")
    waker = backend.waker("alice", stop)
    try:
        sender = deliver_later(tier, 0.1)
        assert wait_for_mail(box, waker, stop, timeout=5.0, tick=0.2) is True
        sender.join()
    finally:
        waker.close()
