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
- the mean context of an agent call (tokens), which the sim's and the pipeline's
  per-call work follow;
- RSS at the end of the tenth, and its ratio to the end of the first tenth; the Python
  heap (`sys.getallocatedblocks`) as a ratio too, which tells a Python-object leak from
  native growth;
- what had accumulated: processed messages, completed tasks, compactions.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from team.agents.runtime.supervisor import Runtime
from team.backends.post import send
from team.cli.demo import seed_project
from team.core.events import DeliveryEvent, FanoutSink, SqliteEventLog
from team.llm.sim import SimModel
from team.tasks import TaskBoard
from team.workspace.config import render_config
from team.workspace.places import Workspace

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


def calibration() -> None:
    """A fixed piece of work like the team's own (JSON, a regex scan, hashing, sorting).

    The feeder runs it five times a second. Its CPU per run, tenth by tenth, shows how
    much the machine's load inflates CPU time (two busy cores slow every thread alike),
    so the overhead can also be read against it: a ratio against a baseline measured in
    the same run, the same moment.
    """
    records = [{"role": "user", "n": i, "text": f"tool result {i} " * 12} for i in range(60)]
    text = json.dumps(records)
    json.loads(text)
    _CAL_WORD.findall(text)
    hashlib.blake2b(text.encode(), digest_size=16).digest()
    sorted(text.split(), key=len)


_CAL_WORD = re.compile(r"[\w-]+")


@dataclass(frozen=True)
class Mark:
    calls: int
    cpu: float  # process CPU, the feeder's taken out
    model_cpu: float
    rss_kb: int
    at: float
    context: int  # context tokens of all agent calls so far
    py_blocks: int
    cal_cpu: float  # CPU of every calibration run so far
    cal_runs: int
    sim_entries: int  # entries alive in the sim's prompt caches (model state, not the team's)


class Checkpoints:
    """Process CPU, model CPU, RSS and the rest of `Mark` at every tenth of the run."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.marks: list[Mark] = []
        self.model_cpu = 0.0
        self.context = 0
        self.feeder_cpu = 0.0  # CPU of the thread playing the user (not the team's)
        self.cal_cpu = 0.0
        self.cal_runs = 0
        self.calls = 0
        self.lock = threading.Lock()
        self.done = threading.Event()
        self._next = 0

    def count(self, spent: float, context: int = 0, sim_entries: int = 0) -> None:
        with self.lock:
            self.model_cpu += spent
            self.context += context
            self.calls += 1
            if self.calls >= self._next:
                self.marks.append(
                    Mark(
                        self.calls,
                        time.process_time() - self.feeder_cpu,
                        self.model_cpu,
                        rss_kb(),
                        time.monotonic(),
                        self.context,
                        sys.getallocatedblocks(),
                        self.cal_cpu,
                        self.cal_runs,
                        sim_entries,
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
        self.agents: set[str] = set()

    def entries(self) -> int:
        return sum(len(self.cache(a)) for a in list(self.agents))

    def complete(self, request):
        self.agents.add(request.agent)
        start = time.thread_time()
        reply = None
        try:
            reply = super().complete(request)
            return reply
        finally:
            # summaries are model work too: their CPU is the model's, only agent calls count
            spent = time.thread_time() - start
            if request.purpose == "agent":
                context = reply.usage.context_tokens if reply else 0
                due = self.marks.calls + 1 >= self.marks._next
                self.marks.count(spent, context, self.entries() if due else 0)
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
        start = time.thread_time()
        calibration()
        with marks.lock:
            marks.cal_cpu += time.thread_time() - start
            marks.cal_runs += 1
        marks.feeder_cpu = time.thread_time()
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
    rows = []
    for m0, m1 in itertools.pairwise(marks.marks):
        n = m1.calls - m0.calls
        if n <= 0:
            continue
        model = m1.model_cpu - m0.model_cpu
        runs = max(1, m1.cal_runs - m0.cal_runs)
        rows.append(
            {
                "calls": m1.calls,
                "over": ((m1.cpu - m0.cpu) - model) / n * 1000,
                "sim": model / n * 1000,
                "ctx": (m1.context - m0.context) / n,
                "rate": n / (m1.at - m0.at),
                "cal": (m1.cal_cpu - m0.cal_cpu) / runs * 1000,
                "rss": m1.rss_kb,
                "blocks": m1.py_blocks,
                "entries": m1.sim_entries,
            }
        )
    first, last = rows[0], rows[-1]

    def vs_cal(r: dict) -> float:
        return (r["over"] / r["cal"]) / (first["over"] / first["cal"])

    print(
        f"soak: {marks.calls:,} agent calls, {sent:,} messages delivered, {done_tasks:,} tasks done"
    )
    print(
        f"{'calls':>8} {'overhead':>9} {'x first':>8} {'x, load':>8} {'cal ms':>7} "
        f"{'sim ms':>7} {'context':>8} {'calls/s':>8} {'RSS MiB':>8} {'x first':>8} "
        f"{'py heap':>8} {'sim cache':>10}"
    )

    def heap(r: dict) -> str:  # no pymalloc blocks to count under PYTHONMALLOC=malloc
        return f"{r['blocks'] / first['blocks']:.2f}" if first["blocks"] else "-"

    for r in rows:
        print(
            f"{r['calls']:>8,} {r['over']:>9.2f} {r['over'] / first['over']:>8.2f} "
            f"{vs_cal(r):>8.2f} {r['cal']:>7.2f} {r['sim']:>7.2f} {r['ctx']:>8,.0f} "
            f"{r['rate']:>8.1f} {r['rss'] / 1024:>8.1f} {r['rss'] / first['rss']:>8.2f} "
            f"{heap(r):>8} {r['entries']:>10,}"
        )
    print(
        "overhead and sim: CPU ms per agent call; x, load: the overhead ratio with each "
        "tenth read against its calibration (cal ms); py heap: allocated Python blocks, "
        "x first; sim cache: the sim's prompt-cache entries alive (they live 5 minutes)"
    )
    print(
        f"last tenth / first tenth: overhead {last['over'] / first['over']:.2f}x, "
        f"{vs_cal(last):.2f}x against the calibration (target <= 1.2); "
        f"RSS {last['rss'] / first['rss']:.2f}x, "
        f"Python heap {heap(last)}x"
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
