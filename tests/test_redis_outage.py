"""Redis down or unreachable: one line at the CLI; running agents wait, resume, lose nothing."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest
from journal import JsonlJournal, drain
from redis_server import RedisServer, free_port
from tiers import Tier

from team.backends.redis_link import RedisUnavailable
from team.mailbox.message import MailMessage


def msg(i: int) -> MailMessage:
    return MailMessage.model_validate({"from": "bob", "to": "alice", "content": f"m{i}", "seq": i})


def test_an_unreachable_redis_is_one_line_at_the_cli(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    box = Tier(url, tmp_path).box()
    with pytest.raises(RedisUnavailable) as e:
        box.deliver(msg(0))
    assert str(e.value).startswith(f"cannot reach Redis at {url}: ")
    assert "\n" not in str(e.value)


def test_a_redis_restart_mid_run_loses_and_doubles_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = RedisServer(tmp_path / "redis").start()
    tier = Tier(server.url, tmp_path / "ws")
    stop = threading.Event()
    sender = tier.box(wait=True, stop=stop)
    reader = tier.box(wait=True, stop=stop)
    journal = JsonlJournal(tmp_path / "journal.jsonl")
    total = 300
    sent = threading.Event()

    def send() -> None:
        for i in range(total):
            sender.deliver(msg(i))
            time.sleep(0.002)
        sent.set()

    def read() -> None:
        while not (sent.is_set() and not reader.has_pending()):
            drain(reader, journal)
            time.sleep(0.005)

    threads = [threading.Thread(target=send), threading.Thread(target=read)]
    try:
        with caplog.at_level(logging.WARNING):
            for t in threads:
                t.start()
            deadline = time.monotonic() + 30
            while len(journal.messages()) < 50 and time.monotonic() < deadline:
                time.sleep(0.01)
            server.kill()  # kill -9, mid-run
            time.sleep(1.0)
            server.start(keep_port=True)
            for t in threads:
                t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
        got = [m.model_extra["seq"] for m in journal.messages()]
        assert got == list(range(total)), "lost, doubled or out of order"
        down = [r for r in caplog.records if "unreachable" in r.getMessage()]
        back = [r for r in caplog.records if "is back after" in r.getMessage()]
        assert 1 <= len(down) <= 2 and len(back) == len(down)  # one line per link
    finally:
        stop.set()
        journal.close()
        server.stop()
