"""Orchestration overhead of `team up` on the sim model at zero latency.

Run: .venv/bin/python bench/bench_runtime.py [3 30 100]

For teams of 3, 30 and 100 agents (two tasks each, the demo's seeded project), prints:
- calls/s: agent model calls per second of wall time, for the whole team;
- overhead ms/call: process CPU time not spent inside the model, per model call
  (inbox, compaction pipeline, tools, session log, events; the GIL makes CPU time the
  honest measure for threads);
- the baseline measured in the same run: the sim model's own CPU per call, and the
  overhead as a ratio of it;
- memory per agent: resident memory added by the running team, divided by agents.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

from team.agents.runtime.supervisor import Runtime
from team.backends.post import send
from team.cli.demo import seed_project
from team.core.events import MemorySink
from team.llm.sim import SimModel
from team.tasks import TaskBoard
from team.workspace.config import render_config
from team.workspace.places import Workspace

SUBJECTS = ["Review src/inventory.py and list its functions", "Find every TODO in the project"]


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class TimedSim(SimModel):
    """The sim, with the CPU time spent inside it counted (thread time, per call)."""

    def __init__(self) -> None:
        super().__init__()
        self.cpu = 0.0
        self.calls = 0
        self._count_lock = threading.Lock()

    def complete(self, request):
        start = time.thread_time()
        try:
            return super().complete(request)
        finally:
            spent = time.thread_time() - start
            with self._count_lock:
                self.cpu += spent
                self.calls += request.purpose == "agent"


def run(n_agents: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.at(tmp)
        agents = [(f"a{i:03d}", "coder" if i % 2 else "tester") for i in range(n_agents)]
        ws.config_path.write_text(render_config("bench", "sim", agents, threshold=8000))
        seed_project(ws.root)
        config = ws.load_config()
        board = TaskBoard(ws.tasks_dir)
        for name, _ in agents:
            for subject in SUBJECTS:
                task = board.create(subject, owner=name)
                send(ws, config, name, subject, type="task", task_id=task.id)
        model = TimedSim()
        rss0 = rss_kb()
        peak = [rss0]
        rt = Runtime(ws, config, model, MemorySink(), poll_s=0.2)
        cpu0, wall0 = time.process_time(), time.monotonic()
        rt.start()
        rt.wait(
            until_idle=True,
            idle_grace=0.5,
            timeout=1800,
            tick=lambda: peak.__setitem__(0, max(peak[0], rss_kb())),
        )
        wall = time.monotonic() - wall0 - 0.5  # minus the idle grace
        cpu = time.process_time() - cpu0
        rt.close()
        done = sum(t.status == "completed" for t in board.list())
        return {
            "agents": n_agents,
            "calls": model.calls,
            "calls_per_s": model.calls / wall,
            "overhead_ms": (cpu - model.cpu) / model.calls * 1000,
            "model_ms": model.cpu / model.calls * 1000,
            "mem_per_agent_kb": (peak[0] - rss0) / n_agents,
            "tasks": f"{done}/{len(board.list())}",
        }


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [3, 30, 100]
    print(
        f"{'agents':>6} {'calls':>6} {'calls/s':>8} {'overhead ms/call':>17} "
        f"{'sim ms/call':>12} {'overhead/sim':>13} {'KiB/agent':>10} {'tasks':>8}"
    )
    for n in sizes:
        r = run(n)
        print(
            f"{r['agents']:>6} {r['calls']:>6} {r['calls_per_s']:>8.1f} {r['overhead_ms']:>17.2f} "
            f"{r['model_ms']:>12.2f} {r['overhead_ms'] / r['model_ms']:>13.2f} "
            f"{r['mem_per_agent_kb']:>10.0f} {r['tasks']:>8}"
        )


if __name__ == "__main__":
    main()
