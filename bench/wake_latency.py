"""The send-to-wake harness `bench_mailbox.py` and `bench_redis.py` share: a paced writer
in another process, the owner's loop in a thread, and the percentiles."""

from __future__ import annotations

import multiprocessing as mp
import random
import threading
import time
from collections.abc import Callable, Iterable

from team.mailbox.message import MailMessage
from team.mailbox.waker import wait_for_mail


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def paced(box, messages: Iterable[MailMessage], gap_s: float, out) -> None:  # type: ignore[no-untyped-def]
    """Deliver `messages` about `gap_s` apart, putting (id, when sent) on `out`, then None."""
    rng = random.Random(1)
    for msg in messages:
        time.sleep(rng.uniform(0.5 * gap_s, 1.5 * gap_s))
        box.deliver(msg)
        out.put((msg.id, time.monotonic()))  # CLOCK_MONOTONIC is system-wide on Linux
    out.put(None)


def wake_latencies(
    box, waker, stop: threading.Event, writer: Callable[..., None], args: tuple, count: int
) -> list[float]:  # type: ignore[no-untyped-def]
    """Seconds from each delivery to the owner holding it. `writer(*args, queue)` runs in
    a forked process and reports its sends through the queue (see `paced`)."""
    seen: dict[str, float] = {}

    def owner() -> None:
        while not stop.is_set():
            if wait_for_mail(box, waker, stop, timeout=5.0, tick=1.0):
                now = time.monotonic()
                claimed = box.receive()
                for c in claimed:
                    seen.setdefault(c.message.id, now)
                box.done_many(claimed)

    reader = threading.Thread(target=owner)
    reader.start()
    ctx = mp.get_context("fork")
    sent = ctx.Queue()
    w = ctx.Process(target=writer, args=(*args, sent))
    w.start()
    delivered = {}
    while (item := sent.get(timeout=60)) is not None:
        delivered[item[0]] = item[1]
    w.join()
    deadline = time.monotonic() + 5
    while len(seen) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    reader.join()
    waker.close()
    assert len(seen) == count, f"only {len(seen)} of {count} received"
    # The owner may hold a message before deliver() returns (the dir fsync is still
    # running); that counts as zero, not negative.
    return [max(0.0, seen[i] - t) for i, t in delivered.items()]
