"""Mailbox benchmark: durable delivery throughput and delivery-to-wake latency.

    .venv/bin/python bench/bench_mailbox.py [--quick]

1. Throughput with 1 and 8 writer processes into one inbox, against a bare loop doing the
   same create / write / fsync / rename / fsync-dir steps with nothing else (the disk's own
   limit), measured alternately in the same run. Target: >= 0.5 of the bare loop.
2. Latency from `deliver()` returning in a writer process to the owner holding the
   message, with the watchfiles waker and with a plain 1-second poll. Target: p99 < 50 ms.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from wake_latency import paced, pct, wake_latencies

from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage
from team.mailbox.waker import PollingWaker, Waker, WatchfilesWaker

CONTENT = "Please review the change to the compaction threshold in team.toml. " * 3


def message(sender: str, i: int) -> MailMessage:
    return MailMessage.model_validate({"from": sender, "to": "alice", "content": f"{i} {CONTENT}"})


# --- 1. throughput ---------------------------------------------------------------------


def ours(root: str, sender: str, count: int, go: mp.Event) -> None:  # type: ignore[valid-type]
    box = MaildirMailbox(Path(root))
    box.ensure()
    go.wait()  # type: ignore[attr-defined]
    for i in range(count):
        box.deliver(message(sender, i))


def bare(root: str, sender: str, count: int, go: mp.Event) -> None:  # type: ignore[valid-type]
    """The same disk steps as a delivery and nothing else: the disk's own limit."""
    tmp, new = os.path.join(root, "tmp"), os.path.join(root, "new")
    os.makedirs(tmp, exist_ok=True)
    os.makedirs(new, exist_ok=True)
    data = message(sender, 0).to_json().encode()
    dir_fd = os.open(new, os.O_RDONLY | os.O_DIRECTORY)
    go.wait()  # type: ignore[attr-defined]
    for _ in range(count):
        name = f"{time.time_ns():020d}.{uuid.uuid4().hex}.json"
        fd = os.open(os.path.join(tmp, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.rename(os.path.join(tmp, name), os.path.join(new, name))
        os.fsync(dir_fd)
    os.close(dir_fd)


def run_writers(target, writers: int, per_writer: int, base: Path) -> float:  # type: ignore[no-untyped-def]
    """Messages per second for `writers` processes each writing `per_writer`."""
    ctx = mp.get_context("fork")
    root = base / uuid.uuid4().hex
    go = ctx.Event()
    procs = [
        ctx.Process(target=target, args=(str(root), f"w{i}", per_writer, go))
        for i in range(writers)
    ]
    for p in procs:
        p.start()
    time.sleep(0.3)  # let every writer reach the start line
    t0 = time.perf_counter()
    go.set()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    elapsed = time.perf_counter() - t0
    assert len(os.listdir(root / "new")) == writers * per_writer
    return writers * per_writer / elapsed


def throughput(base: Path, reps: int, total: int) -> None:
    print("1. durable delivery throughput (messages/s; bare loop = same disk steps only)")
    for writers in (1, 8):
        per_writer = total // writers
        mine, limit, ratios = [], [], []
        for _ in range(reps):
            # Back-to-back pairs, so drift in a shared disk hits both sides alike; the
            # figure is the median of the pairs' ratios.
            b = run_writers(bare, writers, per_writer, base)
            m = run_writers(ours, writers, per_writer, base)
            limit.append(b)
            mine.append(m)
            ratios.append(m / b)
        ratio = statistics.median(ratios)
        verdict = "ok" if ratio >= 0.5 else "BELOW TARGET"
        print(
            f"   {writers} writer(s): mailbox {statistics.median(mine):8.0f}/s   "
            f"bare {statistics.median(limit):8.0f}/s   ratio {ratio:.2f} "
            f"(pairs {min(ratios):.2f}..{max(ratios):.2f}; target >= 0.50: {verdict})"
        )


# --- 2. latency ------------------------------------------------------------------------


def paced_writer(root: str, count: int, gap_s: float, out) -> None:  # type: ignore[no-untyped-def]
    paced(MaildirMailbox(Path(root)), (message("bob", i) for i in range(count)), gap_s, out)


def latencies(make: object, base: Path, count: int, gap_s: float) -> list[float]:
    """Delivery-to-receive latencies (s) with the waker `make(new_dir, stop)` builds."""
    box = MaildirMailbox(base / uuid.uuid4().hex)
    box.ensure()
    stop = threading.Event()
    waker: Waker = make(box.new_dir, stop)  # type: ignore[operator]
    return wake_latencies(box, waker, stop, paced_writer, (str(box.root), count, gap_s), count)


def latency(base: Path, count: int, gap_s: float) -> None:
    print(f"2. delivery-to-wake latency ({count} messages, ~{gap_s * 1000:.0f} ms apart)")
    kinds = {
        "plain 1 s poll (baseline)": lambda d, s: PollingWaker(s),
        "watchfiles waker (native)": lambda d, s: WatchfilesWaker([d], s),
        "watchfiles (forced stat polling)": lambda d, s: WatchfilesWaker([d], s, True),
    }
    results = {name: latencies(make, base, count, gap_s) for name, make in kinds.items()}
    base_p50 = pct(results["plain 1 s poll (baseline)"], 50)
    base_p99 = pct(results["plain 1 s poll (baseline)"], 99)
    for name, xs in results.items():
        p50, p99 = pct(xs, 50), pct(xs, 99)
        print(
            f"   {name:34s} p50 {p50 * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms  "
            f"(p50 x{p50 / base_p50:.3f}, p99 x{p99 / base_p99:.3f} of the 1 s poll)"
        )
    p99 = pct(results["watchfiles waker (native)"], 99)
    print(f"   target p99 < 50 ms with the waker: {'ok' if p99 < 0.05 else 'MISSED'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer messages (a smoke run)")
    ap.add_argument("--dir", type=Path, help="where to write (default: a temp folder)")
    args = ap.parse_args()
    reps, total, count = (1, 400, 40) if args.quick else (7, 1600, 200)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        print(f"disk: {base}")
        throughput(base, reps, total)
        latency(base, count, gap_s=0.02)


if __name__ == "__main__":
    main()
