"""Task notices during a Redis outage (a real redis-server, stopped and restarted): the
agent that sends them is not held up, and they arrive once Redis is back, in order,
exactly once, even across a restart of the node."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from redis_server import RedisServer
from teamrun import wait_for
from tiers import Tier

from team.backends.outbox import Outbox
from team.backends.redis_inbox import RedisMailbox
from team.teamwork import Crew, Teamwork

pytestmark = pytest.mark.slow


def stream(tier: Tier, agent: str) -> list[tuple[str, str, int | None]]:
    """What reached `agent`'s inbox on Redis: (type, sender, task id), oldest first."""
    backend = tier.open()
    try:
        box: RedisMailbox = backend.mailbox(agent)  # type: ignore[assignment]
        return [(e.message.type, e.message.sender, e.message.task_id) for e in box.entries()]
    finally:
        backend.close()


def in_thread(fn) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


@pytest.fixture
def server(tmp_path: Path):
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


def test_notices_sent_while_redis_is_down_arrive_when_it_is_back(
    tmp_path: Path, server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    tier = Tier(server.url, tmp_path / "ws")
    stop = threading.Event()
    backend = tier.open(wait=True, stop=stop)  # a node's: its link waits out outages
    board = backend.board()
    one = board.claim(board.create("Parse the logs", owner="bob").id, "bob")
    two = board.create("Write the report", owner="bob")
    outbox = Outbox(backend, tier.ws.outbox_dir, stop=stop)
    outbox.start()
    teamwork = Teamwork(Crew(tier.ws, tier.config, board, courier=outbox))
    try:
        with caplog.at_level(logging.WARNING):
            server.kill()  # kill -9: Redis is gone

            def tell() -> None:  # what `update_task` does after changing the board
                teamwork.cancelled(one.model_copy(update={"status": "cancelled"}), "alice",
                                   "in_progress")  # fmt: skip
                teamwork.reassigned(two.model_copy(update={"owner": "carol"}), "bob", "alice")

            sender = in_thread(tell)
            sender.join(timeout=20)
            assert not sender.is_alive(), "the agent waited for Redis to send a notice"
            assert outbox.pending() == 3  # bob twice, carol once, all on local disk
            wait_for(lambda: backend.link.down, timeout=20, what="the outbox to meet the outage")
            server.start(keep_port=True)
            wait_for(lambda: outbox.pending() == 0, timeout=30, what="the notices to go out")
        assert stream(tier, "bob") == [("revoked", "alice", 1), ("revoked", "alice", 2)]
        assert stream(tier, "carol") == [("task", "alice", 2)]
        said = [r.getMessage() for r in caplog.records]
        assert sum("is unreachable" in s for s in said) == 1, said
        assert sum("is back after" in s for s in said) == 1, said
        assert not any("could not tell" in s for s in said), said
    finally:
        stop.set()
        outbox.close(timeout=5)
        backend.close()


def test_notices_left_when_the_node_stops_go_out_when_it_starts_again(
    tmp_path: Path, server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    tier = Tier(server.url, tmp_path / "ws")
    stop = threading.Event()
    backend = tier.open(wait=True, stop=stop)
    board = backend.board()
    task = board.create("Parse the logs", owner="bob")
    outbox = Outbox(backend, tier.ws.outbox_dir, stop=stop)
    outbox.start()
    server.kill()
    teamwork = Teamwork(Crew(tier.ws, tier.config, board, courier=outbox))
    teamwork.reassigned(task.model_copy(update={"owner": "carol"}), "bob", "alice")
    with caplog.at_level(logging.WARNING):
        assert outbox.close(timeout=1) == 2  # the node stops while Redis is still away
    [line] = [r.getMessage() for r in caplog.records if "could not be delivered" in r.getMessage()]
    assert "2 notices" in line and str(tier.ws.outbox_dir) in line
    backend.close()

    server.start(keep_port=True)
    stop = threading.Event()  # the next `team up` in this folder
    backend = tier.open(wait=True, stop=stop)
    again = Outbox(backend, tier.ws.outbox_dir, stop=stop)
    again.start()
    try:
        wait_for(lambda: again.pending() == 0, timeout=30, what="the spooled notices")
        assert again.close(timeout=5) == 0
    finally:
        stop.set()
        backend.close()
    assert stream(tier, "bob") == [("revoked", "alice", 1)]
    assert stream(tier, "carol") == [("task", "alice", 1)]


def test_a_notice_redis_keeps_refusing_is_set_aside_and_the_others_go_out(
    tmp_path: Path, server: RedisServer, caplog: pytest.LogCaptureFixture, monkeypatch
) -> None:
    monkeypatch.setattr("team.backends.outbox.RESCAN_S", 0.05)
    tier = Tier(server.url, tmp_path / "ws")
    stop = threading.Event()
    backend = tier.open(wait=True, stop=stop)
    board = backend.board()
    task = board.create("Parse the logs", owner="bob")
    # bob's inbox key holds a string: every XADD to it is refused (WRONGTYPE)
    backend.link.client.set(f"team:{tier.config.team.name}:inbox:bob", "not a stream")
    outbox = Outbox(backend, tier.ws.outbox_dir, stop=stop)
    outbox.start()
    teamwork = Teamwork(Crew(tier.ws, tier.config, board, courier=outbox))
    try:
        with caplog.at_level(logging.WARNING):
            teamwork.reassigned(task.model_copy(update={"owner": "carol"}), "bob", "alice")
            wait_for(lambda: outbox.pending() == 0, timeout=30, what="the queue to drain")
        assert stream(tier, "carol") == [("task", "alice", 1)]  # not held up behind bob's
        said = [r.getMessage() for r in caplog.records]
        assert sum("refused notice" in s for s in said) == 1, said  # one line, not a flood
        assert sum("set notice" in s and "aside" in s for s in said) == 1, said
        assert not any(r.exc_info for r in caplog.records)  # no traceback
        kept = [e for e in outbox.spool.entries() if e.status == "done"]
        assert len(kept) == 1  # bob's notice stays on disk
    finally:
        stop.set()
        outbox.close(timeout=5)
        backend.close()


def test_a_reply_to_a_call_sent_before_the_outage_does_not_announce_redis_back(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """kill -9 mid-run: one thread's call fails (Redis is unreachable), then another's,
    sent before the kill, gets its reply. That reply says nothing about now: the team
    must not say "back" and then "unreachable" again (it did, once per flap)."""
    import redis

    from team.backends.redis_link import RedisLink

    link = RedisLink(redis_url, "flap", wait=True)
    sent, outage_seen, up_again = threading.Event(), threading.Event(), threading.Event()

    def answered_late(r):
        sent.set()
        outage_seen.wait(10)
        return "ok"  # the reply to a call sent before the outage

    def while_down(r):
        outage_seen.set()
        if not up_again.is_set():
            raise redis.ConnectionError("Connection refused")
        return "ok"

    early = threading.Thread(target=lambda: link.call(answered_late))
    early.start()
    sent.wait(10)
    caplog.set_level(logging.WARNING, logger="team.backends.redis_link")
    down = threading.Thread(target=lambda: link.call(while_down))
    down.start()
    early.join(10)
    assert link.down  # still down: the late reply is not a sign of life
    up_again.set()
    down.join(10)
    assert not link.down
    said = caplog.text
    assert said.count("is unreachable") == 1 and said.count("is back after") == 1, said
