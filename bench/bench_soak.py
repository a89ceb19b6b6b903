"""Soak: does the per-call cost of running a team grow with how long it has run?

Run: .venv/bin/python bench/bench_soak.py [CALLS] [MESSAGES] [AGENTS]
     (defaults 50000 20000 4; about 10-20 minutes on two busy cores)

A sim team at zero model latency works through a stream of tasks and messages fed to
it while it runs, until it has made CALLS agent model calls and MESSAGES messages have
been delivered (from the CLI side and between agents). The real runtime, the real
inboxes (Maildir, processed mail archived), the real task board and the real SQLite
event log; session logs without fsync (a constant per call that would only slow the run).

Printed per tenth of the run, in the same run:
- overhead ms/call: process CPU time not spent inside the model, per agent call (inbox,
  board, compaction pipeline, tools, session log, events, status);
- the ratio of each tenth's overhead to the first tenth's (the target: last <= 1.2);
- RSS at the end of the tenth, and its ratio to the end of the first tenth;
- what had accumulated: processed messages, completed tasks, compactions.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import threading
import time
from pathlib import Path

from team.agents.runtime import Runtime
from team.backends.post import send
from team.cli.demo import seed_project
from team.config import render_config
from team.events import DeliveryEvent, FanoutSink, SqliteEventLog
from team.llm.sim import SimModel
from team.tasks import TaskBoard
from team.workspace import Workspace

SUBJECTS = [
    "Review src/inventory.py and list its functions",
    "Find every TODO in the project",
    "Count the lines of every Python file under src/",
    "Read docs/notes.md and summarise the open questions",
]
OPEN_TASKS_PER_AGENT = 2
"""The feeder keeps this many open tasks on the board per agent, so no one idles."""


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Checkpoints:
    """Process CPU, model CPU and RSS at every tenth of the target number of calls."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.marks: list[tuple[int, float, float, int, float]] = []
        self.model_cpu = 0.0
        self.feeder_cpu = 0.0  # CPU of the thread playing the user (not the team's)
        self.calls = 0
        self.lock = threading.Lock()
        self.done = threading.Event()
        self._next = 0

    def count(self, spent: float) -> None:
        with self.lock:
            self.model_cpu += spent
            self.calls += 1
            if self.calls >= self._next:
                self.marks.append(
                    (
                        self.calls,
                        time.process_time() - self.feeder_cpu,
                        self.model_cpu,
                        rss_kb(),
                        time.monotonic(),
                    )
                )
                print(f"  ... {self.calls:,} calls", file=sys.stderr, flush=True)
                self._next += self.target // 10
                if self.calls >= self.target:
                    self.done.set()


class TimedSim(SimModel):
    """The sim, with the CPU time spent inside it counted (thread time, per call)."""

    def __init__(self, marks: Checkpoints) -> None:
        super().__init__()
        self.marks = marks

    def complete(self, request):
        start = time.thread_time()
        try:
            return super().complete(request)
        finally:
            # summaries are model work too: their CPU is the model's, only agent calls count
            spent = time.thread_time() - start
            if request.purpose == "agent":
                self.marks.count(spent)
            else:
                with self.marks.lock:
                    self.marks.model_cpu += spent


class Deliveries:
    """An `EventSink` counting messages delivered (sent to an inbox) during the run."""

    def __init__(self) -> None:
        self.sent = 0

    def emit(self, event) -> None:
        if isinstance(event, DeliveryEvent) and event.kind == "sent":
            self.sent += 1


def feed(ws, config, board, marks: Checkpoints, deliveries: Deliveries, messages: int, stop):
    """Keep every agent busy: open tasks on the board, and messages in step with calls.

    The feeder plays the person at the CLI, so its CPU is not the team's: it is counted
    (`marks.feeder_cpu`) and taken out of the overhead.
    """
    names = config.names()
    k = 0
    while not stop.is_set() and not marks.done.is_set():
        marks.feeder_cpu = time.thread_time()
        open_now = len(board.unclaimed())
        for _ in range(OPEN_TASKS_PER_AGENT * len(names) - open_now):
            board.create(f"{SUBJECTS[k % len(SUBJECTS)]} (round {k})")
            k += 1
        due = messages * min(1.0, marks.calls / marks.target)
        while deliveries.sent < due:  # agents' own messages count toward the total
            to = names[deliveries.sent % len(names)]
            text = f"Status check {deliveries.sent}: how is it going?"
            send(ws, config, to, text, sink=deliveries)
        stop.wait(0.2)


def run(calls: int, messages: int, n_agents: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.at(tmp)
        agents = [(f"a{i:02d}", "coder" if i % 2 else "tester") for i in range(n_agents)]
        ws.config_path.write_text(render_config("soak", "sim", agents, threshold=8000))
        seed_project(ws.root)
        config = ws.load_config()
        board = TaskBoard(ws.tasks_dir)
        marks = Checkpoints(calls)
        deliveries = Deliveries()
        events = SqliteEventLog(ws.events_db)
        rt = Runtime(ws, config, TimedSim(marks), FanoutSink(events, deliveries), fsync=False)
        stop = threading.Event()
        feeder = threading.Thread(
            target=feed, args=(ws, config, board, marks, deliveries, messages, stop), daemon=True
        )
        marks.count(0.0)  # the zeroth mark: the start
        marks.calls = 0
        rt.start()
        feeder.start()
        watcher = threading.Thread(
            target=lambda: (marks.done.wait(), rt.request_stop()), daemon=True
        )
        watcher.start()
        rt.wait(stop_grace=60)
        stop.set()
        rt.close()
        events.close()
        done_tasks = sum(t.status == "completed" for t in board.list())
        report(marks, deliveries.sent, done_tasks, ws)


def report(marks: Checkpoints, sent: int, done_tasks: int, ws: Workspace) -> None:
    m = marks.marks
    rows = []
    for (c0, p0, s0, _, t0), (c1, p1, s1, r1, t1) in itertools.pairwise(m):
        n = c1 - c0
        if n <= 0:
            continue
        rows.append(
            (c1, ((p1 - p0) - (s1 - s0)) / n * 1000, (s1 - s0) / n * 1000, r1, n / (t1 - t0))
        )
    base_ms, base_rss = rows[0][1], rows[0][3]
    print(
        f"soak: {marks.calls:,} agent calls, {sent:,} messages delivered, {done_tasks:,} tasks done"
    )
    print(
        f"{'calls':>8} {'overhead ms/call':>17} {'x first':>8} {'sim ms/call':>12} "
        f"{'calls/s':>8} {'RSS MiB':>8} {'x first':>8}"
    )
    for c, over, sim, rss, rate in rows:
        print(
            f"{c:>8,} {over:>17.2f} {over / base_ms:>8.2f} {sim:>12.2f} "
            f"{rate:>8.1f} {rss / 1024:>8.1f} {rss / base_rss:>8.2f}"
        )
    last = rows[-1]
    print(
        f"last tenth / first tenth: overhead {last[1] / base_ms:.2f}x (target <= 1.2), "
        f"RSS {last[3] / base_rss:.2f}x"
    )
    inbox = sum(1 for _ in ws.inbox_root.glob("*/cur/*"))
    archived = sum(1 for _ in ws.inbox_root.glob("*/archive/*/*"))
    print(f"inboxes at the end: {inbox} in cur/, {archived:,} archived")


def main() -> None:
    args = [int(a) for a in sys.argv[1:]]
    calls, messages, agents = (args + [50_000, 20_000, 4][len(args) :])[:3]
    run(calls, messages, agents)


if __name__ == "__main__":
    main()
