"""Redis backend benchmark: delivery throughput and send-to-wake latency against the file
inboxes in the same run, then 3 nodes of 30 agents taking every message exactly once.

    .venv/bin/python bench/bench_redis.py [--quick]

Starts its own redis-server (appendonly, appendfsync always: an accepted message is on
disk, the promise the file inboxes make) on a free loopback port.

1. Throughput with 1 and 8 writer processes into one inbox: Redis `XADD` against the
   Maildir delivery (fsync, rename, fsync dir), alternately. Printed as the ratio.
2. Latency from `deliver()` returning in a writer process to the owner holding the
   message: the Redis waker (blocking XREAD) against the watchfiles waker.
   Target: Redis p99 < 20 ms on localhost.
3. 3 node processes x 30 agent threads, each agent with a lease, its own consumer group
   and a session journal (append + fsync before XACK); 4 sender processes send to random
   agents; one node is killed -9 halfway and restarted. Every message must be recorded
   exactly once.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from redis_server import RedisServer
from wake_latency import paced, pct, wake_latencies

from team.backends.redis_inbox import RedisMailbox, StreamWaker
from team.backends.redis_lease import Leases
from team.backends.redis_link import RedisLink
from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage
from team.mailbox.waker import WatchfilesWaker

CONTENT = "Please review the change to the compaction threshold in team.toml. " * 3


def message(sender: str, to: str, i: int) -> MailMessage:
    return MailMessage.model_validate({"from": sender, "to": to, "content": f"{i} {CONTENT}"})


def box_for(kind: str, where: str, agent: str = "alice", node: str = "bench"):
    if kind == "files":
        return MaildirMailbox(Path(where) / agent)
    return RedisMailbox(RedisLink(where, "bench", wait=True), agent, node)


# --- 1. throughput ---------------------------------------------------------------------


def writer(kind: str, where: str, sender: str, count: int, go) -> None:  # type: ignore[no-untyped-def]
    box = box_for(kind, where)
    if kind == "files":
        box.ensure()
    else:
        box.link.ping()
    go.wait()
    for i in range(count):
        box.deliver(message(sender, "alice", i))


def run_writers(kind: str, where: str, writers: int, per_writer: int) -> float:
    ctx = mp.get_context("fork")
    go = ctx.Event()
    procs = [
        ctx.Process(target=writer, args=(kind, where, f"w{i}", per_writer, go))
        for i in range(writers)
    ]
    for p in procs:
        p.start()
    time.sleep(0.3)
    t0 = time.perf_counter()
    go.set()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    elapsed = time.perf_counter() - t0
    assert box_for(kind, where).pending_count() == writers * per_writer
    return writers * per_writer / elapsed


def throughput(server: RedisServer, base: Path, reps: int, total: int) -> None:
    print("1. durable delivery throughput (messages/s), Redis XADD against Maildir")
    for writers in (1, 8):
        per = total // writers
        files, redis_, ratios = [], [], []
        for _ in range(reps):
            server.client().flushall()
            f = run_writers("files", str(base / uuid.uuid4().hex), writers, per)
            r = run_writers("redis", server.url, writers, per)
            files.append(f)
            redis_.append(r)
            ratios.append(r / f)
        print(
            f"   {writers} writer(s): redis {statistics.median(redis_):8.0f}/s   "
            f"files {statistics.median(files):8.0f}/s   "
            f"redis/files x{statistics.median(ratios):.2f}"
            f" (pairs {min(ratios):.2f}..{max(ratios):.2f})"
        )


# --- 2. latency ------------------------------------------------------------------------


def paced_writer(kind: str, where: str, count: int, gap_s: float, out) -> None:  # type: ignore[no-untyped-def]
    box = box_for(kind, where, node="writer")
    paced(box, (message("bob", "alice", i) for i in range(count)), gap_s, out)


def latencies(kind: str, where: str, count: int, gap_s: float) -> list[float]:
    box = box_for(kind, where)
    stop = threading.Event()
    if kind == "files":
        box.ensure()
        waker = WatchfilesWaker([box.new_dir], stop)
    else:
        box.receive()  # the group exists before the writer starts
        waker = StreamWaker(box, stop)
    return wake_latencies(box, waker, stop, paced_writer, (kind, where, count, gap_s), count)


def latency(server: RedisServer, base: Path, count: int, gap_s: float) -> None:
    print(f"2. send-to-wake latency ({count} messages, ~{gap_s * 1000:.0f} ms apart)")
    server.client().flushall()
    files = latencies("files", str(base / uuid.uuid4().hex), count, gap_s)
    redis_ = latencies("redis", server.url, count, gap_s)
    for name, xs in (("files, watchfiles waker", files), ("redis, blocking XREAD", redis_)):
        print(
            f"   {name:24s} p50 {pct(xs, 50) * 1000:6.1f} ms  p99 {pct(xs, 99) * 1000:6.1f} ms  "
            f"max {max(xs) * 1000:6.1f} ms"
        )
    p99 = pct(redis_, 99)
    print(
        f"   redis/files: p50 x{pct(redis_, 50) / max(pct(files, 50), 1e-6):.2f}, "
        f"p99 x{p99 / max(pct(files, 99), 1e-6):.2f}; "
        f"target redis p99 < 20 ms: {'ok' if p99 < 0.02 else 'MISSED'}"
    )


# --- 3. nodes --------------------------------------------------------------------------


def agent_loop(box: RedisMailbox, waker: StreamWaker, journal: Path, stop) -> None:  # type: ignore[no-untyped-def]
    """What an agent does with its inbox: take, record (fsync), only then ack."""
    seen: set[str] = set()
    if journal.exists():
        seen = {json.loads(line)["id"] for line in journal.read_text().splitlines() if line}
    fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        while not stop.is_set():
            claimed = box.receive()
            fresh = [c for c in claimed if c.message.id not in seen]
            if fresh:
                data = "".join(json.dumps({"id": c.message.id}) + "\n" for c in fresh)
                os.write(fd, data.encode())
                os.fsync(fd)
                seen.update(c.message.id for c in fresh)
            if claimed:
                box.done_many(claimed)
            else:
                waker.wait(0.5)
    finally:
        os.close(fd)


def node_main(url: str, node: str, agents: list[str], folder: str, ready, stop) -> None:  # type: ignore[no-untyped-def]
    link = RedisLink(url, "bench", wait=True)
    leases = Leases(link, node, 10.0)
    for a in agents:
        while True:  # after a kill -9 the old leases lapse first
            try:
                leases.acquire(a)
                break
            except Exception:
                time.sleep(0.2)
    halt = threading.Event()
    threads = []
    for a in agents:
        box = RedisMailbox(link, a, node)
        t = threading.Thread(
            target=agent_loop, args=(box, StreamWaker(box, halt), Path(folder) / f"{a}.jsonl", halt)
        )
        t.start()
        threads.append(t)
    ready.set()
    while not stop.is_set():
        stop.wait(0.2)
    halt.set()
    for t in threads:
        t.join()
    leases.close()


def sender_main(url: str, agents: list[str], count: int, seed: int, out) -> None:  # type: ignore[no-untyped-def]
    link = RedisLink(url, "bench", wait=True)
    rng = random.Random(seed)
    ids = []
    for i in range(count):
        to = rng.choice(agents)
        msg = message(f"s{seed}", to, i)
        RedisMailbox(link, to).deliver(msg)
        ids.append(msg.id)
    out.put(ids)


def nodes(server: RedisServer, base: Path, per_sender: int) -> None:
    n_nodes, per_node, senders = 3, 30, 4
    print(f"3. {n_nodes} nodes x {per_node} agents, {senders} senders x {per_sender} messages,")
    print("   node 1 killed -9 halfway and restarted")
    server.client().flushall()
    ctx = mp.get_context("fork")
    names = [[f"n{n}a{i:02d}" for i in range(per_node)] for n in range(n_nodes)]
    every = [a for group in names for a in group]
    folders = [base / f"node{n}" for n in range(n_nodes)]
    for f in folders:
        f.mkdir()
    stops = [ctx.Event() for _ in range(n_nodes)]

    def start(n: int) -> mp.Process:
        ready = ctx.Event()
        p = ctx.Process(
            target=node_main,
            args=(server.url, f"node{n}", names[n], str(folders[n]), ready, stops[n]),
        )
        p.start()
        assert ready.wait(60), f"node {n} did not start"
        return p

    procs = [start(n) for n in range(n_nodes)]
    out = ctx.Queue()
    t0 = time.perf_counter()
    sends = [
        ctx.Process(target=sender_main, args=(server.url, every, per_sender, s, out))
        for s in range(senders)
    ]
    for s in sends:
        s.start()
    time.sleep(0.5)
    procs[1].kill()  # kill -9 mid-run: claims not acked stay pending in its groups
    procs[1].join()
    stops[1] = ctx.Event()  # the dead node may have died holding the old one's lock
    procs[1] = start(1)
    sent = [i for _ in sends for i in out.get(timeout=120)]
    for s in sends:
        s.join()
    link = RedisLink(server.url, "bench")
    deadline = time.monotonic() + 120
    while any(RedisMailbox(link, a).pending_count() for a in every):
        assert time.monotonic() < deadline, "inboxes did not drain"
        time.sleep(0.1)
    elapsed = time.perf_counter() - t0
    for n in range(n_nodes):
        stops[n].set()
        procs[n].join()
    recorded: list[str] = []
    for f in folders:
        for j in f.glob("*.jsonl"):
            recorded += [json.loads(line)["id"] for line in j.read_text().splitlines() if line]
    doubled = len(recorded) - len(set(recorded))
    lost = len(set(sent) - set(recorded))
    verdict = "ok" if not doubled and not lost and len(recorded) == len(sent) else "FAILED"
    print(
        f"   {len(sent)} sent, {len(recorded)} recorded, {lost} lost, {doubled} twice, "
        f"{len(sent) / elapsed:.0f} messages/s end to end: exactly once {verdict}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer messages (a smoke run)")
    args = ap.parse_args()
    reps, total, count, per_sender = (1, 400, 50, 250) if args.quick else (5, 1600, 200, 1000)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        server = RedisServer(base / "redis").start()
        try:
            print(f"redis-server on {server.url} (appendfsync always), files in {base}")
            throughput(server, base, reps, total)
            latency(server, base, count, gap_s=0.02)
            nodes(server, base, per_sender)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
