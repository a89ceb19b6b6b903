"""Inbox streams are trimmed of what the consumer group acknowledged, never of an entry
unread or unacknowledged (a real redis-server; a fresh mailbox is what a restarted
process sees)."""

from __future__ import annotations

import threading
import time

from team.backends.redis_inbox import RedisMailbox
from team.backends.redis_link import RedisLink
from team.mailbox.message import MailMessage

KEEP = 20


def msg(i: int) -> MailMessage:
    return MailMessage.model_validate({"from": "bob", "to": "alice", "content": f"m{i}"})


def box(link: RedisLink) -> RedisMailbox:
    return RedisMailbox(link, "alice", "n1", keep=KEEP)


def contents(messages) -> list[str]:
    return [m.content for m in messages]


def test_acks_trim_acknowledged_entries_and_nothing_else(redis_url: str) -> None:
    link = RedisLink(redis_url, "t")
    inbox = box(link)
    for i in range(100):
        inbox.deliver(msg(i))
    assert link.client.xlen(inbox.key) == 100  # nobody read them: nothing may go

    claims = inbox.receive()
    assert len(claims) == 100
    inbox.done_many(claims[:70])  # 70 processed, 30 claimed and not acked (a crash now)
    for i in range(100, 110):
        inbox.deliver(msg(i))  # 10 not read at all
    inbox.done_many([])  # any ack trims; an empty one too

    # the 70 processed went; every unacked and every unread entry is there, in order
    left = inbox.entries()
    assert contents(e.message for e in left) == [f"m{i}" for i in range(70, 110)]
    assert {e.status for e in left} == {"pending"}

    # a new process takes over the pending entries and the unread ones: none lost
    again = box(RedisLink(redis_url, "t"))
    assert contents(c.message for c in again.receive()) == [f"m{i}" for i in range(70, 110)]
    assert again.pending_count() == 40


def test_a_long_processed_stream_shrinks_to_keep(redis_url: str) -> None:
    link = RedisLink(redis_url, "t")
    inbox = box(link)
    for round_ in range(5):
        for i in range(40):
            inbox.deliver(msg(round_ * 40 + i))
        inbox.done_many(inbox.receive())
        assert link.client.xlen(inbox.key) <= KEEP + KEEP // 10  # bounded, however long
    assert inbox.pending_count() == 0 and not inbox.has_pending()
    assert contents(inbox.processed())[-1] == "m199"  # the newest stay for --all


def test_concurrent_senders_lose_nothing_while_acks_trim(redis_url: str) -> None:
    link = RedisLink(redis_url, "t")
    inbox = box(link)
    total, taken = 600, []

    def send(start: int) -> None:
        sender = box(RedisLink(redis_url, "t"))
        for i in range(start, total, 3):
            sender.deliver(msg(i))

    senders = [threading.Thread(target=send, args=(k,)) for k in range(3)]
    for t in senders:
        t.start()
    deadline = time.monotonic() + 60
    while len(taken) < total and time.monotonic() < deadline:
        claims = inbox.receive()
        taken += [c.message.content for c in claims]
        inbox.done_many(claims)  # trims while the senders add
    for t in senders:
        t.join(timeout=30)
    assert sorted(taken) == sorted(f"m{i}" for i in range(total))
    assert len(taken) == len(set(taken))
    assert link.client.xlen(inbox.key) <= KEEP + KEEP // 10
